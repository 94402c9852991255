// Tensors: a shape, a dtype, a device, a layout tag and ref-counted storage.
//
// A Tensor is a handle: copying it shares the storage (like shared_ptr); clone() copies the bytes.
// Storage is always dense and row-major in the order of `shape` (no strides, no views; reshape() shares
// storage under a new shape of the same element count). The layout tag only says what the 4 dims of an
// activation mean (NCHW or NHWC); the CPU reference ops use NCHW and reject NHWC.
//
// Devices: storage sits behind the small Storage interface. CPU storage is 64-byte aligned host memory.
// The CUDA backend adds its own Storage subclass and installs an allocator with
// set_storage_allocator(Device::kCuda, ...); until then allocating on kCuda throws.
//
// f16 and bf16 are storage types: F16 / BF16 hold the bits, and the converters below round to nearest
// even (NaN stays NaN, overflow goes to infinity). CPU arithmetic is done in f32 or f64.
//
// Threading: a Tensor handle is as thread-safe as a shared_ptr (the count is atomic); concurrent writes
// to the same elements are the caller's business.
#pragma once

#include "core/half.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/dtype.h"

namespace fastnn {

// DType, Layout and their names: core/dtype.h.
enum class Device : uint8_t { kCpu, kCuda };

using Shape = std::vector<int64_t>;

const char* device_name(Device d);
std::string shape_str(const Shape& s);  // "[2,3,4]"
// Product of the dims; throws Error on a negative dim or an element count above 2^48.
int64_t shape_numel(const Shape& s);

// 16-bit float storage types (IEEE binary16 and bfloat16); arithmetic goes through float.
struct F16 {
  uint16_t bits = 0;
};
struct BF16 {
  uint16_t bits = 0;
};
// f32_to_f16_bits, f16_bits_to_f32, f32_to_bf16_bits, bf16_bits_to_f32: core/half.h.
inline F16 to_f16(float f) { return F16{f32_to_f16_bits(f)}; }
inline BF16 to_bf16(float f) { return BF16{f32_to_bf16_bits(f)}; }
inline float to_f32(F16 h) { return f16_bits_to_f32(h.bits); }
inline float to_f32(BF16 h) { return bf16_bits_to_f32(h.bits); }

// The DType of a C++ element type: dtype_of<float>() == DType::kF32.
template <typename T>
constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::kF32; }
template <> constexpr DType dtype_of<double>() { return DType::kF64; }
template <> constexpr DType dtype_of<F16>() { return DType::kF16; }
template <> constexpr DType dtype_of<BF16>() { return DType::kBF16; }
template <> constexpr DType dtype_of<int32_t>() { return DType::kI32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::kI64; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::kU8; }

// A block of memory on one device. Subclasses own the memory and free it in their destructor.
class Storage {
 public:
  virtual ~Storage() = default;
  virtual Device device() const = 0;
  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  // How many writable pointers to this memory Tensors have handed out (non-const raw() and data()). A
  // kernel that derives something from a tensor it only reads (oneDNN's blocked copy of a weight) may
  // keep it while the count stays, where every write goes through a Tensor (an inference graph's
  // parameters: ops::ForwardArgs::params_write_counted). A write through a pointer kept from before is
  // not counted.
  uint64_t write_count() const { return writes_.load(std::memory_order_relaxed); }
  void count_write() { writes_.fetch_add(1, std::memory_order_relaxed); }

 protected:
  void* data_ = nullptr;
  size_t bytes_ = 0;

 private:
  std::atomic<uint64_t> writes_{0};
};

using StorageAllocator = std::shared_ptr<Storage> (*)(size_t bytes);
// 64-byte aligned host memory, uninitialised.
std::shared_ptr<Storage> allocate_cpu_storage(size_t bytes);
// Installs the allocator for a device (the CUDA backend calls this once at start-up, explicitly).
void set_storage_allocator(Device d, StorageAllocator alloc);
std::shared_ptr<Storage> allocate_storage(Device d, size_t bytes);

class Tensor {
 public:
  Tensor() = default;  // undefined: no storage; defined() is false
  // Wraps existing storage, which must hold at least numel * dtype_size bytes.
  Tensor(Shape shape, DType dtype, std::shared_ptr<Storage> storage, Layout layout = Layout::kNone);

  // Uninitialised storage on `device`.
  static Tensor empty(Shape shape, DType dtype = DType::kF32, Device device = Device::kCpu,
                      Layout layout = Layout::kNone);
  // CPU tensors filled with zeros / copied from values (values.size() must equal the element count).
  static Tensor zeros(Shape shape, DType dtype = DType::kF32, Layout layout = Layout::kNone);
  template <typename T>
  static Tensor from(Shape shape, std::span<const T> values, Layout layout = Layout::kNone);
  template <typename T>
  static Tensor from(Shape shape, std::initializer_list<T> values, Layout layout = Layout::kNone) {
    return from<T>(std::move(shape), std::span<const T>(values.begin(), values.size()), layout);
  }

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  int ndim() const { return static_cast<int>(shape_.size()); }
  int64_t dim(int i) const;  // negative i counts from the back
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtype_size(dtype_); }
  DType dtype() const { return dtype_; }
  Device device() const;
  Layout layout() const { return layout_; }
  void set_layout(Layout l) { layout_ = l; }
  const std::shared_ptr<Storage>& storage() const { return storage_; }

  // A writable pointer: counted as a write (Storage::write_count).
  void* raw() {
    if (!storage_) return nullptr;
    storage_->count_write();
    return storage_->data();
  }
  const void* raw() const { return storage_ ? storage_->data() : nullptr; }
  // Typed element pointer (host or device address); throws if T does not match the dtype.
  template <typename T>
  T* data() {
    check_dtype(dtype_of<T>());
    return static_cast<T*>(raw());
  }
  template <typename T>
  const T* data() const {
    check_dtype(dtype_of<T>());
    return static_cast<const T*>(raw());
  }

  // Same storage, new shape with the same element count.
  Tensor reshape(Shape shape) const;
  // New CPU storage with the same bytes.
  Tensor clone() const;
  // New CPU tensor converted to `dtype` (floats round to nearest even; float to int truncates).
  Tensor to(DType dtype) const;
  // CPU only: every element set to zero / to `v` (converted to the dtype).
  void zero();
  void fill(double v);
  // CPU only: the elements converted to T.
  template <typename T>
  std::vector<T> to_vector() const;

  std::string describe() const;  // "f32[2,3,4,4] nchw cpu"

 private:
  void check_dtype(DType want) const;
  void check_cpu(const char* what) const;

  Shape shape_;
  int64_t numel_ = 0;
  DType dtype_ = DType::kF32;
  Layout layout_ = Layout::kNone;
  std::shared_ptr<Storage> storage_;
};

}  // namespace fastnn
