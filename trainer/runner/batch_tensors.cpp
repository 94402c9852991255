#include "trainer/runner/batch_tensors.h"

#include <memory>

#include "core/check.h"

namespace fastnn::runner {
namespace {

// Host memory owned by a pipeline batch: keeps the handle (shared by the images and labels storages).
class BatchStorage final : public Storage {
 public:
  BatchStorage(std::shared_ptr<pipeline::BatchHandle> batch, const void* data, size_t bytes) : batch_(std::move(batch)) {
    data_ = const_cast<void*>(data);
    bytes_ = bytes;
  }
  Device device() const override { return Device::kCpu; }

 private:
  std::shared_ptr<pipeline::BatchHandle> batch_;
};

}  // namespace

BatchTensors wrap_batch(pipeline::BatchHandle&& handle) {
  FASTNN_CHECK(static_cast<bool>(handle), "wrap_batch: no batch");
  auto shared = std::make_shared<pipeline::BatchHandle>(std::move(handle));
  const pipeline::Batch& b = **shared;
  const pipeline::BatchSpec& s = b.spec();
  const bool nchw = s.layout == Layout::kNCHW;
  const Shape shape = nchw ? Shape{b.size(), s.channels, s.height, s.width} : Shape{b.size(), s.height, s.width, s.channels};
  BatchTensors t;
  t.images = Tensor(shape, s.dtype, std::make_shared<BatchStorage>(shared, b.data(), b.bytes()),
                    nchw ? Layout::kNCHW : Layout::kNHWC);
  t.labels = Tensor({b.size()}, DType::kI32,
                    std::make_shared<BatchStorage>(shared, b.labels(), static_cast<size_t>(b.size()) * sizeof(int32_t)));
  t.mix_weights = b.mix_weights();
  return t;
}

}  // namespace fastnn::runner
