// Named parts of one kernel call, for the step profile (bench/step_profile.h): a convolution's forward,
// filter-gradient and data-gradient passes, so `fastnn bench train --profile` can say which of them is
// slow, beside PyTorch's kernels split the same way (scripts/peers/torch_gpu_train_bench.py).
//
//   { const PartMark part("conv2d dgrad");  ...the pass's calls... }   // a part: construction to end of scope
//
// The listener is the calling thread's; with none installed (every step that is not profiled) a mark
// costs one thread-local load. Parts do not nest.
#pragma once

namespace fastnn::ops {

class PartListener {
 public:
  virtual void part_begin(const char* name) = 0;
  virtual void part_end() = 0;

 protected:
  ~PartListener() = default;
};

inline thread_local PartListener* tl_part_listener = nullptr;

// The calling thread's listener (null: none); returns the one it replaces.
inline PartListener* set_part_listener(PartListener* listener) {
  PartListener* before = tl_part_listener;
  tl_part_listener = listener;
  return before;
}

class PartMark {
 public:
  explicit PartMark(const char* name) : listener_(tl_part_listener) {
    if (listener_) listener_->part_begin(name);
  }
  ~PartMark() {
    if (listener_) listener_->part_end();
  }
  PartMark(const PartMark&) = delete;
  PartMark& operator=(const PartMark&) = delete;

 private:
  PartListener* listener_;
};

}  // namespace fastnn::ops
