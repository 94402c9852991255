// RandAugment / TrivialAugmentWide (pipeline/auto_augment.h) against torchvision itself, and in the
// pipeline.
//
// Ops: tests/data/auto_augment holds torchvision 0.14's own outputs (_apply_op on PIL images, made by
// make_fixtures.py there) for every op of both spaces at bins 0, 9 and 30 of 31 (and Rotate's 90
// degrees), both signs, on a 20x16 RGB photo crop, its 'L' version and a 28x28 Fashion-MNIST image;
// and the CRC-32s of every op at every bin of both policies on a procedural 57x43 RGB and 'L' image.
// Every op is held to bit-exactness: PIL's arithmetic is replicated, so a single differing byte is a
// bug (see ExactAgainstTorchvision for what each op's exactness rests on). The magnitude tables are
// compared float for float with torch's for several bin counts and image sizes.
//
// Selection: ops uniform over the 14, RandAugment's bin fixed, TrivialAugmentWide's bin uniform, the
// sign a fair coin (each within 4 standard deviations over many draws); draws a function of (seed,
// epoch, index) only. Pipeline: what the mapper writes equals the ops applied to the uint8 resample
// then normalised; eval untouched; off (or zero ops) byte-identical to the plain path; a whole
// pipeline independent of the thread count.
#include "pipeline/auto_augment.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <zlib.h>

#include "core/check.h"
#include "core/image.h"
#include "pipeline/dataset.h"
#include "pipeline/preprocess.h"
#include "pipeline/rng.h"
#include "pipeline_test_util.h"

namespace fastnn::pipeline {
namespace {

const std::string kDir = std::string(FASTNN_SOURCE_DIR) + "/tests/data/auto_augment/";

std::string read_file(const std::string& path) { return testing::read_bytes(path); }

const nlohmann::json& torchvision_fixtures() {
  static const nlohmann::json j = nlohmann::json::parse(read_file(kDir + "fixtures.json"));
  return j;
}

std::vector<uint8_t> read_png(const std::string& name, int channels, int* width, int* height) {
  const std::string bytes = read_file(kDir + name);
  ImageInfo info = read_image_info(bytes);
  std::vector<uint8_t> px(static_cast<size_t>(info.width) * info.height * channels);
  decode_image_into(bytes, channels, px.data(), px.size());
  *width = info.width;
  *height = info.height;
  return px;
}

AugmentOp op_by_name(const std::string& name) {
  for (int k = 0; k < kNumAugmentOps; ++k)
    if (name == augment_op_name(static_cast<AugmentOp>(k))) return static_cast<AugmentOp>(k);
  throw Error(str("unknown op ", name));
}

struct Case {
  AugmentOp op;
  double magnitude;
  std::string label;
  std::vector<uint8_t> expected;
};

struct Fixture {
  int width = 0, height = 0, channels = 0;
  std::vector<uint8_t> input;
  std::vector<Case> cases;
};

Fixture load(const std::string& name) {
  const nlohmann::json& j = torchvision_fixtures()["images"][name];
  Fixture f;
  f.channels = j["mode"] == "RGB" ? 3 : 1;
  f.input = read_png(name + ".png", f.channels, &f.width, &f.height);
  EXPECT_EQ(f.width, j["width"].get<int>());
  EXPECT_EQ(f.height, j["height"].get<int>());
  int ow, oh;
  const std::vector<uint8_t> tiles = read_png(name + "_out.png", f.channels, &ow, &oh);
  const size_t tile = f.input.size();
  EXPECT_EQ(tiles.size(), tile * j["cases"].size());
  size_t k = 0;
  for (const auto& c : j["cases"]) {
    Case x;
    x.op = op_by_name(c[0].get<std::string>());
    x.magnitude = c[1].get<double>();
    x.label = str(name, " ", c[0].get<std::string>(), "(", x.magnitude, ") [", c[2].get<std::string>(), " bin ",
                  c[3].is_null() ? std::string("-") : std::to_string(c[3].get<int>()), "]");
    x.expected.assign(tiles.begin() + k * tile, tiles.begin() + (k + 1) * tile);
    f.cases.push_back(std::move(x));
    ++k;
  }
  return f;
}

std::vector<uint8_t> run_op(const Fixture& f, AugmentOp op, double magnitude) {
  std::vector<uint8_t> img = f.input, scratch;
  apply_augment_op(op, magnitude, {img.data(), f.width, f.height, f.channels}, scratch);
  return img;
}

// Pixels (not bytes) that differ.
int differing_pixels(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b, int channels) {
  int n = 0;
  for (size_t i = 0; i < a.size(); i += channels) n += std::memcmp(&a[i], &b[i], channels) != 0;
  return n;
}

// Each op's exactness rests on replicating one thing:
//   Shear/Translate/Rotate  torchvision's inverse affine matrix (double, same expression order, libm's
//                           atan/tan/cos/sin), Image.rotate's round(., 15) and fast paths (0, 180, and 90
//                           / 270 on square images), and PIL's nearest sampling: pure translations in
//                           double, the rest in 16.16 fixed point. Off by one in any of these moves
//                           whole rows or columns of pixels, so no pixel may differ.
//   Brightness/Color/Contrast/Sharpness  Image.blend in C float with the factor cast to float, truncated
//                           (interpolation) or clipped (extrapolation); the luma, the mean grey's
//                           int(mean + 0.5), the SMOOTH filter's float sums in PIL's order.
//   Posterize/Solarize/AutoContrast/Equalize  integer / double lookup tables as ImageOps builds them.
TEST(AutoAugmentOps, ExactAgainstTorchvision) {
  std::map<std::string, int> cases_per_op;
  for (const char* name : {"rgb", "gray", "fmnist"}) {
    const Fixture f = load(name);
    ASSERT_GT(f.cases.size(), 80u);
    for (const Case& c : f.cases) {
      const std::vector<uint8_t> got = run_op(f, c.op, c.magnitude);
      EXPECT_EQ(differing_pixels(got, c.expected, f.channels), 0) << c.label;
      ++cases_per_op[augment_op_name(c.op)];
    }
  }
  EXPECT_EQ(cases_per_op.size(), size_t{kNumAugmentOps});
}

// Every table entry of both policies, both signs, on images of odd sides (57x43: the centre of Rotate
// and Translate falls between pixels), against the CRC-32s of torchvision's outputs (fixtures.json
// "sweep", in make_fixtures.py's order: policy, op, bin, + then - magnitude).
TEST(AutoAugmentOps, EveryBinOfBothPoliciesOnAnOddSizedImage) {
  const nlohmann::json& j = torchvision_fixtures()["sweep"];
  const int W = j["width"].get<int>(), H = j["height"].get<int>();
  for (int C : {3, 1}) {
    const nlohmann::json& crcs = j[C == 3 ? "rgb" : "gray"];
    Fixture f;
    f.width = W, f.height = H, f.channels = C;
    f.input.resize(static_cast<size_t>(W) * H * C);
    for (int y = 0; y < H; ++y)
      for (int x = 0; x < W; ++x)
        for (int c = 0; c < C; ++c)
          f.input[(static_cast<size_t>(y) * W + x) * C + c] = static_cast<uint8_t>(
              20 + ((x * x * 3 + y * 7 + c * 85 + ((x * y) % 13) * 11 + (x ^ y) * 5) % 256) * 200 / 255);
    size_t k = 0;
    int mismatches = 0;
    for (AutoAugmentPolicy p : {AutoAugmentPolicy::kRandAugment, AutoAugmentPolicy::kTrivialAugmentWide})
      for (int o = 0; o < kNumAugmentOps; ++o) {
        const AugmentOp op = static_cast<AugmentOp>(o);
        const std::vector<float> t = magnitude_table(p, op, 31, H, W);
        for (int b = 0; b < std::max<int>(1, static_cast<int>(t.size())); ++b) {
          const double m = t.empty() ? 0.0 : t[b];
          std::vector<uint8_t> data = run_op(f, op, m);
          if (augment_op_signed(op) && m != 0) {
            const std::vector<uint8_t> neg = run_op(f, op, m * -1.0);
            data.insert(data.end(), neg.begin(), neg.end());
          }
          ASSERT_LT(k, crcs.size());
          const uint32_t crc = static_cast<uint32_t>(::crc32(0, data.data(), static_cast<uInt>(data.size())));
          const uint32_t want = static_cast<uint32_t>(std::stoul(crcs[k++].get<std::string>(), nullptr, 16));
          if (crc != want && ++mismatches <= 10)
            ADD_FAILURE() << "C" << C << " " << auto_augment_name(p) << " " << augment_op_name(op) << " bin " << b
                          << " (" << m << "): output differs from torchvision's";
        }
      }
    EXPECT_EQ(k, crcs.size());
    EXPECT_EQ(mismatches, 0);
  }
}

// The fixture has teeth: a wrong sign, or a neighbouring bin's magnitude (a wrong table entry), gives
// another image for every signed op on the RGB image (Color too), except where torchvision's own op
// cannot tell them apart: Translate moves int(m) pixels (2.18 and 2.42 are both 2) and a shift by the
// whole width or more leaves nothing either way.
TEST(AutoAugmentOps, FixtureTellsSignsAndBinsApart) {
  const Fixture f = load("rgb");
  const auto tables = [&](AutoAugmentPolicy p, AugmentOp op) { return magnitude_table(p, op, 31, f.height, f.width); };
  const auto distinguishable = [&](AugmentOp op, double a, double b) {
    if (op != AugmentOp::kTranslateX && op != AugmentOp::kTranslateY) return true;
    const int size = op == AugmentOp::kTranslateX ? f.width : f.height;
    const int ia = static_cast<int>(a), ib = static_cast<int>(b);
    return ia != ib && (std::abs(ia) < size || std::abs(ib) < size);
  };
  int checked = 0;
  for (const Case& c : f.cases) {
    if (c.magnitude == 0 || c.op == AugmentOp::kIdentity) continue;
    if (augment_op_signed(c.op) && distinguishable(c.op, c.magnitude, -c.magnitude)) {
      EXPECT_NE(run_op(f, c.op, -c.magnitude), c.expected) << c.label << " with the sign flipped";
      ++checked;
    }
    for (AutoAugmentPolicy p : {AutoAugmentPolicy::kRandAugment, AutoAugmentPolicy::kTrivialAugmentWide}) {
      const std::vector<float> t = tables(p, c.op);
      for (size_t b = 0; b + 1 < t.size(); ++b) {
        const double next = (c.magnitude < 0 ? -1.0 : 1.0) * t[b + 1];
        if (std::fabs(c.magnitude) == t[b] && c.op != AugmentOp::kPosterize && c.op != AugmentOp::kSolarize &&
            distinguishable(c.op, c.magnitude, next)) {
          EXPECT_NE(run_op(f, c.op, next), c.expected) << c.label << " at the next bin's " << next;
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 60);
  // Posterize: each number of bits its own image; Solarize: thresholds with a pixel value between them.
  for (int bits = 1; bits < 8; ++bits)
    EXPECT_NE(run_op(f, AugmentOp::kPosterize, bits), run_op(f, AugmentOp::kPosterize, bits + 1)) << bits;
  EXPECT_NE(run_op(f, AugmentOp::kSolarize, 178.5), run_op(f, AugmentOp::kSolarize, 170.0));
}

// The tables against torch's: float for float (bit patterns), for bin counts that take every branch of
// torch's linspace (element by element, 16-wide blocks) and Posterize's round-half-even (9 bins).
TEST(AutoAugmentTables, EqualTorchsForEveryBinCountAndSize) {
  int compared = 0;
  for (const auto& t : torchvision_fixtures()["tables"]) {
    const AutoAugmentPolicy policy = parse_auto_augment(t["policy"].get<std::string>());
    const int bins = t["bins"].get<int>();
    const int h = t.contains("height") ? t["height"].get<int>() : 16, w = t.contains("width") ? t["width"].get<int>() : 20;
    std::set<AugmentOp> seen;
    for (const auto& [names, values] : t["ops"].items()) {
      std::stringstream ss(names);
      std::string name;
      while (std::getline(ss, name, ',')) {
        const AugmentOp op = op_by_name(name);
        seen.insert(op);
        const std::vector<float> mine = magnitude_table(policy, op, bins, h, w);
        ASSERT_EQ(mine.size(), values.size()) << name << " " << bins;
        for (size_t i = 0; i < mine.size(); ++i) {
          const std::string where = str(t["policy"].get<std::string>(), " ", name, " bins ", bins, " ", h, "x", w, " [", i, "]");
          if (values[i].is_string()) {
            const uint32_t bits = static_cast<uint32_t>(std::stoul(values[i].get<std::string>(), nullptr, 16));
            EXPECT_EQ(std::bit_cast<uint32_t>(mine[i]), bits)
                << where << ": " << mine[i] << " vs torch's " << std::bit_cast<float>(bits);
          } else {
            EXPECT_EQ(mine[i], values[i].get<int>()) << where;
          }
          ++compared;
        }
      }
    }
    EXPECT_EQ(seen.size(), 11u);  // every op with a magnitude
  }
  EXPECT_GT(compared, 1500);
}

AutoAugmentOptions options(AutoAugmentPolicy p, int num_ops = 2, int magnitude = 9, int bins = 31) {
  AutoAugmentOptions o;
  o.policy = p;
  o.num_ops = num_ops;
  o.magnitude = magnitude;
  o.magnitude_bins = bins;
  return o;
}

// |count - n p| within 4 standard deviations of Binomial(n, p).
void expect_binomial(int64_t count, int64_t n, double p, const std::string& what) {
  EXPECT_NEAR(double(count), n * p, 4 * std::sqrt(n * p * (1 - p))) << what;
}

TEST(AutoAugmentSelection, RandAugmentOpsUniformBinFixedSignsFair) {
  const AutoAugment aa(options(AutoAugmentPolicy::kRandAugment, 2, 9), 224, 224);
  const int n = 28000;
  int64_t ops[2][kNumAugmentOps] = {}, negated[kNumAugmentOps] = {}, signed_draws[kNumAugmentOps] = {};
  int64_t same_op = 0;
  AugmentStep s[AutoAugment::kMaxOps];
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(aa.draw(7, 3, static_cast<uint64_t>(i), s), 2);
    for (int k = 0; k < 2; ++k) {
      const int op = static_cast<int>(s[k].op);
      ++ops[k][op];
      const std::vector<float> t = magnitude_table(AutoAugmentPolicy::kRandAugment, s[k].op, 31, 224, 224);
      if (t.empty()) {
        ASSERT_EQ(s[k].bin, -1);
        ASSERT_EQ(s[k].magnitude, 0.0);
      } else {
        ASSERT_EQ(s[k].bin, 9);  // RandAugment: every op at the configured magnitude
        ASSERT_EQ(std::fabs(s[k].magnitude), double(t[9]));
      }
      if (augment_op_signed(s[k].op)) {
        ++signed_draws[op];
        negated[op] += s[k].negated;
        ASSERT_EQ(s[k].magnitude < 0, s[k].negated && t[9] != 0);
      } else {
        ASSERT_FALSE(s[k].negated);
      }
    }
    same_op += s[0].op == s[1].op;
  }
  for (int k = 0; k < 2; ++k)
    for (int op = 0; op < kNumAugmentOps; ++op)
      expect_binomial(ops[k][op], n, 1.0 / kNumAugmentOps, str("op ", op, " at position ", k));
  for (int op = 0; op < kNumAugmentOps; ++op)
    if (signed_draws[op]) expect_binomial(negated[op], signed_draws[op], 0.5, str("sign of op ", op));
  expect_binomial(same_op, n, 1.0 / kNumAugmentOps, "the two ops independent");  // torchvision may repeat an op
}

TEST(AutoAugmentSelection, TrivialAugmentWideOneOpUniformBin) {
  const AutoAugment aa(options(AutoAugmentPolicy::kTrivialAugmentWide, 5, 3), 32, 32);  // num_ops, magnitude: unused
  const int n = 28000;
  int64_t ops[kNumAugmentOps] = {}, bins[31] = {}, with_table = 0, negated = 0, signed_draws = 0;
  AugmentStep s[AutoAugment::kMaxOps];
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(aa.draw(11, 0, static_cast<uint64_t>(i), s), 1);
    ++ops[static_cast<int>(s[0].op)];
    const std::vector<float> t = magnitude_table(AutoAugmentPolicy::kTrivialAugmentWide, s[0].op, 31, 32, 32);
    if (!t.empty()) {
      ASSERT_GE(s[0].bin, 0);
      ASSERT_LT(s[0].bin, 31);
      ASSERT_EQ(std::fabs(s[0].magnitude), double(t[s[0].bin]));
      ++bins[s[0].bin];
      ++with_table;
    }
    if (augment_op_signed(s[0].op)) ++signed_draws, negated += s[0].negated;
  }
  for (int op = 0; op < kNumAugmentOps; ++op) expect_binomial(ops[op], n, 1.0 / kNumAugmentOps, str("op ", op));
  for (int b = 0; b < 31; ++b) expect_binomial(bins[b], with_table, 1.0 / 31, str("bin ", b));
  expect_binomial(negated, signed_draws, 0.5, "sign");
}

TEST(AutoAugmentSelection, DrawsAreAFunctionOfSeedEpochAndIndex) {
  const AutoAugment aa(options(AutoAugmentPolicy::kRandAugment, 3), 28, 28);
  AugmentStep a[AutoAugment::kMaxOps], b[AutoAugment::kMaxOps];
  auto same = [&](int n) {
    for (int i = 0; i < n; ++i)
      if (a[i].op != b[i].op || a[i].magnitude != b[i].magnitude) return false;
    return true;
  };
  int differ_epoch = 0, differ_seed = 0;
  for (uint64_t i = 0; i < 200; ++i) {
    aa.draw(5, 2, i, a);
    aa.draw(5, 2, i, b);
    ASSERT_TRUE(same(3));
    aa.draw(5, 3, i, b);
    differ_epoch += !same(3);
    aa.draw(6, 2, i, b);
    differ_seed += !same(3);
  }
  EXPECT_GT(differ_epoch, 180);  // (1/14 · ...)^3 chance of a repeat
  EXPECT_GT(differ_seed, 180);
  // The stream is its own: switching auto augmentation on changes no crop, mirror or erasing draw.
  SampleRng crop(5, 2, 0, RngStream::kAugment), mine(5, 2, 0, RngStream::kAutoAugment);
  EXPECT_NE(crop.next_u32(), mine.next_u32());
  // Applying: the same sample gives the same bytes.
  std::vector<uint8_t> img1(28 * 28), scratch;
  for (size_t i = 0; i < img1.size(); ++i) img1[i] = static_cast<uint8_t>(i * 7);
  std::vector<uint8_t> img2 = img1;
  aa.apply({img1.data(), 28, 28, 1}, 5, 2, 17, scratch);
  aa.apply({img2.data(), 28, 28, 1}, 5, 2, 17, scratch);
  EXPECT_EQ(img1, img2);
}

TEST(AutoAugmentConfig, NamesAndRanges) {
  EXPECT_EQ(parse_auto_augment(""), AutoAugmentPolicy::kNone);
  EXPECT_EQ(parse_auto_augment("randaugment"), AutoAugmentPolicy::kRandAugment);
  EXPECT_EQ(parse_auto_augment("trivialaugmentwide"), AutoAugmentPolicy::kTrivialAugmentWide);
  for (const char* bad : {"rand-m9-mstd0.5", "RandAugment", "autoaugment", "augmix"}) {
    try {
      parse_auto_augment(bad);
      ADD_FAILURE() << bad;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("randaugment, trivialaugmentwide"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(validate_auto_augment(options(AutoAugmentPolicy::kRandAugment, 2, 31, 31)), ConfigError);
  EXPECT_THROW(validate_auto_augment(options(AutoAugmentPolicy::kRandAugment, 2, -1)), ConfigError);
  EXPECT_THROW(validate_auto_augment(options(AutoAugmentPolicy::kRandAugment, -1)), ConfigError);
  EXPECT_THROW(validate_auto_augment(options(AutoAugmentPolicy::kTrivialAugmentWide, 2, 9, 1)), ConfigError);
  EXPECT_NO_THROW(validate_auto_augment(options(AutoAugmentPolicy::kRandAugment, 0, 30, 31)));
  EXPECT_NO_THROW(validate_auto_augment(options(AutoAugmentPolicy::kTrivialAugmentWide, 2, 40, 31)));  // unused
  EXPECT_NO_THROW(validate_auto_augment(options(AutoAugmentPolicy::kNone, -5, -5, -5)));
}

// ---- In the pipeline ----------------------------------------------------------------------------

using testing::image_example;
using testing::ScratchDir;

std::vector<uint8_t> photo_like(int w, int h, int c, uint32_t seed) {
  std::vector<uint8_t> px(size_t(w) * h * c);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int k = 0; k < c; ++k) {
        double v = 120 + 70 * std::sin(0.05 * x * (k + 1) + 0.03 * y + seed) + 30 * std::sin(0.3 * x + 0.2 * y * k);
        px[(size_t(y) * w + x) * c + k] = uint8_t(std::clamp(v, 0.0, 255.0));
      }
  return px;
}

std::vector<uint8_t> map_bytes(const PreprocessConfig& c, const std::string& record, uint64_t index, int worker = 0) {
  auto m = make_preprocessor(c);
  m->prepare(4);
  std::vector<uint8_t> out(m->spec().sample_bytes());
  StageTimes t;
  SampleContext ctx;
  ctx.seed = 5;
  ctx.epoch = 1;
  ctx.index = index;
  ctx.worker = worker;
  ctx.times = &t;
  int32_t label;
  m->map(record, ctx, out.data(), &label);
  return out;
}

// The mapper's output with auto augmentation = the ops (drawn for that sample) applied to the uint8
// image the resampler makes from the sample's own crop, then converted as any sample: for every dtype
// and layout, 1 and 3 channels, a resizing and a copying preset.
TEST(AutoAugmentPipeline, MapperAppliesTheOpsToTheUint8ResampleThenNormalises) {
  for (const char* preset : {"inception", "cifarnet"})
    for (int C : {1, 3})
      for (DType dt : {DType::kF32, DType::kF16, DType::kU8})
        for (Layout layout : {Layout::kNHWC, Layout::kNCHW}) {
          SCOPED_TRACE(str(preset, " C", C, " ", dtype_name(dt), " ", layout_name(layout)));
          const int iw = 61, ih = 45;
          const std::vector<uint8_t> px = photo_like(iw, ih, C, 3);
          const std::string rec = image_example(encode_png(px.data(), iw, ih, C), "png", 1);
          PreprocessConfig c;
          c.preset = preset;
          c.channels = C;
          c.height = 24;
          c.width = 32;
          c.dtype = dt;
          c.layout = layout;
          c.auto_augment = options(AutoAugmentPolicy::kTrivialAugmentWide);
          const PreprocessConfig r = resolve_preset(c);
          OutputFormat u8 = output_format(r);
          u8.spec.dtype = DType::kU8;
          u8.spec.layout = Layout::kNHWC;
          const AutoAugment aa(c.auto_augment, 24, 32);
          int changed = 0;
          for (uint64_t index = 0; index < 12; ++index) {
            const SamplePlan plan = plan_sample(r, iw, ih, 5, 1, index);
            Resampler rs;
            std::vector<uint8_t> img(24 * 32 * C), plain(output_format(r).spec.sample_bytes()), scratch;
            rs.run({px.data(), iw, ih, C, size_t(iw) * C}, plan.window, plan.flip, plan.color, u8, img.data());
            const std::vector<uint8_t> before = img;
            aa.apply({img.data(), 32, 24, C}, 5, 1, index, scratch);
            changed += img != before;
            std::vector<uint8_t> expected(output_format(r).spec.sample_bytes());
            rs.run({img.data(), 32, 24, C, size_t(32) * C}, {0, 0, 32, 24}, false, {}, output_format(r), expected.data());
            EXPECT_EQ(map_bytes(c, rec, index, static_cast<int>(index % 4)), expected) << "index " << index;
          }
          EXPECT_GE(changed, 6);  // most samples get an op that changes something
          // Evaluation images are never augmented: the eval mapper is the plain path.
          PreprocessConfig e = c, e_off = c;
          e.train = e_off.train = false;
          e_off.auto_augment = {};
          EXPECT_EQ(map_bytes(e, rec, 3), map_bytes(e_off, rec, 3));
        }
}

// Off, the path is today's; RandAugment with zero ops on a preset that copies pixels (lenet: no
// resize, so no rounding to uint8 in between) writes the same bytes as off.
TEST(AutoAugmentPipeline, ZeroOpsOnACopyingPresetEqualsOff) {
  std::vector<uint8_t> px = photo_like(30, 26, 1, 9);
  const std::string rec = image_example(encode_png(px.data(), 30, 26, 1), "png", 2);
  for (DType dt : {DType::kF32, DType::kF16, DType::kU8}) {
    PreprocessConfig off;
    off.preset = "lenet";
    off.dtype = dt;
    PreprocessConfig zero = off;
    zero.auto_augment = options(AutoAugmentPolicy::kRandAugment, 0);
    PreprocessConfig two = off;
    two.auto_augment = options(AutoAugmentPolicy::kRandAugment, 2, 30);
    int differs = 0;
    for (uint64_t i = 0; i < 8; ++i) {
      EXPECT_EQ(map_bytes(zero, rec, i), map_bytes(off, rec, i)) << dtype_name(dt);
      differs += map_bytes(two, rec, i) != map_bytes(off, rec, i);
    }
    EXPECT_GE(differs, 4);
  }
}

TEST(AutoAugmentPipeline, PipelineIndependentOfThreadCount) {
  ScratchDir dir("auto-augment-pipeline");
  const std::string path = dir.file("jpeg.tfrecord");
  {
    TFRecordWriter w(path);
    for (int i = 0; i < 20; ++i) {
      const int wd = 60 + 7 * i, ht = 50 + 5 * (i % 4);
      auto px = photo_like(wd, ht, 3, uint32_t(i));
      w.write(image_example(encode_jpeg(px.data(), wd, ht, 3, 85), "jpeg", i));
    }
    w.close();
  }
  auto run = [&](int threads, AutoAugmentPolicy policy) {
    PreprocessConfig c;
    c.preset = "inception";
    c.height = c.width = 40;
    c.auto_augment = options(policy);
    c.erase.prob = 0.5f;  // erasing after the ops, from its own stream
    Dataset ds = Dataset::from_files({path});
    ds.shuffle(8, 3).repeat(2).map_and_batch(make_preprocessor(c), 5, 2, false).prefetch(2);
    DatasetOptions o;
    o.num_threads = threads;
    o.seed = 99;
    ds.with_options(o);
    std::vector<std::vector<uint8_t>> out;
    auto it = ds.make_iterator();
    BatchHandle b;
    while (it->next(&b)) {
      auto* d = static_cast<const uint8_t*>(b->data());
      out.emplace_back(d, d + b->bytes());
    }
    return out;
  };
  for (AutoAugmentPolicy p : {AutoAugmentPolicy::kRandAugment, AutoAugmentPolicy::kTrivialAugmentWide}) {
    const auto one = run(1, p);
    EXPECT_EQ(one.size(), 8u);
    EXPECT_EQ(run(3, p), one) << auto_augment_name(p);
    EXPECT_NE(run(1, AutoAugmentPolicy::kNone), one);
  }
}

}  // namespace
}  // namespace fastnn::pipeline
