// Image codec throughput (images/s as items_per_second), each fastnn call beside its peer measured
// in the same run: the same library driven directly with the least glue (TurboJPEG with one reused
// handle; libpng's simplified png_image API), so the difference is fastnn's own overhead.
//   bench_image_codec --benchmark_format=json
// - JPEG decode of a 500×375 photo-like picture (quality 90, 4:2:0) at 1/1, 1/2, 1/4 (DCT scaling).
// - JPEG decode of a 32×32 picture; the peer once with one reused TurboJPEG handle and once with a
//   fresh handle per call (fastnn makes one per call: this shows what that costs).
// - PNG decode of a 28×28 gray (MNIST-sized) and a 32×32 RGB (CIFAR-sized) picture; PNG encode of
//   the 28×28 gray one.
#include <benchmark/benchmark.h>
#include <png.h>
#include <turbojpeg.h>

#include <string>
#include <vector>

#include "core/image.h"
#include "tests/unit/core/image_test_util.h"

namespace {

struct Picture {
  int w, h, c;
  std::vector<uint8_t> pixels;
  std::string jpeg, png;
};

const Picture& picture(int w, int h, int c) {
  static std::vector<Picture*> cache;
  for (Picture* p : cache)
    if (p->w == w && p->h == h && p->c == c) return *p;
  auto* p = new Picture{w, h, c, fastnn::testing::photo_like(w, h, c, 77), {}, {}};
  if (c != 4) p->jpeg = fastnn::encode_jpeg(p->pixels.data(), w, h, c, 90);
  p->png = fastnn::encode_png(p->pixels.data(), w, h, c);
  cache.push_back(p);
  return *p;
}

void BM_jpeg_decode(benchmark::State& state, int w, int h) {
  const Picture& p = picture(w, h, 3);
  const fastnn::JpegScale s{1, static_cast<int>(state.range(0))};
  std::vector<uint8_t> out(static_cast<size_t>(fastnn::jpeg_scaled_dim(w, s)) * fastnn::jpeg_scaled_dim(h, s) * 3);
  for (auto _ : state) {
    fastnn::decode_jpeg_scaled_into(p.jpeg, s, 3, out.data(), out.size());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(std::to_string(p.jpeg.size()) + " B in");
}

// Peer: TurboJPEG with one handle for the whole run and no header call of our own.
void BM_jpeg_decode_turbojpeg_direct(benchmark::State& state, int w, int h, bool fresh_handle) {
  const Picture& p = picture(w, h, 3);
  const fastnn::JpegScale s{1, static_cast<int>(state.range(0))};
  const int sw = fastnn::jpeg_scaled_dim(w, s), sh = fastnn::jpeg_scaled_dim(h, s);
  std::vector<uint8_t> out(static_cast<size_t>(sw) * sh * 3);
  const auto* data = reinterpret_cast<const unsigned char*>(p.jpeg.data());
  tjhandle handle = tjInitDecompress();
  for (auto _ : state) {
    tjhandle t = fresh_handle ? tjInitDecompress() : handle;
    if (tjDecompress2(t, data, p.jpeg.size(), out.data(), sw, sw * 3, sh, TJPF_RGB, 0) != 0)
      state.SkipWithError(tjGetErrorStr2(t));
    if (fresh_handle) tjDestroy(t);
    benchmark::DoNotOptimize(out.data());
  }
  tjDestroy(handle);
  state.SetItemsProcessed(state.iterations());
}

void BM_jpeg_decode_500x375(benchmark::State& s) { BM_jpeg_decode(s, 500, 375); }
void BM_jpeg_decode_500x375_peer_turbojpeg(benchmark::State& s) { BM_jpeg_decode_turbojpeg_direct(s, 500, 375, false); }
void BM_jpeg_decode_32x32(benchmark::State& s) { BM_jpeg_decode(s, 32, 32); }
void BM_jpeg_decode_32x32_peer_turbojpeg(benchmark::State& s) { BM_jpeg_decode_turbojpeg_direct(s, 32, 32, false); }
void BM_jpeg_decode_32x32_turbojpeg_fresh_handle(benchmark::State& s) {
  BM_jpeg_decode_turbojpeg_direct(s, 32, 32, true);
}
BENCHMARK(BM_jpeg_decode_500x375)->Arg(1)->Arg(2)->Arg(4);
BENCHMARK(BM_jpeg_decode_500x375_peer_turbojpeg)->Arg(1)->Arg(2)->Arg(4);
BENCHMARK(BM_jpeg_decode_32x32)->Arg(1);
BENCHMARK(BM_jpeg_decode_32x32_peer_turbojpeg)->Arg(1);
BENCHMARK(BM_jpeg_decode_32x32_turbojpeg_fresh_handle)->Arg(1);

// fastnn's path as the pipeline uses it: header, then decode into a buffer sized from it.
void BM_png_decode(benchmark::State& state, int w, int h, int c) {
  const Picture& p = picture(w, h, c);
  std::vector<uint8_t> out(static_cast<size_t>(w) * h * c);
  for (auto _ : state) {
    const fastnn::ImageInfo info = fastnn::read_image_info(p.png);
    fastnn::decode_image_into(p.png, info.channels, out.data(), out.size());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(std::to_string(p.png.size()) + " B in");
}

// Peer: libpng's simplified API (one png_image, header + decode), the shortest path libpng offers.
void BM_png_decode_peer_libpng_simplified(benchmark::State& state, int w, int h, int c) {
  const Picture& p = picture(w, h, c);
  std::vector<uint8_t> out(static_cast<size_t>(w) * h * c);
  for (auto _ : state) {
    png_image img{};
    img.version = PNG_IMAGE_VERSION;
    png_image_begin_read_from_memory(&img, p.png.data(), p.png.size());
    img.format = c == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
    if (!png_image_finish_read(&img, nullptr, out.data(), 0, nullptr)) state.SkipWithError(img.message);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_png_decode_gray_28x28(benchmark::State& s) { BM_png_decode(s, 28, 28, 1); }
void BM_png_decode_gray_28x28_peer_libpng(benchmark::State& s) { BM_png_decode_peer_libpng_simplified(s, 28, 28, 1); }
void BM_png_decode_rgb_32x32(benchmark::State& s) { BM_png_decode(s, 32, 32, 3); }
void BM_png_decode_rgb_32x32_peer_libpng(benchmark::State& s) { BM_png_decode_peer_libpng_simplified(s, 32, 32, 3); }
BENCHMARK(BM_png_decode_gray_28x28);
BENCHMARK(BM_png_decode_gray_28x28_peer_libpng);
BENCHMARK(BM_png_decode_rgb_32x32);
BENCHMARK(BM_png_decode_rgb_32x32_peer_libpng);

void BM_png_encode_gray_28x28(benchmark::State& state) {
  const Picture& p = picture(28, 28, 1);
  size_t bytes = 0;
  for (auto _ : state) {
    std::string png = fastnn::encode_png(p.pixels.data(), 28, 28, 1);
    bytes = png.size();
    benchmark::DoNotOptimize(png.data());
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(std::to_string(bytes) + " B out");
}

// Peer: png_image_write_to_memory (same zlib level 6 default, libpng's default filter choice).
void BM_png_encode_gray_28x28_peer_libpng(benchmark::State& state) {
  const Picture& p = picture(28, 28, 1);
  std::vector<uint8_t> buf(64 << 10);
  png_alloc_size_t size = 0;
  for (auto _ : state) {
    png_image img{};
    img.version = PNG_IMAGE_VERSION;
    img.width = 28;
    img.height = 28;
    img.format = PNG_FORMAT_GRAY;
    size = buf.size();
    if (!png_image_write_to_memory(&img, buf.data(), &size, 0, p.pixels.data(), 0, nullptr))
      state.SkipWithError(img.message);
    benchmark::DoNotOptimize(buf.data());
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(std::to_string(size) + " B out");
}
BENCHMARK(BM_png_encode_gray_28x28);
BENCHMARK(BM_png_encode_gray_28x28_peer_libpng);

}  // namespace

BENCHMARK_MAIN();
