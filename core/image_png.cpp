// PNG through libpng 1.6: header, decode (from memory), encode (into a std::string).
//
// libpng reports errors by longjmp to a setjmp point. Each libpng phase runs in its own function
// that calls setjmp and holds only trivially destructible locals; everything with a destructor (the
// structs' owner, scratch buffers, the output string) lives in the calling C++ frame, which a
// longjmp never skips. Our callbacks never let a C++ exception cross libpng's C frames: they record
// the failure and call png_error instead. After a phase fails, the C++ side throws FormatError.
//
// Hardening: png_set_user_limits (width/height ≤ ImageLimits::max_side, checked by libpng on IHDR),
// png_set_chunk_malloc_max (no ancillary chunk over kChunkMallocMax), all ancillary chunks except
// tRNS are skipped unread (no iCCP/zTXt/iTXt decompression, no gamma handling), and width × height is
// checked against ImageLimits before a row is decoded. Rows are decoded straight into the caller's
// buffer; only RGB → gray (done by us, see image_codecs.h) needs a scratch row (a whole scratch image
// for interlaced files, whose passes revisit every row).
#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/check.h"
#include "core/image.h"
#include "core/image_codecs.h"

namespace fastnn {
namespace {

constexpr png_alloc_size_t kChunkMallocMax = 8u << 20;

struct PngMessages {  // error_ptr of every libpng struct we create
  char error[256];
  char warning[256];
};

[[noreturn]] void on_error(png_structp png, png_const_charp msg) {
  if (auto* m = static_cast<PngMessages*>(png_get_error_ptr(png)))
    std::snprintf(m->error, sizeof m->error, "%s", msg ? msg : "(no message)");
  png_longjmp(png, 1);
}

// Warnings are benign by libpng's definition (bad CRC in an ancillary chunk, extra data...); the
// last one is kept because a following error (e.g. "Invalid IHDR data") often only makes sense
// with it ("Image width exceeds user limit in IHDR").
void on_warning(png_structp png, png_const_charp msg) {
  if (auto* m = static_cast<PngMessages*>(png_get_error_ptr(png)))
    std::snprintf(m->warning, sizeof m->warning, "%s", msg ? msg : "");
}

struct PngSource {
  const unsigned char* data;
  size_t size;
  size_t pos;
};

void on_read(png_structp png, png_bytep dst, size_t n) {
  auto* src = static_cast<PngSource*>(png_get_io_ptr(png));
  if (n > src->size - src->pos) png_error(png, "unexpected end of data (truncated PNG)");
  std::memcpy(dst, src->data + src->pos, n);
  src->pos += n;
}

std::string describe(const PngMessages& m) {
  std::string s = m.error[0] ? m.error : "libpng failed";
  if (m.warning[0]) s += str(" (last libpng warning: ", m.warning, ")");
  return s;
}

// Owns the read structs from the C++ side.
struct PngReader {
  PngMessages msg{};
  PngSource src{};
  png_structp png = nullptr;
  png_infop info = nullptr;

  explicit PngReader(std::string_view bytes) {
    src = {reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), 0};
    png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &msg, on_error, on_warning);
    if (png) info = png_create_info_struct(png);
    if (!png || !info) {
      png_destroy_read_struct(png ? &png : nullptr, nullptr, nullptr);
      throw Error("libpng: cannot create read structs (out of memory?)");
    }
    png_set_read_fn(png, &src, on_read);
  }
  ~PngReader() { png_destroy_read_struct(&png, &info, nullptr); }
  PngReader(const PngReader&) = delete;
  PngReader& operator=(const PngReader&) = delete;

  [[noreturn]] void fail(const char* what) const {
    throw FormatError(str(what, " at byte ", src.pos, " of ", src.size, ": ", describe(msg)));
  }
};

struct PngHeader {
  png_uint_32 width = 0, height = 0;
  int bit_depth = 0, color_type = 0, interlace = 0;
  bool trns = false;
};

// setjmp frame: trivially destructible locals only.
bool read_header_phase(png_structp png, png_infop info, png_uint_32 max_side, PngHeader* hdr) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_user_limits(png, max_side, max_side);
  png_set_chunk_malloc_max(png, kChunkMallocMax);
  png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, nullptr, -1);
  png_read_info(png, info);
  png_get_IHDR(png, info, &hdr->width, &hdr->height, &hdr->bit_depth, &hdr->color_type, &hdr->interlace,
               nullptr, nullptr);
  hdr->trns = png_get_valid(png, info, PNG_INFO_tRNS) != 0;
  return true;
}

bool has_color(const PngHeader& h) { return (h.color_type & PNG_COLOR_MASK_COLOR) != 0; }
bool has_alpha(const PngHeader& h) { return (h.color_type & PNG_COLOR_MASK_ALPHA) != 0 || h.trns; }

// As stored: colour channels (palette counts as RGB) plus alpha if there is an alpha channel or a
// tRNS chunk; gray + alpha has no 2-channel output layout and widens to RGBA.
int stored_channels(const PngHeader& h) { return has_alpha(h) ? 4 : has_color(h) ? 3 : 1; }

struct PngDecodeJob {
  uint8_t* out;
  int out_channels;   // 1, 3, 4
  int lib_channels;   // what libpng delivers: out_channels, or 3 when we convert RGB → gray
  uint8_t* scratch;   // rows of lib_channels (one row, or the whole image if interlaced); or null
};

// setjmp frame: trivially destructible locals only.
bool decode_phase(png_structp png, png_infop info, const PngHeader& h, const PngDecodeJob* job) {
  if (setjmp(png_jmpbuf(png))) return false;
  if (h.bit_depth == 16) png_set_strip_16(png);  // keeps the high byte: 0xABCD → 0xAB
  if (h.color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (h.color_type == PNG_COLOR_TYPE_GRAY && h.bit_depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (h.trns) png_set_tRNS_to_alpha(png);
  if (job->out_channels != 4 && has_alpha(h)) png_set_strip_alpha(png);  // dropped, not composited
  if (job->out_channels != 1 && !has_color(h)) png_set_gray_to_rgb(png);
  if (job->out_channels == 4 && !has_alpha(h)) png_set_add_alpha(png, 0xff, PNG_FILLER_AFTER);
  const int passes = png_set_interlace_handling(png);
  png_read_update_info(png, info);

  const size_t w = h.width, rowbytes = w * static_cast<size_t>(job->lib_channels);
  if (png_get_bit_depth(png, info) != 8 || png_get_channels(png, info) != job->lib_channels ||
      png_get_rowbytes(png, info) != rowbytes)
    png_error(png, "internal: libpng row layout differs from the planned one");

  const bool whole_scratch = job->scratch && passes > 1;
  for (int pass = 0; pass < passes; ++pass) {
    for (size_t y = 0; y < h.height; ++y) {
      if (!job->scratch) {
        png_read_row(png, job->out + y * rowbytes, nullptr);
      } else if (whole_scratch) {
        png_read_row(png, job->scratch + y * rowbytes, nullptr);
      } else {
        png_read_row(png, job->scratch, nullptr);
        image_detail::convert_pixels(job->scratch, job->lib_channels, job->out + y * w, 1, w);
      }
    }
  }
  if (whole_scratch) image_detail::convert_pixels(job->scratch, job->lib_channels, job->out, 1, w * h.height);
  png_read_end(png, nullptr);  // checks the remaining chunks' CRCs and that IEND is there
  return true;
}

PngHeader read_checked_header(PngReader& r, const ImageLimits& limits) {
  PngHeader h;
  const png_uint_32 side = static_cast<png_uint_32>(limits.max_side > 0 ? limits.max_side : 1);
  if (!read_header_phase(r.png, r.info, side, &h)) r.fail("PNG header");
  // libpng already refused sides over max_side (≤ INT_MAX), so the casts are exact.
  image_detail::check_limits("PNG", static_cast<int>(h.width), static_cast<int>(h.height), limits);
  return h;
}

// Write side.
void on_write(png_structp png, png_bytep data, size_t n) {
  auto* out = static_cast<std::string*>(png_get_io_ptr(png));
  bool ok = true;
  try {
    out->append(reinterpret_cast<const char*>(data), n);
  } catch (...) {
    ok = false;
  }
  if (!ok) png_error(png, "out of memory while writing PNG");
}
void on_flush(png_structp) {}

// setjmp frame: trivially destructible locals only.
bool encode_phase(png_structp png, png_infop info, const uint8_t* pixels, int width, int height, int channels,
                  int level) {
  if (setjmp(png_jmpbuf(png))) return false;
  const int type = channels == 1 ? PNG_COLOR_TYPE_GRAY : channels == 3 ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_RGBA;
  png_set_IHDR(png, info, static_cast<png_uint_32>(width), static_cast<png_uint_32>(height), 8, type,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_set_compression_level(png, level);
  png_write_info(png, info);
  const size_t stride = static_cast<size_t>(width) * static_cast<size_t>(channels);
  for (int y = 0; y < height; ++y) png_write_row(png, pixels + static_cast<size_t>(y) * stride);
  png_write_end(png, nullptr);
  return true;
}

}  // namespace

namespace image_detail {

ImageInfo png_read_info(std::string_view bytes, const ImageLimits& limits) {
  PngReader r(bytes);
  const PngHeader h = read_checked_header(r, limits);
  return {ImageFormat::kPng, static_cast<int>(h.width), static_cast<int>(h.height), stored_channels(h)};
}

ImageInfo png_decode_into(std::string_view bytes, int desired_channels, uint8_t* out, size_t out_size,
                          const ImageLimits& limits) {
  PngReader r(bytes);
  const PngHeader h = read_checked_header(r, limits);
  const int stored = stored_channels(h);
  const int c = resolve_channels(desired_channels, stored);
  const size_t w = h.width, pixels = w * h.height;
  FASTNN_CHECK(out != nullptr && out_size >= pixels * c, "PNG decode: output buffer holds ", out_size,
               " bytes, the ", h.width, "x", h.height, "x", c, " image needs ", pixels * c);
  std::vector<uint8_t> scratch;
  PngDecodeJob job{out, c, c, nullptr};
  if (c == 1 && has_color(h)) {
    job.lib_channels = 3;
    scratch.resize(h.interlace != PNG_INTERLACE_NONE ? pixels * 3 : w * 3);
    job.scratch = scratch.data();
  }
  if (!decode_phase(r.png, r.info, h, &job)) r.fail("PNG decode");
  return {ImageFormat::kPng, static_cast<int>(h.width), static_cast<int>(h.height), stored};
}

}  // namespace image_detail

std::string encode_png(const uint8_t* pixels, int width, int height, int channels, int compression_level) {
  FASTNN_CHECK(pixels != nullptr && width > 0 && height > 0, "encode_png: bad image ", width, "x", height);
  FASTNN_CHECK(channels == 1 || channels == 3 || channels == 4, "encode_png: channels must be 1, 3 or 4, got ",
               channels);
  FASTNN_CHECK(compression_level >= 0 && compression_level <= 9, "encode_png: compression level must be 0..9, got ",
               compression_level);
  PngMessages msg{};
  std::string out;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &msg, on_error, on_warning);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  struct Guard {
    png_structp* png;
    png_infop* info;
    ~Guard() { png_destroy_write_struct(png, info); }
  } guard{&png, &info};
  if (!png || !info) throw Error("libpng: cannot create write structs (out of memory?)");
  png_set_write_fn(png, &out, on_write, on_flush);
  if (!encode_phase(png, info, pixels, width, height, channels, compression_level))
    throw Error(str("PNG encode of ", width, "x", height, "x", channels, ": ", describe(msg)));
  return out;
}

}  // namespace fastnn
