// The CUDA runtime layer: device selection, streams, cuDNN/cuBLAS handles, stream-ordered device
// memory, pinned host memory, host<->device copies, a growing workspace and the numeric policy.
//
// Start-up is explicit (no static initialisers): a process calls init_backend(device) once per
// thread that uses the GPU (usually with its local rank). It selects the device for the calling
// thread, keeps freed memory cached in the device's default cudaMallocAsync pool, creates the
// device's default stream and installs the kCuda Storage allocator, so Tensor::empty(..., kCuda) works.
// device_available() never throws: it is how tests decide to GTEST_SKIP on machines without a GPU.
//
// Streams: every call below that takes no stream uses current_stream(): the thread's stream if one
// was set with set_current_stream(), else the device's default stream (a non-blocking stream created
// by init_backend and shared by all threads). Device storage is allocated with cudaMallocAsync on the
// current stream and freed with cudaFreeAsync on that same stream when the last Tensor handle drops;
// code that uses a tensor on another stream must order that stream before the free (an event), and
// a stream given to set_current_stream() must outlive every tensor allocated while it was current.
//
// Handles: one cuDNN and one cuBLAS handle per (device, thread), created on first use and bound to
// the stream passed in. Never share them across threads.
//
// Numeric policy (process-wide, read when a kernel object is created): f32 convolutions and GEMMs
// run without TF32 (cuDNN CUDNN_FMA_MATH, cuBLAS CUBLAS_COMPUTE_32F), so they match the CPU
// oracle to ~1e-6; set_allow_tf32(true) (or FASTNN_ALLOW_TF32=1 in the environment at init) lets
// them use TF32 tensor cores (~1e-3 relative error). f16/bf16 always use tensor cores with fp32
// accumulation.
//
// Errors: failed CUDA/cuDNN/cuBLAS calls throw fastnn::Error with the call, file and line
// (core/check.h). Calls other than device_available() throw Error if init_backend was not called.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "trainer/tensor.h"

namespace fastnn::cuda {

// True if a CUDA driver and at least one device are present. Never throws.
bool device_available() noexcept;
// Number of devices (0 without a driver). Never throws.
int device_count() noexcept;

// Selects `device` for the calling thread and sets the backend up (idempotent per device).
void init_backend(int device);
bool backend_initialized() noexcept;
int current_device();  // the calling thread's device (init_backend must have run)

cudaStream_t current_stream();
// Makes `s` the calling thread's current stream (nullptr: back to the device's default stream).
void set_current_stream(cudaStream_t s);
// `s` itself, or current_stream() when s is null (how op kernels read ForwardArgs::stream).
cudaStream_t stream_or_current(void* s);
void synchronize();  // the current stream

// The calling thread's handles for the current device, bound to `s`.
cudnnHandle_t cudnn_handle(cudaStream_t s);
cublasHandle_t cublas_handle(cudaStream_t s);

// ---- numeric and algorithm policy --------------------------------------------------------------
enum class ConvAlgoSearch : uint8_t { kHeuristic, kExhaustive };
struct Policy {
  bool allow_tf32 = false;        // f32 convolution / GEMM on TF32 tensor cores
  ConvAlgoSearch conv_search = ConvAlgoSearch::kHeuristic;  // cudnnGet*_v7 or cudnnFind* (timed)
  bool deterministic = false;     // only deterministic cuDNN algorithms (bitwise-repeatable grads)
  bool check_labels = true;       // softmax_xent / top_k report a label outside [0, classes)
  // false: each such kernel synchronises its stream to report at once (op tests, one-off calls); true:
  // the report is copied to pinned memory on the stream and raised by raise_label_errors() after the
  // caller's own synchronisation (the training step's one read-back): no sync per kernel call. The CUDA
  // step runner turns it on (process-wide) and raises after every train / evaluate.
  bool defer_label_checks = false;
  size_t max_conv_workspace = size_t{1} << 30;  // bytes one convolution may ask for
  // NHWC f16/bf16 convolutions with input channels not a multiple of 8 run on zero-padded channels
  // (ops::conv_channels_for_cudnn).
  bool pad_conv_channels = false;
  // depthwise_conv2d as cuDNN's grouped convolution (conv2d's kernel, groups = C) instead of the direct
  // kernels (the depthwise_conv config field).
  bool depthwise_cudnn = false;
  // conv2d's passes through cuDNN's graph API (ops/conv2d_graph_cuda.h) instead of its legacy calls (the
  // conv_api config field).
  bool conv_graph_api = false;
};
Policy policy();
void set_policy(const Policy& p);
void set_allow_tf32(bool allow);

// ---- deferred label checks (Policy::defer_label_checks) ------------------------------------------
// Queues a kernel's bad-label flag (device int: 0, or the first bad row + 1) for raise_label_errors():
// an asynchronous copy on `s` into pinned memory. Per thread.
void defer_label_check(const char* op, const int* flag, int64_t classes, cudaStream_t s);
// Call after synchronising the streams the queued copies were made on: throws Error naming the op, the
// sample and the class range for the first flagged check; always empties the queue.
void raise_label_errors();
// The checks queued so far on this thread (a running count): a step that is read one step late (the
// runner's queue_train) notes the count after queuing its kernels and later raises only its own checks
// with raise_label_errors_through(count) once its results have arrived, leaving the next step's queued.
uint64_t label_checks_queued();
void raise_label_errors_through(uint64_t count);
// Drops every queued check unread (a runner going away with a step still queued).
void forget_label_checks();

// Label checks inside a step captured into a CUDA graph. While one is recording on this thread,
// defer_label_check() gives each check a pinned slot of its own (owned by this object) and records the
// check instead of queuing it: the captured copy into that slot then runs on every replay. After each
// replay, requeue() queues the recorded checks (no copy: the graph made it), so they are raised with
// that replay's results like any other. One graph's replays must not overlap their reads: the runner
// keeps one captured graph per results slot (the slot is read before the graph is replayed again).
class LabelCheckCapture {
 public:
  LabelCheckCapture();   // starts recording on this thread (one recording at a time)
  ~LabelCheckCapture();  // stops recording; frees the slots
  LabelCheckCapture(const LabelCheckCapture&) = delete;
  LabelCheckCapture& operator=(const LabelCheckCapture&) = delete;
  void stop();           // stops recording (the captured work is complete)
  void requeue() const;
  size_t size() const { return checks_.size(); }

  struct Check {
    const char* op;
    int64_t classes;
    int* host;  // pinned, owned
  };
  void record(const Check& c) { checks_.push_back(c); }

 private:
  std::vector<Check> checks_;
  bool recording_ = true;
};

// ---- memory ------------------------------------------------------------------------------------
// Device memory from the current device's cudaMallocAsync pool, on the current stream.
std::shared_ptr<Storage> allocate_device_storage(size_t bytes);
// Page-locked host memory (cudaHostAlloc, portable); its Storage reports Device::kCpu, so CPU code
// reads it like any tensor while copies from it run asynchronously at full speed.
std::shared_ptr<Storage> allocate_pinned_storage(size_t bytes);
Tensor pinned_empty(Shape shape, DType dtype = DType::kF32, Layout layout = Layout::kNone);

// Synchronous copies (they wait for the current stream): for tests, checkpoints and set-up; the
// training step feeds batches through pinned buffers and copy_async instead.
Tensor to_device(const Tensor& host);
Tensor to_host(const Tensor& device);
// dst and src of equal byte size, any devices; ordered on `s` (nullptr: current stream), no wait.
void copy_async(Tensor& dst, const Tensor& src, cudaStream_t s = nullptr);
// Device tensor filled with the bytes of `byte` (cudaMemsetAsync on the current stream).
void fill_bytes(Tensor& device, uint8_t byte, cudaStream_t s = nullptr);
// `bytes` of zeroed device memory (u8, stream-ordered on `s`, nullptr: current stream), e.g. scratch for a
// trial run; undefined (raw() null) for 0 bytes.
Tensor zeroed_bytes(size_t bytes, cudaStream_t s = nullptr);

// A scratch buffer that grows to the largest size asked for and is never shrunk; what the layer
// graph hands to kernels as their workspace. get() returns a u8 tensor of at least `bytes` bytes
// sharing the buffer; a tensor handed out earlier stays valid (it keeps the old buffer alive) but
// the next get() may return other memory. One per stream (contents are stream-ordered).
class Workspace {
 public:
  Tensor get(size_t bytes);
  size_t capacity() const { return capacity_; }

 private:
  std::shared_ptr<Storage> storage_;
  size_t capacity_ = 0;
};

}  // namespace fastnn::cuda
