#include "trainer/tensor.h"

#include <array>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <mutex>

namespace fastnn {

const char* device_name(Device d) { return d == Device::kCpu ? "cpu" : "cuda"; }

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  return out + "]";
}

int64_t shape_numel(const Shape& s) {
  constexpr int64_t kMax = int64_t{1} << 48;
  int64_t n = 1;
  for (int64_t d : s) {
    FASTNN_CHECK(d >= 0, "negative dimension in shape ", shape_str(s));
    FASTNN_CHECK(d == 0 || n <= kMax / d, "shape ", shape_str(s), " has too many elements");
    n *= d;
  }
  return n;
}

// ---- storage ----------------------------------------------------------------------------------

namespace {

class CpuStorage final : public Storage {
 public:
  explicit CpuStorage(size_t bytes) {
    bytes_ = bytes;
    // aligned_alloc needs a size that is a multiple of the alignment; 0 bytes still gets a pointer.
    const size_t padded = (bytes + 63) / 64 * 64 + 64;
    data_ = std::aligned_alloc(64, padded);
    if (!data_) throw Error(str("out of host memory allocating ", bytes, " bytes"));
  }
  ~CpuStorage() override { std::free(data_); }
  Device device() const override { return Device::kCpu; }
};

std::mutex g_alloc_mu;
std::array<StorageAllocator, 2> g_allocators = {&allocate_cpu_storage, nullptr};

}  // namespace

std::shared_ptr<Storage> allocate_cpu_storage(size_t bytes) { return std::make_shared<CpuStorage>(bytes); }

void set_storage_allocator(Device d, StorageAllocator alloc) {
  std::lock_guard<std::mutex> lock(g_alloc_mu);
  g_allocators[static_cast<size_t>(d)] = alloc;
}

std::shared_ptr<Storage> allocate_storage(Device d, size_t bytes) {
  StorageAllocator alloc;
  {
    std::lock_guard<std::mutex> lock(g_alloc_mu);
    alloc = g_allocators[static_cast<size_t>(d)];
  }
  if (!alloc) throw Error(str("no allocator installed for device ", device_name(d)));
  return alloc(bytes);
}

// ---- Tensor -----------------------------------------------------------------------------------

Tensor::Tensor(Shape shape, DType dtype, std::shared_ptr<Storage> storage, Layout layout)
    : shape_(std::move(shape)), numel_(shape_numel(shape_)), dtype_(dtype), layout_(layout),
      storage_(std::move(storage)) {
  FASTNN_CHECK(storage_ != nullptr, "tensor ", shape_str(shape_), " without storage");
  FASTNN_CHECK(storage_->bytes() >= nbytes(), "storage of ", storage_->bytes(), " bytes is too small for ",
               dtype_name(dtype_), shape_str(shape_));
  FASTNN_CHECK(layout_ == Layout::kNone || shape_.size() == 4, "layout ", layout_name(layout_),
               " on a tensor of rank ", shape_.size());
}

Tensor Tensor::empty(Shape shape, DType dtype, Device device, Layout layout) {
  const int64_t n = shape_numel(shape);
  auto storage = allocate_storage(device, static_cast<size_t>(n) * dtype_size(dtype));
  return Tensor(std::move(shape), dtype, std::move(storage), layout);
}

Tensor Tensor::zeros(Shape shape, DType dtype, Layout layout) {
  Tensor t = empty(std::move(shape), dtype, Device::kCpu, layout);
  t.zero();
  return t;
}

template <typename T>
Tensor Tensor::from(Shape shape, std::span<const T> values, Layout layout) {
  Tensor t = empty(std::move(shape), dtype_of<T>(), Device::kCpu, layout);
  FASTNN_CHECK(static_cast<int64_t>(values.size()) == t.numel(), values.size(), " values for shape ",
               shape_str(t.shape()));
  if (!values.empty()) std::memcpy(t.raw(), values.data(), t.nbytes());
  return t;
}

int64_t Tensor::dim(int i) const {
  const int n = ndim();
  if (i < 0) i += n;
  FASTNN_CHECK(i >= 0 && i < n, "dim ", i, " of a rank-", n, " tensor");
  return shape_[static_cast<size_t>(i)];
}

Device Tensor::device() const { return storage_ ? storage_->device() : Device::kCpu; }

void Tensor::check_dtype(DType want) const {
  FASTNN_CHECK(dtype_ == want, "tensor ", describe(), " accessed as ", dtype_name(want));
}

void Tensor::check_cpu(const char* what) const {
  FASTNN_CHECK(defined(), what, " on an undefined tensor");
  FASTNN_CHECK(device() == Device::kCpu, what, " needs a CPU tensor, got ", describe());
}

Tensor Tensor::reshape(Shape shape) const {
  FASTNN_CHECK(defined(), "reshape of an undefined tensor");
  FASTNN_CHECK(shape_numel(shape) == numel_, "cannot reshape ", describe(), " to ", shape_str(shape));
  const Layout l = shape.size() == 4 ? layout_ : Layout::kNone;
  return Tensor(std::move(shape), dtype_, storage_, l);
}

Tensor Tensor::clone() const {
  check_cpu("clone");
  Tensor t = empty(shape_, dtype_, Device::kCpu, layout_);
  if (nbytes()) std::memcpy(t.raw(), raw(), nbytes());
  return t;
}

namespace {

// Element i as double / int64 and back, for the conversions below (not a hot path).
double load_f(const void* p, DType t, int64_t i) {
  switch (t) {
    case DType::kF32: return static_cast<const float*>(p)[i];
    case DType::kF64: return static_cast<const double*>(p)[i];
    case DType::kF16: return f16_bits_to_f32(static_cast<const uint16_t*>(p)[i]);
    case DType::kBF16: return bf16_bits_to_f32(static_cast<const uint16_t*>(p)[i]);
    case DType::kI32: return static_cast<const int32_t*>(p)[i];
    case DType::kI64: return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    case DType::kU8: return static_cast<const uint8_t*>(p)[i];
  }
  return 0;
}

int64_t load_i(const void* p, DType t, int64_t i) {
  switch (t) {
    case DType::kI32: return static_cast<const int32_t*>(p)[i];
    case DType::kI64: return static_cast<const int64_t*>(p)[i];
    case DType::kU8: return static_cast<const uint8_t*>(p)[i];
    default: return static_cast<int64_t>(load_f(p, t, i));
  }
}

void store(void* p, DType t, int64_t i, double v, int64_t iv, bool from_int) {
  switch (t) {
    case DType::kF32: static_cast<float*>(p)[i] = static_cast<float>(v); break;
    case DType::kF64: static_cast<double*>(p)[i] = v; break;
    case DType::kF16: static_cast<uint16_t*>(p)[i] = f32_to_f16_bits(static_cast<float>(v)); break;
    case DType::kBF16: static_cast<uint16_t*>(p)[i] = f32_to_bf16_bits(static_cast<float>(v)); break;
    case DType::kI32: static_cast<int32_t*>(p)[i] = static_cast<int32_t>(from_int ? iv : static_cast<int64_t>(v)); break;
    case DType::kI64: static_cast<int64_t*>(p)[i] = from_int ? iv : static_cast<int64_t>(v); break;
    case DType::kU8: static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(from_int ? iv : static_cast<int64_t>(v)); break;
  }
}

}  // namespace

Tensor Tensor::to(DType dtype) const {
  if (dtype == dtype_) return clone();
  check_cpu("to");
  Tensor t = empty(shape_, dtype, Device::kCpu, layout_);
  const bool from_int = !is_floating(dtype_);
  // Floats pass through double, which is exact for f32/f16/bf16 sources, so f32 -> f16/bf16 rounds once;
  // f64 -> f16/bf16 rounds via f32 (twice).
  for (int64_t i = 0; i < numel_; ++i) {
    const double v = from_int ? 0.0 : load_f(raw(), dtype_, i);
    const int64_t iv = from_int ? load_i(raw(), dtype_, i) : 0;
    store(t.raw(), dtype, i, from_int ? static_cast<double>(iv) : v, iv, from_int);
  }
  return t;
}

void Tensor::zero() {
  check_cpu("zero");
  if (nbytes()) std::memset(raw(), 0, nbytes());
}

void Tensor::fill(double v) {
  check_cpu("fill");
  const bool to_int = !is_floating(dtype_);
  for (int64_t i = 0; i < numel_; ++i) store(raw(), dtype_, i, v, static_cast<int64_t>(v), to_int);
}

template <typename T>
std::vector<T> Tensor::to_vector() const {
  const Tensor c = dtype_ == dtype_of<T>() ? *this : to(dtype_of<T>());
  c.check_cpu("to_vector");
  const T* p = c.data<T>();
  return std::vector<T>(p, p + numel_);
}

std::string Tensor::describe() const {
  if (!defined()) return "undefined";
  std::string s = str(dtype_name(dtype_), shape_str(shape_));
  if (layout_ != Layout::kNone) s += str(" ", layout_name(layout_));
  return s + " " + device_name(device());
}

#define FASTNN_TENSOR_INSTANTIATE(T)                                                    \
  template Tensor Tensor::from<T>(Shape, std::span<const T>, Layout);                  \
  template std::vector<T> Tensor::to_vector<T>() const;
FASTNN_TENSOR_INSTANTIATE(float)
FASTNN_TENSOR_INSTANTIATE(double)
FASTNN_TENSOR_INSTANTIATE(F16)
FASTNN_TENSOR_INSTANTIATE(BF16)
FASTNN_TENSOR_INSTANTIATE(int32_t)
FASTNN_TENSOR_INSTANTIATE(int64_t)
FASTNN_TENSOR_INSTANTIATE(uint8_t)
#undef FASTNN_TENSOR_INSTANTIATE

}  // namespace fastnn
