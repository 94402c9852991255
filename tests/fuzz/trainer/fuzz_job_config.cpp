// Fuzzes the job-config text parser (`fastnn train --config FILE`, and the config inside every
// checkpoint's metadata) over arbitrary bytes. Only fastnn::Error (ConfigError, FormatError) is an
// acceptable failure, from parsing or validation. A config that parses must print and read back to an
// equal message (job_config_to_text's contract).
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/check.h"
#include "trainer/config/job_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  fastnn::JobConfig c;
  try {
    c = fastnn::parse_job_config_text(text, "fuzz.pbtxt");
  } catch (const fastnn::Error&) {
    return 0;
  }
  try {
    fastnn::validate_job_config(c);
    (void)fastnn::ignored_field_notices(c);
  } catch (const fastnn::Error&) {
    // invalid values are refused by validation, which is enough; the round trip below still holds
  }
  const std::string once = fastnn::job_config_to_text(c);
  const fastnn::JobConfig again = fastnn::parse_job_config_text(once, "again.pbtxt");
  if (again.SerializeAsString() != c.SerializeAsString()) std::abort();
  return 0;
}
