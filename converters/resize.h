// Area-averaging downscale (each output pixel is the mean of the source area it covers, partial
// pixels weighted by their overlap; what OpenCV calls INTER_AREA). Used by --resize-shorter-side to
// shrink large images before re-encoding: it does not alias the way point sampling does.
//
// Layout: 8-bit HWC, rows packed. Requires 1 <= dst_w <= src_w and 1 <= dst_h <= src_h (checked).
// Compute only: the caller provides dst (dst_w × dst_h × channels) and the float scratch buffer is
// resized by the function (kept by the caller between calls).
#pragma once

#include <cstdint>
#include <vector>

namespace fastnn::converters {

void resize_area(const uint8_t* src, int src_w, int src_h, int channels, uint8_t* dst, int dst_w, int dst_h,
                 std::vector<float>* scratch);

// The output size that makes the shorter side `shorter` (rounded, at least 1), keeping the aspect.
void shorter_side_size(int w, int h, int shorter, int* out_w, int* out_h);

}  // namespace fastnn::converters
