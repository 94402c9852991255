// Fuzz target: arbitrary bytes as a tf.Example record. The parser (with fastnn's standard keys plus
// two others), for_each_feature, the FeatureView accessors and the builder must agree with
// libprotobuf's ParseFromArray, the oracle (tests/fuzz/example_oracle.h); any disagreement aborts.
#include <google/protobuf/stubs/logging.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/example.h"
#include "tests/fuzz/example_oracle.h"

namespace {

const fastnn::ExampleParser& parser() {
  static const fastnn::ExampleParser p({fastnn::keys::kImageEncoded, fastnn::keys::kImageFormat, fastnn::keys::kLabel,
                                        fastnn::keys::kCoarseLabel, fastnn::keys::kHeight, fastnn::keys::kWidth,
                                        fastnn::keys::kChannels, "", "a"});
  return p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // libprotobuf logs every invalid UTF-8 key it rejects; that is expected here.
  static bool quiet = (google::protobuf::SetLogHandler(nullptr), true);
  (void)quiet;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  std::string diff = fastnn::oracle::check_against_libprotobuf(bytes, parser());
  if (!diff.empty()) {
    std::fprintf(stderr, "fuzz_example_parser: disagreement with libprotobuf: %s\n", diff.c_str());
    std::abort();
  }
  return 0;
}
