// libjpeg error handling is setjmp/longjmp: every libjpeg call happens inside one of the two phase
// functions below, whose locals are all trivially destructible, so a longjmp never skips a C++
// destructor. The phases report failure by returning false; the C++ side then throws.
#include "core/image_jpeg_crop.h"

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <vector>

#include <jpeglib.h>

#include "core/check.h"

namespace fastnn {
namespace {

struct ErrorManager {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void on_error(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

// Warnings mean corrupt data that libjpeg would paper over (grey rows for a truncated file): an
// error for us. Trace messages (level > 0) are ignored.
void on_message(j_common_ptr cinfo, int level) {
  if (level < 0) on_error(cinfo);
}

// A progressive JPEG with thousands of tiny scans costs minutes of CPU for a few bytes; refuse
// more scans than any encoder writes (TurboJPEG's TJFLAG_LIMITSCANS uses the same bound).
constexpr int kMaxScans = 500;

void on_progress(j_common_ptr cinfo) {
  auto* d = reinterpret_cast<j_decompress_ptr>(cinfo);
  if (d->is_decompressor && d->progressive_mode && d->input_scan_number > kMaxScans) {
    auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
    std::snprintf(err->message, sizeof(err->message), "progressive JPEG with more than %d scans", kMaxScans);
    std::longjmp(err->jump, 1);
  }
}

}  // namespace

struct JpegCropDecoder::Impl {
  jpeg_decompress_struct cinfo;
  ErrorManager err;
  jpeg_progress_mgr progress;
  std::vector<uint8_t> rows;  // decoded scanlines of the cropped width (grows, never shrinks)

  Impl() {
    cinfo.err = jpeg_std_error(&err.pub);
    err.pub.error_exit = on_error;
    err.pub.emit_message = on_message;
    err.message[0] = '\0';
    jpeg_create_decompress(&cinfo);  // only fails on out-of-memory, which longjmps nowhere useful
    progress.progress_monitor = on_progress;
    cinfo.progress = &progress;
  }
  ~Impl() { jpeg_destroy_decompress(&cinfo); }

  [[noreturn]] void fail() {
    std::string msg = err.message;
    jpeg_abort_decompress(&cinfo);
    throw FormatError(str("JPEG: ", msg));
  }
};

namespace {

// Phase 1: header (and, when start is set, start of decompression at the given scale).
bool read_header_phase(jpeg_decompress_struct* cinfo, ErrorManager* err, const uint8_t* data, size_t size,
                       int scale_denom, int channels, bool start, const ImageLimits* limits,
                       bool* over_limits) {
  if (setjmp(err->jump)) return false;
  jpeg_mem_src(cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(cinfo, TRUE);
  int64_t w = cinfo->image_width, h = cinfo->image_height;
  if (w > limits->max_side || h > limits->max_side || w * h > limits->max_pixels) {
    *over_limits = true;
    return true;
  }
  if (!start) return true;
  cinfo->out_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  cinfo->scale_num = 1;
  cinfo->scale_denom = static_cast<unsigned>(scale_denom);
  jpeg_start_decompress(cinfo);
  return true;
}

// Phase 2: crop to the window's iMCU columns, skip to its first row, copy its rows out.
bool decode_phase(jpeg_decompress_struct* cinfo, ErrorManager* err, int x, int y, int w, int h, int channels,
                  uint8_t* rows, size_t rows_size, uint8_t* out) {
  if (setjmp(err->jump)) return false;
  // One pixel of margin each side: fancy (triangle) chroma upsampling treats the crop's edges as
  // image edges, so a pixel on an iMCU boundary would differ from the full decode.
  int lo = x > 0 ? x - 1 : 0;
  int hi = std::min(x + w + 1, static_cast<int>(cinfo->output_width));
  JDIMENSION xoff = static_cast<JDIMENSION>(lo), cw = static_cast<JDIMENSION>(hi - lo);
  if (cw < cinfo->output_width) jpeg_crop_scanline(cinfo, &xoff, &cw);
  // jpeg_crop_scanline widens the window to iMCU boundaries: [xoff, xoff + cw) ⊇ [lo, hi).
  size_t row_bytes = static_cast<size_t>(cinfo->output_width) * channels;
  size_t skip_bytes = static_cast<size_t>(x - static_cast<int>(xoff)) * channels;
  size_t copy_bytes = static_cast<size_t>(w) * channels;
  int group = cinfo->rec_outbuf_height > 0 ? cinfo->rec_outbuf_height : 1;
  if (group > 8) group = 8;
  if (row_bytes * group > rows_size) group = 1;
  if (y > 0) jpeg_skip_scanlines(cinfo, static_cast<JDIMENSION>(y));
  int done = 0;
  JSAMPROW ptrs[8];
  while (done < h) {
    int want = h - done < group ? h - done : group;
    for (int i = 0; i < want; ++i) ptrs[i] = rows + row_bytes * i;
    int got = static_cast<int>(jpeg_read_scanlines(cinfo, ptrs, static_cast<JDIMENSION>(want)));
    if (got <= 0) {
      std::snprintf(err->message, sizeof(err->message), "no scanline returned at row %d", y + done);
      return false;
    }
    for (int i = 0; i < got; ++i)
      std::memcpy(out + copy_bytes * static_cast<size_t>(done + i), ptrs[i] + skip_bytes, copy_bytes);
    done += got;
  }
  return true;
}

}  // namespace

JpegCropDecoder::JpegCropDecoder() : impl_(std::make_unique<Impl>()) {}
JpegCropDecoder::~JpegCropDecoder() = default;

ImageInfo JpegCropDecoder::read_header(std::string_view bytes, const ImageLimits& limits) {
  Impl& im = *impl_;
  bool over = false;
  if (!read_header_phase(&im.cinfo, &im.err, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), 1, 3,
                         false, &limits, &over))
    im.fail();
  ImageInfo info;
  info.format = ImageFormat::kJpeg;
  info.width = static_cast<int>(im.cinfo.image_width);
  info.height = static_cast<int>(im.cinfo.image_height);
  J_COLOR_SPACE cs = im.cinfo.jpeg_color_space;
  info.channels = cs == JCS_GRAYSCALE ? 1 : (cs == JCS_CMYK || cs == JCS_YCCK) ? 4 : 3;
  jpeg_abort_decompress(&im.cinfo);
  if (over)
    throw FormatError(str("JPEG: ", info.width, "x", info.height, " exceeds the image limits (", limits.max_pixels,
                          " pixels, ", limits.max_side, " per side)"));
  return info;
}

ImageInfo JpegCropDecoder::decode_window(std::string_view bytes, int scale_denom, int x, int y, int w, int h,
                                         int channels, uint8_t* out, size_t out_size, const ImageLimits& limits) {
  FASTNN_CHECK(scale_denom == 1 || scale_denom == 2 || scale_denom == 4 || scale_denom == 8,
               "JPEG scale 1/", scale_denom, " is not one of 1, 1/2, 1/4, 1/8");
  FASTNN_CHECK(channels == 1 || channels == 3, "crop decode gives 1 or 3 channels, not ", channels);
  FASTNN_CHECK(x >= 0 && y >= 0 && w > 0 && h > 0, "bad JPEG window ", x, ",", y, " ", w, "x", h);
  FASTNN_CHECK(out_size >= static_cast<size_t>(w) * h * channels, "output buffer too small for ", w, "x", h,
               "x", channels);
  ImageInfo info = read_header(bytes, limits);
  if (info.channels == 4) throw FormatError("JPEG: CMYK/YCCK images are not supported by the crop decoder");
  int sw = jpeg_dim_at_scale(info.width, scale_denom), sh = jpeg_dim_at_scale(info.height, scale_denom);
  FASTNN_CHECK(x + w <= sw && y + h <= sh, "JPEG window ", x, ",", y, " ", w, "x", h, " outside the ", sw, "x",
               sh, " image at scale 1/", scale_denom);

  Impl& im = *impl_;
  bool over = false;
  if (!read_header_phase(&im.cinfo, &im.err, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(),
                         scale_denom, channels, true, &limits, &over))
    im.fail();
  if (static_cast<int>(im.cinfo.output_width) != sw || static_cast<int>(im.cinfo.output_height) != sh) {
    jpeg_abort_decompress(&im.cinfo);
    throw Error(str("JPEG: libjpeg scaled ", info.width, "x", info.height, " to ", im.cinfo.output_width, "x",
                    im.cinfo.output_height, ", expected ", sw, "x", sh));
  }
  int group = im.cinfo.rec_outbuf_height > 0 ? std::min(im.cinfo.rec_outbuf_height, 8) : 1;
  size_t need = static_cast<size_t>(im.cinfo.output_width) * channels * group;
  if (im.rows.size() < need) im.rows.resize(need);
  if (!decode_phase(&im.cinfo, &im.err, x, y, w, h, channels, im.rows.data(), im.rows.size(), out)) im.fail();
  jpeg_abort_decompress(&im.cinfo);  // the rows below the window are never decoded
  return info;
}

}  // namespace fastnn
