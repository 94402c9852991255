// Fuzzes the checkpoint metadata reader (<run>/ckpt-<step>.meta.pbtxt: --resume, eval, fine-tuning and
// the run directory's take-over rules read it) over arbitrary bytes. Only fastnn::Error is an
// acceptable failure; metadata that parses prints and reads back to an equal message, and the resume
// arithmetic on it (resume_replay_batches) neither crashes nor overflows into a negative position.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/check.h"
#include "trainer/checkpoint/checkpoint_manager.h"
#include "trainer/loop/data_parallel.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  fastnn::CheckpointMeta m;
  try {
    m = fastnn::checkpoint::parse_checkpoint_meta(text, "fuzz.meta.pbtxt");
  } catch (const fastnn::Error&) {
    return 0;
  }
  const std::string once = fastnn::checkpoint::checkpoint_meta_to_text(m);
  const fastnn::CheckpointMeta again = fastnn::checkpoint::parse_checkpoint_meta(once, "again.meta.pbtxt");
  if (again.SerializeAsString() != m.SerializeAsString()) std::abort();
  try {
    (void)fastnn::loop::resume_replay_batches(m, 2, 16, 100);
  } catch (const fastnn::Error&) {
  }
  return 0;
}
