// Resource settings are bounded against the machine (pipeline/resources.h, core/resources.h).
#include "pipeline/resources.h"

#include <gtest/gtest.h>

#include "core/check.h"

namespace fastnn::pipeline {
namespace {

MachineResources machine(unsigned cores, uint64_t gib) {
  MachineResources m;
  m.cores = cores;
  m.memory_bytes = gib << 30;
  return m;
}

std::string error_of(const PipelineResources& r, const MachineResources& m) {
  try {
    check_pipeline_resources(r, m);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(Resources, ThreadsBoundedByCores) {
  EXPECT_EQ(max_worker_threads(machine(2, 24)), 64);
  EXPECT_EQ(max_worker_threads(machine(32, 24)), 256);
  EXPECT_NO_THROW(check_thread_count(64, "--threads", machine(2, 24)));
  try {
    check_thread_count(200000, "--threads", machine(2, 24));
    FAIL();
  } catch (const ConfigError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("--threads 200000"), std::string::npos) << msg;
    EXPECT_NE(msg.find("64 threads"), std::string::npos) << msg;
    EXPECT_NE(msg.find("2 cores"), std::string::npos) << msg;
  }
  EXPECT_THROW(check_thread_count(-1, "--threads", machine(2, 24)), ConfigError);
}

TEST(Resources, BatchesAndShuffleBoundedByMemory) {
  const MachineResources m = machine(2, 24);
  PipelineResources r;
  r.batch_bytes = 256 * 224 * 224 * 3 * 4;  // 154 MB of float32 samples
  EXPECT_EQ(error_of(r, m), "");
  r.num_parallel_batches = 2000000000;
  EXPECT_NE(error_of(r, m).find("num_parallel_batches 2000000000 must be in 1..65536"), std::string::npos);
  r.num_parallel_batches = 100;  // 104 batches × 154 MB = 16 GB > 12 GB
  const std::string msg = error_of(r, m);
  EXPECT_NE(msg.find("more than half of this machine's 24 GiB"), std::string::npos) << msg;
  r.num_parallel_batches = 2;
  r.prefetch = -1;
  EXPECT_NE(error_of(r, m).find("prefetch_buffer_size -1"), std::string::npos);
  r.prefetch = 2;
  r.shuffle_buffer = 100000000;
  r.record_bytes = 200000;  // 20 TB of records
  EXPECT_NE(error_of(r, m).find("shuffle_buffer_size 100000000"), std::string::npos);
  r.record_bytes = 0;  // unknown size: only the absolute cap applies
  EXPECT_EQ(error_of(r, m), "");
  r.shuffle_buffer = uint64_t{1} << 40;
  EXPECT_NE(error_of(r, m).find("shuffle_buffer_size"), std::string::npos);
}

}  // namespace
}  // namespace fastnn::pipeline
