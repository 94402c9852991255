#include "trainer/inference/predict_inputs.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/ascii.h"
#include "core/base64.h"
#include "core/check.h"
#include "core/example.h"
#include "core/image.h"
#include "core/folder_walk.h"
#include "core/input_file.h"
#include "core/line_reader.h"
#include "core/manifest.h"
#include "core/tfrecord.h"
#include "pipeline/shard_plan.h"

namespace fastnn::inference {
namespace fs = std::filesystem;
namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

bool is_image_name(const fs::path& p) {
  const std::string e = ascii_lower(p.extension().string());
  return e == ".jpg" || e == ".jpeg" || e == ".png";
}

bool is_tsv_name(const fs::path& p) { return ends_with(ascii_lower(p.filename().string()), ".tsv"); }

bool all_digits(std::string_view f) {
  return !f.empty() && f.size() <= 9 && std::all_of(f.begin(), f.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// One base64-TSV line into *item (bytes, or error).
void tsv_item(std::string_view line, InputItem* item) {
  const size_t tab = line.find('\t');
  if (tab == std::string_view::npos || line.find('\t', tab + 1) != std::string_view::npos) {
    item->error = "expected two tab-separated fields: base64 image and label";
    return;
  }
  std::string_view a = line.substr(0, tab), b = line.substr(tab + 1);
  if (all_digits(a) && !all_digits(b)) std::swap(a, b);
  if (!all_digits(b)) {
    item->error = "no label field (decimal digits) beside the base64 image";
    return;
  }
  try {
    item->bytes = image_example(base64_decode(a), std::stoll(std::string(b)));
  } catch (const Error& e) {
    item->error = e.what();
  }
}

bool is_tfrecord_name(const fs::path& p) {
  const std::string n = ascii_lower(p.filename().string());
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

// convert's walk (core/folder_walk.h): linked folders followed once, an image-named entry that is not a
// readable file kept as a bad input (reported, never skipped in silence).
void add_image_folder(const std::string& dir, std::vector<PredictInput>* out) {
  FolderWalk walked;
  FolderWalker([](const std::string& name) { return is_image_name(name); }, "not an image name").walk(dir, &walked);
  if (walked.files.empty()) throw ConfigError(str(dir, " holds no image file (.jpg, .jpeg, .png) and no manifest.json"));
  for (WalkedFile& f : walked.files) out->push_back({PredictInput::Kind::kImage, std::move(f.path), 1, std::move(f.problem)});
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
    } else if (is_tsv_name(a)) {
      out.push_back({PredictInput::Kind::kBase64Tsv, a, -1});
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

std::string image_example(const std::string& bytes, int64_t label) {
  const ImageFormat f = detect_image_format(bytes);
  ExampleBuilder b;
  b.add_bytes(keys::kImageEncoded, bytes);
  b.add_bytes(keys::kImageFormat, f == ImageFormat::kUnknown ? std::string_view("unknown") : image_format_name(f));
  b.add_int64(keys::kLabel, label);
  return b.serialize();
}

struct InputStream::Impl {
  std::vector<PredictInput> inputs;
  size_t next_input = 0;
  std::unique_ptr<TFRecordReader> reader;
  std::unique_ptr<LineReader> tsv;  // through core/input_file: a FIFO named *.tsv is refused, not waited on
  std::string line;
};

InputStream::InputStream(std::vector<PredictInput> inputs) : impl_(std::make_unique<Impl>()) {
  impl_->inputs = std::move(inputs);
}
InputStream::~InputStream() = default;

bool InputStream::next(InputItem* item, bool content) {
  Impl& s = *impl_;
  for (;;) {
    if (s.reader) {
      std::string_view rec;
      if (s.reader->next(&rec)) {
        item->path = s.reader->name();
        item->record = static_cast<int64_t>(s.reader->record_index());
        item->line = -1;
        if (content) item->bytes.assign(rec);
        else item->bytes.clear();
        item->error.clear();
        return true;
      }
      s.reader.reset();
    }
    if (s.tsv) {
      while (s.tsv->next(&s.line)) {
        if (s.line.empty()) continue;
        item->path = s.tsv->path();
        item->record = -1;
        item->line = s.tsv->line_number();
        item->error.clear();
        item->bytes.clear();
        if (content) tsv_item(s.line, item);
        return true;
      }
      s.tsv.reset();
    }
    if (s.next_input >= s.inputs.size()) return false;
    const PredictInput& in = s.inputs[s.next_input++];
    if (in.kind == PredictInput::Kind::kBase64Tsv) {
      s.tsv = std::make_unique<LineReader>(in.path, kMaxTsvLineBytes);
      continue;
    }
    if (in.kind == PredictInput::Kind::kTFRecord) {
      s.reader = std::make_unique<TFRecordReader>(in.path, TFRecordReaderOptions{.compression = detect_compression(in.path)});
      continue;
    }
    item->path = in.path;
    item->record = -1;
    item->line = -1;
    item->error = in.problem;
    item->bytes.clear();
    if (!content || !in.problem.empty()) return true;
    try {
      item->bytes = image_example(read_regular_file(in.path, kMaxImageFileBytes));
    } catch (const Error& e) {
      item->error = e.what();
    }
    return true;
  }
}

}  // namespace fastnn::inference
