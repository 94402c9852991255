#include "trainer/cuda/runtime.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <vector>

#include "core/check.h"
#include "trainer/cuda/cublas_library.h"

namespace fastnn::cuda {

namespace {

constexpr int kMaxDevices = 64;

struct DeviceState {
  bool initialized = false;
  cudaStream_t default_stream = nullptr;
};

std::mutex g_mu;
std::array<DeviceState, kMaxDevices> g_devices;
int g_primary = -1;  // the device of the last init_backend: the default for threads that never called it
Policy g_policy;

thread_local int tl_device = -1;
thread_local cudaStream_t tl_stream = nullptr;

// Per-thread handles, indexed by device. Deliberately never destroyed: destroying cuDNN/cuBLAS
// handles from thread-exit or static destructors races the CUDA runtime's own teardown.
struct ThreadHandles {
  std::array<cudnnHandle_t, kMaxDevices> cudnn{};
  std::array<cublasHandle_t, kMaxDevices> cublas{};
  std::array<void*, kMaxDevices> cublas_workspace{};  // the handle's own (cublasSetWorkspace)
};
// cuBLAS's workspace of its own, set after every cublasSetStream (which resets it to cuBLAS's pool):
// with it, cuBLAS allocates nothing inside a stream capture (a CUDA graph of the training step). 32 MiB:
// what cuBLAS documents for Hopper.
constexpr size_t kCublasWorkspaceBytes = size_t{32} << 20;
thread_local ThreadHandles tl_handles;

// The calling thread's device; a thread that never called init_backend adopts the primary device.
int thread_device() {
  if (tl_device >= 0) return tl_device;
  int primary;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    primary = g_primary;
  }
  FASTNN_CHECK(primary >= 0, "CUDA backend used before cuda::init_backend()");
  CUDA_CHECK(cudaSetDevice(primary));
  tl_device = primary;
  return primary;
}

class DeviceStorage final : public Storage {
 public:
  DeviceStorage(size_t bytes, int device, cudaStream_t stream) : device_(device), stream_(stream) {
    bytes_ = bytes;
    if (bytes) CUDA_CHECK(cudaMallocAsync(&data_, bytes, stream));
  }
  ~DeviceStorage() override {
    if (!data_) return;
    // Errors are ignored: a destructor must not throw, and at process exit the context may be gone.
    int prev = -1;
    cudaGetDevice(&prev);
    if (prev != device_) cudaSetDevice(device_);
    cudaFreeAsync(data_, stream_);
    if (prev != device_ && prev >= 0) cudaSetDevice(prev);
    cudaGetLastError();
  }
  Device device() const override { return Device::kCuda; }

 private:
  int device_;
  cudaStream_t stream_;
};

class PinnedStorage final : public Storage {
 public:
  explicit PinnedStorage(size_t bytes) {
    bytes_ = bytes;
    // 64 bytes at least so that data() is never null, like CPU storage.
    CUDA_CHECK(cudaHostAlloc(&data_, bytes ? bytes : 64, cudaHostAllocPortable));
  }
  ~PinnedStorage() override {
    cudaFreeHost(data_);
    cudaGetLastError();
  }
  Device device() const override { return Device::kCpu; }
};

std::shared_ptr<Storage> device_allocator(size_t bytes) { return allocate_device_storage(bytes); }

}  // namespace

bool device_available() noexcept { return device_count() > 0; }

int device_count() noexcept {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear the error so later calls do not report it
    return 0;
  }
  return n;
}

void init_backend(int device) {
  const int n = device_count();
  FASTNN_CHECK(n > 0, "cuda::init_backend: no CUDA device or driver");
  FASTNN_CHECK(device >= 0 && device < n && device < kMaxDevices, "cuda::init_backend: device ", device,
               " out of range (", n, " devices)");
  CUDA_CHECK(cudaSetDevice(device));
  tl_device = device;
  std::lock_guard<std::mutex> lock(g_mu);
  DeviceState& st = g_devices[static_cast<size_t>(device)];
  if (!st.initialized) {
    CUDA_CHECK(cudaFree(nullptr));  // creates the primary context now, not inside the first kernel
    cudaMemPool_t pool;
    CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
    // Keep freed blocks in the pool: without this every stream synchronisation returns them to the OS.
    uint64_t threshold = std::numeric_limits<uint64_t>::max();
    CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
    CUDA_CHECK(cudaStreamCreateWithFlags(&st.default_stream, cudaStreamNonBlocking));
    if (const char* e = std::getenv("FASTNN_ALLOW_TF32")) g_policy.allow_tf32 = std::strcmp(e, "0") != 0;
    st.initialized = true;
  }
  g_primary = device;
  set_storage_allocator(Device::kCuda, &device_allocator);
}

bool backend_initialized() noexcept {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_primary >= 0;
}

int current_device() { return thread_device(); }

cudaStream_t current_stream() {
  const int d = thread_device();
  if (tl_stream) return tl_stream;
  std::lock_guard<std::mutex> lock(g_mu);
  const DeviceState& st = g_devices[static_cast<size_t>(d)];
  FASTNN_CHECK(st.initialized, "CUDA device ", d, " used before cuda::init_backend(", d, ")");
  return st.default_stream;
}

void set_current_stream(cudaStream_t s) { tl_stream = s; }

cudaStream_t stream_or_current(void* s) { return s ? static_cast<cudaStream_t>(s) : current_stream(); }

void synchronize() { CUDA_CHECK(cudaStreamSynchronize(current_stream())); }

cudnnHandle_t cudnn_handle(cudaStream_t s) {
  const size_t d = static_cast<size_t>(thread_device());
  cudnnHandle_t& h = tl_handles.cudnn[d];
  if (!h) CUDNN_CHECK(cudnnCreate(&h));
  CUDNN_CHECK(cudnnSetStream(h, s));
  return h;
}

cublasHandle_t cublas_handle(cudaStream_t s) {
  const size_t d = static_cast<size_t>(thread_device());
  cublasHandle_t& h = tl_handles.cublas[d];
  if (!h) {
    CUBLAS_CHECK(cublas().create(&h));
    // The compute type of each call (ops/fully_connected_cuda.cpp) decides TF32; default math keeps
    // the handle from overriding it.
    CUBLAS_CHECK(cublas().set_math_mode(h, CUBLAS_DEFAULT_MATH));
    CUDA_CHECK(cudaMalloc(&tl_handles.cublas_workspace[d], kCublasWorkspaceBytes));
  }
  CUBLAS_CHECK(cublas().set_stream(h, s));
  CUBLAS_CHECK(cublas().set_workspace(h, tl_handles.cublas_workspace[d], kCublasWorkspaceBytes));
  return h;
}

Policy policy() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_policy;
}

void set_policy(const Policy& p) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_policy = p;
}

void set_allow_tf32(bool allow) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_policy.allow_tf32 = allow;
}

std::shared_ptr<Storage> allocate_device_storage(size_t bytes) {
  const int d = thread_device();
  return std::make_shared<DeviceStorage>(bytes, d, current_stream());
}

std::shared_ptr<Storage> allocate_pinned_storage(size_t bytes) { return std::make_shared<PinnedStorage>(bytes); }

Tensor pinned_empty(Shape shape, DType dtype, Layout layout) {
  const int64_t n = shape_numel(shape);
  return Tensor(std::move(shape), dtype, allocate_pinned_storage(static_cast<size_t>(n) * dtype_size(dtype)), layout);
}

Tensor to_device(const Tensor& host) {
  FASTNN_CHECK(host.defined() && host.device() == Device::kCpu, "to_device needs a CPU tensor, got ", host.describe());
  Tensor out = Tensor::empty(host.shape(), host.dtype(), Device::kCuda, host.layout());
  const cudaStream_t s = current_stream();
  if (host.nbytes()) CUDA_CHECK(cudaMemcpyAsync(out.raw(), host.raw(), host.nbytes(), cudaMemcpyHostToDevice, s));
  CUDA_CHECK(cudaStreamSynchronize(s));
  return out;
}

Tensor to_host(const Tensor& device) {
  FASTNN_CHECK(device.defined() && device.device() == Device::kCuda, "to_host needs a CUDA tensor, got ",
               device.describe());
  Tensor out = Tensor::empty(device.shape(), device.dtype(), Device::kCpu, device.layout());
  const cudaStream_t s = current_stream();
  if (device.nbytes())
    CUDA_CHECK(cudaMemcpyAsync(out.raw(), device.raw(), device.nbytes(), cudaMemcpyDeviceToHost, s));
  CUDA_CHECK(cudaStreamSynchronize(s));
  return out;
}

void copy_async(Tensor& dst, const Tensor& src, cudaStream_t s) {
  FASTNN_CHECK(dst.defined() && src.defined() && dst.nbytes() == src.nbytes(), "copy_async: ", dst.describe(),
               " <- ", src.describe());
  if (src.nbytes())
    CUDA_CHECK(cudaMemcpyAsync(dst.raw(), src.raw(), src.nbytes(), cudaMemcpyDefault, s ? s : current_stream()));
}

void fill_bytes(Tensor& device, uint8_t byte, cudaStream_t s) {
  FASTNN_CHECK(device.defined() && device.device() == Device::kCuda, "fill_bytes on ", device.describe());
  if (device.nbytes()) CUDA_CHECK(cudaMemsetAsync(device.raw(), byte, device.nbytes(), s ? s : current_stream()));
}

Tensor zeroed_bytes(size_t bytes, cudaStream_t s) {
  if (!bytes) return Tensor();
  Tensor t = Tensor::empty({static_cast<int64_t>(bytes)}, DType::kU8, Device::kCuda);
  fill_bytes(t, 0, s);
  return t;
}

Tensor Workspace::get(size_t bytes) {
  if (!storage_ || bytes > capacity_) {
    // Grow by at least half again so that a slowly rising demand does not reallocate every call.
    size_t cap = std::max<size_t>({bytes, capacity_ + capacity_ / 2, 256});
    cap = (cap + 255) / 256 * 256;
    storage_ = allocate_device_storage(cap);
    capacity_ = cap;
  }
  return Tensor({static_cast<int64_t>(bytes)}, DType::kU8, storage_);
}

namespace {

struct DeferredLabelCheck {
  const char* op;
  int64_t classes;
  int* host;           // pinned
  bool owned = false;  // the slot belongs to a LabelCheckCapture: not returned to the free list
};
struct LabelCheckQueue {
  std::vector<DeferredLabelCheck> pending;  // in queue order; pending[0] is check number `first`
  uint64_t first = 0;
  std::vector<int*> free_slots;  // pinned ints for reuse
  LabelCheckCapture* recording = nullptr;  // a capture in progress on this thread
  ~LabelCheckQueue() {
    for (const DeferredLabelCheck& c : pending)
      if (!c.owned) cudaFreeHost(c.host);
    for (int* p : free_slots) cudaFreeHost(p);
  }
};
thread_local LabelCheckQueue tl_label_checks;

}  // namespace

void defer_label_check(const char* op, const int* flag, int64_t classes, cudaStream_t s) {
  LabelCheckQueue& q = tl_label_checks;
  int* slot = nullptr;
  if (q.recording) {  // a captured graph: a slot of its own, copied into on every replay
    // cudaHostAlloc is not allowed on a thread capturing in thread-local mode (it would invalidate the
    // capture): relaxed mode for this one call, as PyTorch does for allocations during capture.
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
    const cudaError_t made = cudaHostAlloc(reinterpret_cast<void**>(&slot), sizeof(int), cudaHostAllocPortable);
    CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
    CUDA_CHECK(made);
    q.recording->record({op, classes, slot});
    CUDA_CHECK(cudaMemcpyAsync(slot, flag, sizeof(int), cudaMemcpyDeviceToHost, s));
    return;
  }
  if (!q.free_slots.empty()) {
    slot = q.free_slots.back();
    q.free_slots.pop_back();
  } else {
    CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&slot), sizeof(int), cudaHostAllocPortable));
  }
  q.pending.push_back({op, classes, slot});
  CUDA_CHECK(cudaMemcpyAsync(slot, flag, sizeof(int), cudaMemcpyDeviceToHost, s));
}

void raise_label_errors() { raise_label_errors_through(label_checks_queued()); }

uint64_t label_checks_queued() {
  const LabelCheckQueue& q = tl_label_checks;
  return q.first + q.pending.size();
}

void raise_label_errors_through(uint64_t count) {
  LabelCheckQueue& q = tl_label_checks;
  const size_t n = static_cast<size_t>(std::min<uint64_t>(q.pending.size(), count > q.first ? count - q.first : 0));
  const std::vector<DeferredLabelCheck> checks(q.pending.begin(), q.pending.begin() + static_cast<std::ptrdiff_t>(n));
  q.pending.erase(q.pending.begin(), q.pending.begin() + static_cast<std::ptrdiff_t>(n));
  q.first += n;
  const DeferredLabelCheck* bad = nullptr;
  for (const DeferredLabelCheck& c : checks) {
    if (!bad && *c.host != 0) bad = &c;
    if (!c.owned) q.free_slots.push_back(c.host);
  }
  if (bad)
    throw Error(str(bad->op, ": the label of sample ", *bad->host - 1, " is outside [0, ", bad->classes,
                    ") (CUDA kernel)"));
}

void forget_label_checks() {
  LabelCheckQueue& q = tl_label_checks;
  for (const DeferredLabelCheck& c : q.pending)
    if (!c.owned) q.free_slots.push_back(c.host);
  q.first += q.pending.size();
  q.pending.clear();
}

LabelCheckCapture::LabelCheckCapture() {
  LabelCheckQueue& q = tl_label_checks;
  FASTNN_CHECK(!q.recording, "cuda: a label check capture is already recording on this thread");
  q.recording = this;
}

LabelCheckCapture::~LabelCheckCapture() {
  stop();
  for (const Check& c : checks_) cudaFreeHost(c.host);
}

void LabelCheckCapture::stop() {
  if (!recording_) return;
  recording_ = false;
  tl_label_checks.recording = nullptr;
}

void LabelCheckCapture::requeue() const {
  LabelCheckQueue& q = tl_label_checks;
  for (const Check& c : checks_) q.pending.push_back({c.op, c.classes, c.host, /*owned=*/true});
}

}  // namespace fastnn::cuda
