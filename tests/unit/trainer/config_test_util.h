// Helpers of the trainer tests that build job configs from flags and read the errors they raise.
#pragma once

#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "trainer/config/job_config.h"

namespace fastnn {

// The config `fastnn train FLAGS...` would run (defaults and validation included).
inline JobConfig config_of(std::vector<std::string> flags) { return load_job_config("", flags); }

// What `fn` threw (any exception's message); "" when it returned.
inline std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace fastnn
