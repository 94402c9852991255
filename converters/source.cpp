#include "converters/source.h"

#include "core/check.h"

namespace fastnn::converters {

std::string Source::describe(const DatasetIndex& index, const SampleRef& s) const { return describe_record(index, s); }

std::string describe_record(const DatasetIndex& index, const SampleRef& s) {
  const std::string& f = s.file < index.files.size() ? index.files[s.file] : std::string("?");
  return str(f, "#", s.offset);
}

}  // namespace fastnn::converters
