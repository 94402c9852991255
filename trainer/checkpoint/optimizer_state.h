// Optimizer state <-> checkpoint arrays. Optimizer::export_state() yields named float arrays
// ("<param>/<slot>", "<optimizer>/<scalar>"); they are stored as 1-D F32 tensors of their length, so
// import_state() gets back exactly what was exported (bitwise).
#pragma once

#include <vector>

#include "core/named_array.h"
#include "core/safetensors.h"
#include "trainer/params.h"

namespace fastnn::checkpoint {

// Views into `state`, which must outlive them (and not be resized).
std::vector<ArrayView> optimizer_state_views(const std::vector<NamedArray>& state);
// Every tensor of `file` as floats (F32, F16 or BF16), flattened; FormatError naming the file and
// tensor for an integer dtype.
std::vector<NamedArray> optimizer_state_from(const SafetensorsFile& file);

}  // namespace fastnn::checkpoint
