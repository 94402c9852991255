#include "trainer/inference/predict_inputs.h"

#include <algorithm>
#include <filesystem>

#include "core/check.h"
#include "core/example.h"
#include "core/image.h"
#include "core/input_file.h"
#include "core/manifest.h"
#include "core/tfrecord.h"
#include "pipeline/shard_plan.h"

namespace fastnn::inference {
namespace fs = std::filesystem;
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

bool is_image_name(const fs::path& p) {
  const std::string e = lower(p.extension().string());
  return e == ".jpg" || e == ".jpeg" || e == ".png";
}

bool is_tfrecord_name(const fs::path& p) {
  const std::string n = lower(p.filename().string());
  return ends_with(n, ".tfrecord") || ends_with(n, ".tfrecord.gz") || ends_with(n, ".tfrecord.zz") ||
         ends_with(n, ".tfrecords") || is_shard_file_name(p.filename().string());
}

void add_shard_set(const std::string& dir, const std::string& split, std::vector<PredictInput>* out) {
  const Manifest m = read_manifest(dir);
  std::string s = split;
  if (s.empty()) s = m.find_split("validation") ? "validation" : "test";
  if (!m.find_split(s)) throw ConfigError(str(dir, "/manifest.json has no split '", s, "' (choose one with --split)"));
  for (const pipeline::ShardFile& f : pipeline::file_list_from_manifest(dir, s).files)
    out->push_back({PredictInput::Kind::kTFRecord, f.path, f.records});
}

void add_image_folder(const std::string& dir, std::vector<PredictInput>* out) {
  std::vector<std::string> found;
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, fs::directory_options::none, ec), end;
  if (ec) throw IoError(str(dir, ": cannot list the folder: ", ec.message()));
  for (; it != end; it.increment(ec)) {
    if (ec) throw IoError(str(dir, ": cannot list the folder: ", ec.message()));
    const fs::path& p = it->path();
    if (p.filename().string().rfind('.', 0) == 0) {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file() && is_image_name(p)) found.push_back(p.string());
  }
  if (found.empty()) throw ConfigError(str(dir, " holds no image file (.jpg, .jpeg, .png) and no manifest.json"));
  std::sort(found.begin(), found.end());
  for (std::string& p : found) out->push_back({PredictInput::Kind::kImage, std::move(p), 1});
}

}  // namespace

std::vector<PredictInput> resolve_inputs(const std::vector<std::string>& args, const std::string& split) {
  std::vector<PredictInput> out;
  for (const std::string& a : args) {
    std::error_code ec;
    const fs::file_status st = fs::status(a, ec);
    if (ec || !fs::exists(st)) throw IoError(str(a, ": no such file or folder"));
    if (fs::is_directory(st)) {
      if (fs::exists(fs::path(a) / kManifestFileName))
        add_shard_set(a, split, &out);
      else
        add_image_folder(a, &out);
    } else if (is_tfrecord_name(a)) {
      out.push_back({PredictInput::Kind::kTFRecord, a, -1});
    } else {
      out.push_back({PredictInput::Kind::kImage, a, 1});
    }
  }
  if (out.empty()) throw ConfigError("no input to predict on (give --input)");
  return out;
}

uint64_t known_total(const std::vector<PredictInput>& inputs) {
  uint64_t n = 0;
  for (const PredictInput& i : inputs) {
    if (i.records < 0) return 0;
    n += static_cast<uint64_t>(i.records);
  }
  return n;
}

std::string image_example(const std::string& bytes) {
  const ImageFormat f = detect_image_format(bytes);
  ExampleBuilder b;
  b.add_bytes(keys::kImageEncoded, bytes);
  b.add_bytes(keys::kImageFormat, f == ImageFormat::kUnknown ? std::string_view("unknown") : image_format_name(f));
  b.add_int64(keys::kLabel, 0);
  return b.serialize();
}

struct InputStream::Impl {
  std::vector<PredictInput> inputs;
  size_t next_input = 0;
  std::unique_ptr<TFRecordReader> reader;
};

InputStream::InputStream(std::vector<PredictInput> inputs) : impl_(std::make_unique<Impl>()) {
  impl_->inputs = std::move(inputs);
}
InputStream::~InputStream() = default;

bool InputStream::next(InputItem* item) {
  Impl& s = *impl_;
  for (;;) {
    if (s.reader) {
      std::string_view rec;
      if (s.reader->next(&rec)) {
        item->path = s.reader->name();
        item->record = static_cast<int64_t>(s.reader->record_index());
        item->bytes.assign(rec);
        item->error.clear();
        return true;
      }
      s.reader.reset();
    }
    if (s.next_input >= s.inputs.size()) return false;
    const PredictInput& in = s.inputs[s.next_input++];
    if (in.kind == PredictInput::Kind::kTFRecord) {
      s.reader = std::make_unique<TFRecordReader>(in.path, TFRecordReaderOptions{.compression = detect_compression(in.path)});
      continue;
    }
    item->path = in.path;
    item->record = -1;
    item->error.clear();
    item->bytes.clear();
    try {
      item->bytes = image_example(read_regular_file(in.path, kMaxImageFileBytes));
    } catch (const Error& e) {
      item->error = e.what();
    }
    return true;
  }
}

}  // namespace fastnn::inference
