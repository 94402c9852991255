// `fastnn inspect FILE [--limit N] [--json] [--compression C]`: prints the tf.train.Example records of
// a TFRecord file, every key with its type and values. Bytes values are summarised (an image as
// format, dimensions and size; short printable text quoted). Human output by default; --json prints
// one JSON object per record (JSON lines).
// A checkpoint (a directory of checkpoints, a prefix "<dir>/ckpt-<step>" or any of its files) is
// verified and described instead: step, files, arrays, and row-partitioned arrays with the row range of
// each shard file (trainer/checkpoint/checkpoint_summary.h); --json prints it as one object. So is a
// TensorFlow checkpoint (V1 or V2, named as core/tf_checkpoint/tf_checkpoint.h says): its tensors'
// names, dtypes, shapes and bytes, every checksum verified (trainer/checkpoint/tf_checkpoint_summary.h).
#include <cstdio>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/check.h"
#include "core/example.h"
#include "core/image.h"
#include "core/name_escape.h"
#include "core/tf_checkpoint/tf_checkpoint.h"
#include "core/tfrecord.h"
#include "trainer/checkpoint/checkpoint_manager.h"
#include "trainer/checkpoint/checkpoint_summary.h"
#include "trainer/checkpoint/tf_checkpoint_summary.h"

namespace fastnn::cli {
namespace {

constexpr size_t kMaxListedValues = 16;
constexpr size_t kMaxQuotedBytes = 64;

bool printable(std::string_view s) {
  for (unsigned char c : s)
    if (c < 0x20 || c > 0x7e) return false;
  return true;
}

const char* kind_name(FeatureView::Kind k) {
  switch (k) {
    case FeatureView::Kind::kBytes: return "bytes";
    case FeatureView::Kind::kFloat: return "float";
    case FeatureView::Kind::kInt64: return "int64";
    default: return "empty";
  }
}

// An image's summary, or null when the bytes are not a readable image.
nlohmann::json image_summary(std::string_view bytes) {
  if (detect_image_format(bytes) == ImageFormat::kUnknown) return nullptr;
  try {
    ImageInfo info = read_image_info(bytes);
    return {{"format", image_format_name(info.format)},
            {"width", info.width},
            {"height", info.height},
            {"channels", info.channels}};
  } catch (const FormatError& e) {
    return {{"format", image_format_name(detect_image_format(bytes))}, {"error", e.what()}};
  }
}

nlohmann::json bytes_json(std::string_view v) {
  if (v.size() <= kMaxQuotedBytes && printable(v)) return std::string(v);
  nlohmann::json j = {{"size", v.size()}};
  if (auto img = image_summary(v); !img.is_null()) j["image"] = img;
  return j;
}

nlohmann::json feature_json(const FeatureView& f) {
  nlohmann::json values = nlohmann::json::array();
  switch (f.kind()) {
    case FeatureView::Kind::kBytes:
      for (auto v : f.bytes_values()) values.push_back(bytes_json(v));
      break;
    case FeatureView::Kind::kInt64:
      for (auto v : f.int64_values()) values.push_back(v);
      break;
    case FeatureView::Kind::kFloat:
      for (auto v : f.float_values()) values.push_back(v);
      break;
    default: break;
  }
  return {{"type", kind_name(f.kind())}, {"values", values}};
}

std::string bytes_text(std::string_view v) {
  if (v.size() <= kMaxQuotedBytes && printable(v)) return "\"" + std::string(v) + "\"";
  auto img = image_summary(v);
  if (img.is_null()) return std::to_string(v.size()) + " bytes";
  if (img.contains("error"))
    return str(img["format"].get<std::string>(), " (unreadable: ", img["error"].get<std::string>(), "), ",
               v.size(), " bytes");
  return str(img["format"].get<std::string>(), " ", img["width"].get<int>(), "x", img["height"].get<int>(), "x",
             img["channels"].get<int>(), ", ", v.size(), " bytes");
}

std::string feature_text(const FeatureView& f) {
  std::string out = "[";
  size_t n = 0, total = 0;
  auto add = [&](const std::string& s) {
    ++total;
    if (n >= kMaxListedValues) return;
    out += (n++ ? ", " : "") + s;
  };
  switch (f.kind()) {
    case FeatureView::Kind::kBytes:
      for (auto v : f.bytes_values()) add(bytes_text(v));
      break;
    case FeatureView::Kind::kInt64:
      for (auto v : f.int64_values()) add(std::to_string(v));
      break;
    case FeatureView::Kind::kFloat:
      for (auto v : f.float_values()) add(str(v));
      break;
    default: break;
  }
  if (total > n) out += str(", ... (", total, " values)");
  return out + "]";
}

struct InspectOptions {
  std::string file;
  int64_t limit = 10;
  bool json = false;
  std::string compression = "auto";
};

// A directory, a checkpoint file name, or a prefix whose meta exists.
bool is_checkpoint(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return true;
  return checkpoint::parse_checkpoint_name(std::filesystem::path(path).filename().string()).has_value() &&
         (std::filesystem::exists(path, ec) || std::filesystem::exists(checkpoint::meta_path(path), ec));
}

void run_inspect(const InspectOptions& o) {
  if (const auto tf = tf_checkpoint::find_tf_checkpoint(o.file)) {
    const tf_checkpoint::TfCheckpoint ck = tf_checkpoint::open_tf_checkpoint(*tf);
    if (o.json)
      std::printf("%s\n", checkpoint::tf_checkpoint_summary_json(ck).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    else
      std::fputs(checkpoint::tf_checkpoint_summary_text(ck).c_str(), stdout);
    return;
  }
  if (is_checkpoint(o.file)) {
    const checkpoint::LoadedCheckpoint ck = checkpoint::load_checkpoint(o.file);
    if (o.json)
      std::printf("%s\n", checkpoint::checkpoint_summary_json(ck).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    else
      std::fputs(checkpoint::checkpoint_summary_text(ck).c_str(), stdout);
    return;
  }
  TFRecordReaderOptions ro;
  ro.compression = o.compression == "auto" ? detect_compression(o.file) : parse_compression(o.compression);
  TFRecordReader reader(o.file, ro);
  std::string_view record;
  int64_t shown = 0;
  bool more = false;
  while (reader.next(&record)) {
    if (o.limit > 0 && shown == o.limit) {
      more = true;
      break;
    }
    ++shown;
    if (o.json) {
      nlohmann::json features = nlohmann::json::object();
      for_each_feature(record, [&](std::string_view key, const FeatureView& f) {
        features[escape_name(key)] = feature_json(f);  // keys of a hostile record need not be UTF-8
      });
      nlohmann::json j = {{"index", reader.record_index()},
                          {"offset", reader.record_offset()},
                          {"size", record.size()},
                          {"features", features}};
      // Display only: any text that is still not UTF-8 is replaced, never an "internal error".
      std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
      continue;
    }
    std::printf("record %llu (offset %llu, %zu bytes)\n", static_cast<unsigned long long>(reader.record_index()),
                static_cast<unsigned long long>(reader.record_offset()), record.size());
    for_each_feature(record, [&](std::string_view key, const FeatureView& f) {
      std::printf("  %-28.*s %-6s %s\n", static_cast<int>(key.size()), key.data(), kind_name(f.kind()),
                  feature_text(f).c_str());
    });
  }
  if (!o.json) {
    if (more)
      std::printf("(showing the first %lld records; --limit 0 shows all)\n", static_cast<long long>(shown));
    else
      std::printf("%lld records, compression %s\n", static_cast<long long>(shown), compression_name(ro.compression));
  }
}

}  // namespace

void add_inspect_command(CLI::App& app) {
  auto opts = std::make_shared<InspectOptions>();
  auto* cmd = app.add_subcommand("inspect", "Print the tf.train.Example records of a TFRecord file, or describe a checkpoint (fastnn's or TensorFlow's)");
  cmd->add_option("file", opts->file,
                  "TFRecord file, or a checkpoint: fastnn's (directory, <dir>/ckpt-<step> prefix or one of its files) "
                  "or TensorFlow's (V2 prefix, V1 file, folder with its `checkpoint` file)")
      ->required()
      ->check(CLI::ExistingPath | CLI::Validator(
                                      [](std::string& p) {
                                        std::error_code ec;
                                        return std::filesystem::exists(checkpoint::meta_path(p), ec) ||
                                                       tf_checkpoint::find_tf_checkpoint(p)
                                                   ? std::string()
                                                   : "no such file or checkpoint prefix: " + p;
                                      },
                                      "PREFIX", "checkpoint prefix"));
  cmd->add_option("--limit", opts->limit, "Records to print (0 = all)")->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd->add_flag("--json", opts->json, "One JSON object per record (JSON lines)");
  cmd->add_option("--compression", opts->compression, "auto (detect), none, gzip or zlib")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "none", "gzip", "zlib", "GZIP", "ZLIB", "NONE"}));
  cmd->callback([opts] { run_inspect(*opts); });
}

}  // namespace fastnn::cli
