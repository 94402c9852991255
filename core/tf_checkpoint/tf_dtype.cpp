#include "core/tf_checkpoint/tf_dtype.h"

#include "core/check.h"
#include "schemas/tf_checkpoint.pb.h"

namespace fastnn::tf_checkpoint {

std::string tf_dtype_name(int dtype) {
  if (!tensorflow::DataType_IsValid(dtype) || dtype == tensorflow::DT_INVALID) return str("dtype ", dtype);
  std::string n = tensorflow::DataType_Name(static_cast<tensorflow::DataType>(dtype)).substr(3);  // "DT_"
  for (char& c : n) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return n;
}

size_t tf_dtype_size(int dtype) {
  using namespace tensorflow;
  switch (dtype) {
    case DT_BOOL: case DT_INT8: case DT_UINT8: case DT_QINT8: case DT_QUINT8: return 1;
    case DT_INT16: case DT_UINT16: case DT_QINT16: case DT_QUINT16: case DT_HALF: case DT_BFLOAT16: return 2;
    case DT_FLOAT: case DT_INT32: case DT_UINT32: case DT_QINT32: return 4;
    case DT_DOUBLE: case DT_INT64: case DT_UINT64: case DT_COMPLEX64: return 8;
    case DT_COMPLEX128: return 16;
    default: return 0;
  }
}

std::optional<DType> tf_to_array_dtype(int dtype) {
  using namespace tensorflow;
  switch (dtype) {
    case DT_FLOAT: return DType::kF32;
    case DT_HALF: return DType::kF16;
    case DT_BFLOAT16: return DType::kBF16;
    case DT_INT32: return DType::kI32;
    case DT_INT64: return DType::kI64;
    case DT_UINT8: return DType::kU8;
    default: return std::nullopt;
  }
}

int array_to_tf_dtype(DType dtype) {
  switch (dtype) {
    case DType::kF32: return tensorflow::DT_FLOAT;
    case DType::kF16: return tensorflow::DT_HALF;
    case DType::kBF16: return tensorflow::DT_BFLOAT16;
    case DType::kI32: return tensorflow::DT_INT32;
    case DType::kI64: return tensorflow::DT_INT64;
    case DType::kU8: return tensorflow::DT_UINT8;
    case DType::kF64: break;  // no named array holds f64
  }
  throw Error(str("no TensorFlow dtype for ", checkpoint::safetensors_dtype_name(dtype)));
}

}  // namespace fastnn::tf_checkpoint
