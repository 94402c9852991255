#include "trainer/runner/input_stages_cuda.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "core/check.h"
#include "trainer/cuda/runtime.h"
#include "trainer/cuda/storage_types.h"
#include "trainer/runner/stage_rotation.h"
#include "trainer/runner/step_kernels.h"

namespace fastnn::runner {
namespace {

// The pipeline's batch buffers in page-locked memory (input_format.h): copies start from them directly.
class PinnedBatchAllocator final : public pipeline::BatchAllocator {
 public:
  void* allocate(size_t bytes) override {
    void* p = nullptr;
    CUDA_CHECK(cudaHostAlloc(&p, bytes ? bytes : 64, cudaHostAllocPortable));
    return p;
  }
  void deallocate(void* p, size_t) override { cudaFreeHost(p); }
  const char* name() const override { return "cuda-pinned"; }
};

bool is_pinned(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();  // plain host memory on older drivers: not an error for us
    return false;
  }
  return a.type == cudaMemoryTypeHost;
}

}  // namespace

InputStages::InputStages(DType compute, const InputNormalization& norm, Layout graph_layout)
    : compute_(compute), graph_nhwc_(graph_layout == Layout::kNHWC), norm_(norm),
      allocator_(std::make_shared<PinnedBatchAllocator>()) {
  CUDA_CHECK(cudaStreamCreateWithFlags(&copy_stream_, cudaStreamNonBlocking));
  for (Stage& s : stages_) {
    CUDA_CHECK(cudaEventCreateWithFlags(&s.copied, cudaEventDisableTiming));
    // Waited on by the loop thread before it refills the stage: blocking, as the runner's results events.
    CUDA_CHECK(cudaEventCreateWithFlags(&s.consumed, cudaEventDisableTiming | cudaEventBlockingSync));
  }
}

InputStages::~InputStages() {
  if (copy_stream_) cudaStreamSynchronize(copy_stream_);
  for (Stage& s : stages_) {
    if (s.copied) cudaEventDestroy(s.copied);
    if (s.consumed) cudaEventDestroy(s.consumed);
  }
  if (copy_stream_) cudaStreamDestroy(copy_stream_);
}

void InputStages::prefetch(const Tensor& images, const Tensor& labels) {
  if (!images.defined() || images.device() == Device::kCuda) return;
  Stage& s = free_stage();
  copy_to_stage(s, images, labels);
  s.pending_images = images.raw();
  s.pending_labels = labels.raw();
}

// Device batch for the step: device tensors pass through; a host batch (input_format.h) is copied on
// copy_stream_ — straight from the pipeline's buffer when it is pinned, else through this stage's
// pinned buffer — and the compute stream waits on that batch's event only, then converts it to the
// compute dtype in the graph's layout (uint8: normalised with the preset's mean and 1/std). A batch prefetch()
// already copied is only waited for.
std::pair<Tensor, Tensor> InputStages::place(const Tensor& images, const Tensor& labels) {
  if (images.device() == Device::kCuda && labels.device() == Device::kCuda) return {images, labels};
  Stage* s = nullptr;
  for (Stage& st : stages_)
    if (st.pending_images == images.raw() && st.pending_labels == labels.raw()) s = &st;
  if (s) {
    s->pending_images = s->pending_labels = nullptr;
  } else {
    s = &free_stage();
    copy_to_stage(*s, images, labels);
  }
  CUDA_CHECK(cudaStreamWaitEvent(cuda::current_stream(), s->copied, 0));
  s->placed = placements_++;
  const bool nhwc = s->dev_raw.layout() == Layout::kNHWC;
  const Shape& sh = s->dev_raw.shape();
  const Shape nchw = nhwc ? Shape{sh[0], sh[3], sh[1], sh[2]} : sh;
  if (s->dev_images.raw() != s->dev_raw.raw()) convert_input(s->dev_raw, nhwc, nchw, s->dev_images);
  current_stage_ = s;
  return {s->dev_images, s->dev_labels};
}

// The next stage to copy into (stage_rotation.h): not holding a prefetched batch, and of those the one
// placed longest ago, whose step has finished by now.
InputStages::Stage& InputStages::free_stage() {
  std::array<StageUse, kStages> use;
  for (size_t i = 0; i < kStages; ++i) use[i] = {stages_[i].pending_images != nullptr, stages_[i].placed};
  Stage& s = stages_[stage_to_reuse(use)];
  s.pending_images = s.pending_labels = nullptr;
  return s;
}

// Starts the host batch's copy into stage s on copy_stream_ (recorded in s.copied).
void InputStages::copy_to_stage(Stage& s, const Tensor& images, const Tensor& labels) {
  const DType in = images.dtype();
  FASTNN_CHECK(images.device() == Device::kCpu && labels.device() == Device::kCpu && images.shape().size() == 4 &&
                   (in == DType::kU8 || in == DType::kF16 || in == DType::kF32),
               "cuda step: a host batch must be uint8, f16 or f32 images [N, C, H, W] or [N, H, W, C] and labels on "
               "the host, got ", images.describe(), ", ", labels.describe());
  const bool nhwc = images.layout() == Layout::kNHWC;
  const Shape& sh = images.shape();
  const Shape nchw = nhwc ? Shape{sh[0], sh[3], sh[1], sh[2]} : sh;
  if (s.used) CUDA_CHECK(cudaEventSynchronize(s.consumed));  // the step that read this stage is done
  s.host_images = Tensor();  // so is its copy: the pipeline may have that buffer back
  bool fresh = false;
  if (!s.dev_raw.defined() || s.dev_raw.shape() != sh || s.dev_raw.dtype() != in ||
      s.dev_raw.layout() != images.layout()) {
    fresh = true;
    s.dev_raw = Tensor::empty(sh, in, Device::kCuda, images.layout());
    // The graph's input: the batch itself when it already is in the compute dtype and the graph's layout.
    const Layout graph = graph_nhwc_ ? Layout::kNHWC : Layout::kNCHW;
    const Shape graph_shape = graph_nhwc_ ? Shape{nchw[0], nchw[2], nchw[3], nchw[1]} : nchw;
    s.dev_images = (in == compute_ && nhwc == graph_nhwc_) ? s.dev_raw
                                                           : Tensor::empty(graph_shape, compute_, Device::kCuda, graph);
  }
  const bool direct = is_pinned(images.raw());
  if (!direct && (!s.pinned_images.defined() || s.pinned_images.shape() != sh || s.pinned_images.dtype() != in)) {
    fresh = true;
    s.pinned_images = cuda::pinned_empty(sh, in, images.layout());
  }
  if (!s.pinned_labels.defined() || s.pinned_labels.shape() != labels.shape() || s.pinned_labels.dtype() != labels.dtype()) {
    fresh = true;
    s.pinned_labels = cuda::pinned_empty(labels.shape(), labels.dtype());
    s.dev_labels = Tensor::empty(labels.shape(), labels.dtype(), Device::kCuda);
  }
  if (fresh) cuda::synchronize();  // new buffers are stream-ordered on the compute stream; the copy stream uses them
  if (direct) {
    s.host_images = images;
  } else {
    std::memcpy(s.pinned_images.raw(), images.raw(), images.nbytes());
  }
  std::memcpy(s.pinned_labels.raw(), labels.raw(), labels.nbytes());
  cuda::copy_async(s.dev_raw, direct ? images : s.pinned_images, copy_stream_);
  cuda::copy_async(s.dev_labels, s.pinned_labels, copy_stream_);
  CUDA_CHECK(cudaEventRecord(s.copied, copy_stream_));
  s.used = true;
}

void InputStages::convert_input(const Tensor& raw, bool nhwc, const Shape& nchw, Tensor& out) {
  // The preset's mean and 1/std are given for at most 4 channels (input_format.h), as on the CPU.
  FASTNN_CHECK(raw.dtype() != DType::kU8 || nchw[1] <= 4, "cuda step: uint8 batches have at most 4 channels, got ",
               nchw[1]);
  cuda_step::InputNorm norm;
  std::copy(norm_.mean, norm_.mean + 4, norm.mean);
  std::copy(norm_.inv_std, norm_.inv_std + 4, norm.inv_std);
  cuda::with_storage_type(compute_, "cuda step", [&](auto t) {
    using T = decltype(t);
    T* y = static_cast<T*>(out.raw());
    cudaStream_t st = cuda::current_stream();
    switch (raw.dtype()) {
      case DType::kU8:
        return cuda_step::input_convert<uint8_t, T>(nchw[0], nchw[1], nchw[2], nchw[3],
                                                    static_cast<const uint8_t*>(raw.raw()), nhwc, graph_nhwc_, norm,
                                                    y, st);
      case DType::kF16:
        return cuda_step::input_convert<__half, T>(nchw[0], nchw[1], nchw[2], nchw[3],
                                                   static_cast<const __half*>(raw.raw()), nhwc, graph_nhwc_, norm, y,
                                                   st);
      default:
        return cuda_step::input_convert<float, T>(nchw[0], nchw[1], nchw[2], nchw[3],
                                                  static_cast<const float*>(raw.raw()), nhwc, graph_nhwc_, norm, y,
                                                  st);
    }
  });
}

void InputStages::release() {
  if (current_stage_) CUDA_CHECK(cudaEventRecord(current_stage_->consumed, cuda::current_stream()));
  current_stage_ = nullptr;
}

}  // namespace fastnn::runner
