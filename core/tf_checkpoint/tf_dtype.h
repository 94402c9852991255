// TensorFlow's element types (tensorflow.DataType, schemas/tf_checkpoint.proto) as fastnn's checkpoint
// readers and writer see them: a name for listings, a size for bounds, and the named-array dtype
// (core/named_array.h) a tensor is read as.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "core/named_array.h"

namespace fastnn::tf_checkpoint {

// TensorFlow's spelling without the DT_ prefix ("float", "int64", "bfloat16", "string"), or
// "dtype N" for a value this build does not know.
std::string tf_dtype_name(int dtype);
// Bytes per element of the fixed-size types; 0 for string, variant, resource and unknown types.
size_t tf_dtype_size(int dtype);
// The named-array dtype of float, half, bfloat16, int32, int64 and uint8 tensors; nullopt otherwise
// (listed by `fastnn inspect`, never loaded).
std::optional<DType> tf_to_array_dtype(int dtype);
int array_to_tf_dtype(DType dtype);

}  // namespace fastnn::tf_checkpoint
