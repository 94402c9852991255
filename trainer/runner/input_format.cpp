#include "trainer/runner/input_format.h"

#include "core/check.h"

namespace fastnn::runner {

std::string BatchFormat::describe() const {
  return str(pipeline::batch_dtype_name(dtype), " ", pipeline::batch_layout_name(layout), allocator ? str(" (", allocator->name(), ")") : "");
}

BatchFormat batch_format_for(const std::string& input_dtype, const BatchFormat& device_default) {
  if (input_dtype == "auto" || input_dtype.empty()) return device_default;
  BatchFormat f = device_default;
  if (input_dtype == "uint8") {
    f.dtype = DType::kU8;
    f.layout = Layout::kNHWC;  // the pipeline's rows as decoded; the runner transposes
  } else if (input_dtype == "float16" || input_dtype == "float32") {
    f.dtype = input_dtype == "float16" ? DType::kF16 : DType::kF32;
    f.layout = Layout::kNCHW;
  } else {
    throw ConfigError(str("input_dtype=", input_dtype, ": choose auto, uint8, float16 or float32"));
  }
  return f;
}

Tensor normalize_input_reference(const Tensor& images, const InputNormalization& norm) {
  FASTNN_CHECK(images.device() == Device::kCpu && images.shape().size() == 4, "normalize_input_reference: ",
               images.describe());
  const bool nhwc = images.layout() == Layout::kNHWC;
  const Shape& s = images.shape();
  const int64_t n = s[0], c = nhwc ? s[3] : s[1], h = nhwc ? s[1] : s[2], w = nhwc ? s[2] : s[3];
  FASTNN_CHECK(c <= 4, "normalize_input_reference: ", c, " channels");
  Tensor out = Tensor::empty({n, c, h, w}, DType::kF32, Device::kCpu, Layout::kNCHW);
  float* y = out.data<float>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t r = 0; r < h; ++r)
        for (int64_t x = 0; x < w; ++x) {
          const int64_t src = nhwc ? ((i * h + r) * w + x) * c + ch : ((i * c + ch) * h + r) * w + x;
          float v;
          switch (images.dtype()) {
            case DType::kU8:
              v = (static_cast<float>(images.data<uint8_t>()[src]) - norm.mean[ch]) * norm.inv_std[ch];
              break;
            case DType::kF16: v = to_f32(images.data<F16>()[src]); break;
            case DType::kF32: v = images.data<float>()[src]; break;
            default: throw Error(str("normalize_input_reference: ", images.describe()));
          }
          y[((i * c + ch) * h + r) * w + x] = v;
        }
  return out;
}

}  // namespace fastnn::runner
