#include "trainer/inference/predict.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/ascii.h"
#include "core/check.h"
#include "core/logging.h"
#include "core/progress.h"
#include "trainer/inference/input_mismatch.h"

namespace fastnn::inference {
namespace {

std::string prob(double p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", p);
  return buf;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q += '"';
    q += c;
  }
  return q + '"';
}

const std::string* name_of(int id, const std::vector<std::string>& names) {
  return id >= 0 && static_cast<size_t>(id) < names.size() ? &names[static_cast<size_t>(id)] : nullptr;
}

}  // namespace

PredictFormat parse_predict_format(const std::string& name) {
  if (name == "jsonl" || name == "json") return PredictFormat::kJsonl;
  if (name == "csv") return PredictFormat::kCsv;
  throw UsageError(str("--format \"", name, "\" is not one of: jsonl, csv"));
}

PredictFormat predict_output_format(const std::string& format, const std::string& output) {
  const std::string ext = ascii_lower(std::filesystem::path(output).extension().string());
  std::optional<PredictFormat> named;
  if (ext == ".csv") named = PredictFormat::kCsv;
  if (ext == ".jsonl" || ext == ".json" || ext == ".ndjson") named = PredictFormat::kJsonl;
  if (!format.empty()) {
    const PredictFormat given = parse_predict_format(format);
    if (named && *named != given)
      throw UsageError(str("-o ", output, " names a ", ext, " file but --format is ", format,
                           ": drop --format, or name the file to match"));
    return given;
  }
  if (named) return *named;
  if (!ext.empty())
    throw UsageError(str("-o ", output, ": predict writes jsonl or csv and ", ext,
                         " says neither; name the file .jsonl or .csv, or give --format"));
  return PredictFormat::kJsonl;
}

std::string prediction_json_fields(const Prediction& p, const std::vector<std::string>& names) {
  std::string s = "\"label\":" + std::to_string(p.label());
  if (const std::string* n = name_of(p.label(), names))
    s += ",\"name\":" + nlohmann::json(*n).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  s += ",\"topk\":[";
  for (size_t i = 0; i < p.topk.size(); ++i) {
    if (i) s += ',';
    s += '[' + std::to_string(p.topk[i].first) + ',' + prob(p.topk[i].second) + ']';
  }
  return s + ']';
}

std::string prediction_json(const Prediction& p, const std::vector<std::string>& names) {
  // Built by hand to keep the key order stable and the probabilities at full precision.
  std::string s = "{\"source\":" + nlohmann::json(p.path).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (p.record >= 0) s += ",\"record\":" + std::to_string(p.record) + ",\"target\":" + std::to_string(p.target);
  if (p.line >= 0) s += ",\"line\":" + std::to_string(p.line) + ",\"target\":" + std::to_string(p.target);
  return s + ',' + prediction_json_fields(p, names) + '}';
}

std::string csv_header() { return "source,record,target,label,name,topk"; }

std::string prediction_csv(const Prediction& p, const std::vector<std::string>& names) {
  std::string s = csv_field(p.path) + ',';
  if (p.record >= 0) s += std::to_string(p.record) + ',' + std::to_string(p.target);
  else if (p.line >= 0) s += std::to_string(p.line) + ',' + std::to_string(p.target);
  else s += ',';
  s += ',' + std::to_string(p.label()) + ',';
  if (const std::string* n = name_of(p.label(), names)) s += csv_field(*n);
  s += ',';
  for (size_t i = 0; i < p.topk.size(); ++i) {
    if (i) s += ' ';
    s += std::to_string(p.topk[i].first) + ':' + prob(p.topk[i].second);
  }
  return s;
}

namespace {

// What one rank made of its batch in a round: stderr notes for skipped inputs, output lines and
// embeddings in input order, or the error that ended it. Serialized to travel to rank 0.
struct RoundResult {
  std::string error;
  std::vector<std::string> notes, lines;
  std::vector<float> embeddings;  // lines.size() rows when embeddings are written

  std::string encode() const {
    std::string b;
    auto put = [&b](const std::string& s) {
      const uint64_t n = s.size();
      b.append(reinterpret_cast<const char*>(&n), sizeof n);
      b += s;
    };
    put(error);
    put(std::to_string(notes.size()));
    for (const std::string& n : notes) put(n);
    put(std::to_string(lines.size()));
    for (const std::string& l : lines) put(l);
    put(std::string(reinterpret_cast<const char*>(embeddings.data()), embeddings.size() * sizeof(float)));
    return b;
  }
  static RoundResult decode(const std::string& b) {
    RoundResult r;
    if (b.empty()) return r;  // a rank with no batch this round
    size_t at = 0;
    auto get = [&b, &at]() {
      uint64_t n = 0;
      FASTNN_CHECK(at + sizeof n <= b.size(), "predict: truncated round result");
      std::memcpy(&n, b.data() + at, sizeof n);
      at += sizeof n;
      FASTNN_CHECK(n <= b.size() - at, "predict: truncated round result");
      std::string s = b.substr(at, n);
      at += n;
      return s;
    };
    r.error = get();
    for (size_t i = 0, n = std::stoull(get()); i < n; ++i) r.notes.push_back(get());
    for (size_t i = 0, n = std::stoull(get()); i < n; ++i) r.lines.push_back(get());
    const std::string e = get();
    r.embeddings.resize(e.size() / sizeof(float));
    if (!r.embeddings.empty())  // memcpy with a null pointer is undefined even for 0 bytes
      std::memcpy(r.embeddings.data(), e.data(), r.embeddings.size() * sizeof(float));
    return r;
  }
};

std::string skip_note(const InputItem& it, const std::string& why) {
  if (it.line >= 0) return str("fastnn: skipping ", it.path, ":", it.line, ": ", why);
  if (it.record < 0) return str("fastnn: skipping ", it.path, ": ", why);
  return str("fastnn: skipping ", it.path, ": record ", it.record, ": ", why);
}

}  // namespace

PredictSummary run_predict(Predictor& predictor, const std::vector<PredictInput>& inputs, const PredictRunOptions& o,
                           const std::function<void(const std::string&)>& sink, Communicator* comm) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<std::string>& names = predictor.model().class_names;
  const int world = comm ? comm->world_size() : 1, rank = comm ? comm->rank() : 0;
  const bool writer = rank == 0;
  Progress progress("predict", known_total(inputs), "inputs");
  progress.set_silent(!o.progress || !writer);
  PredictSummary sum;
  if (o.format == PredictFormat::kCsv && writer) sink(csv_header());
  InputStream stream(inputs);
  const size_t batch = static_cast<size_t>(predictor.batch_size());
  std::vector<InputItem> items(batch);
  InputItem passed_over;
  // The first of rank 0's first 1000 inputs that is far from the model's training images is said once.
  int64_t mismatch_checks = writer ? 1000 : 0;
  // Batch b (inputs [b*batch, (b+1)*batch)) is classified by rank b % world; one round is `world`
  // batches, gathered and written by rank 0 in rank order, so the output is in input order and equal to
  // a single process's whatever the rank count (the batches, hence the numbers, are the same).
  for (bool more = true; more;) {
    size_t mine = 0, round_items = 0;
    for (int k = 0; k < world && more; ++k) {
      for (size_t n = 0; n < batch && more;) {
        try {
          more = k == rank ? stream.next(&items[n]) : stream.next(&passed_over, /*content=*/false);
        } catch (const Error& e) {
          if (world == 1) throw;
          throw SplitPredictError(e.what());  // every rank reads the same bytes and fails here alike
        }
        if (!more) break;
        ++n;
        ++round_items;
        if (k == rank) mine = n;
      }
    }
    if (round_items == 0) break;
    RoundResult result;
    for (size_t i = 0; i < mine && mismatch_checks > 0; ++i, --mismatch_checks)
      if (const std::string w = input_mismatch_warning(items[i], predictor.model()); !w.empty()) {
        log_warn(w);
        mismatch_checks = 0;
        break;
      }
    if (mine > 0) {
      try {
        Predictor::BadInput on_bad;
        if (o.skip_bad) on_bad = [&result](const InputItem& it, const std::string& why) { result.notes.push_back(skip_note(it, why)); };
        for (const Prediction& p : predictor.classify(std::span<const InputItem>(items.data(), mine), on_bad)) {
          result.lines.push_back(o.format == PredictFormat::kCsv ? prediction_csv(p, names) : prediction_json(p, names));
          if (o.on_embedding) result.embeddings.insert(result.embeddings.end(), p.embedding.begin(), p.embedding.end());
        }
      } catch (const Error& e) {
        if (world == 1) throw;
        result.error = e.what();
      }
    }
    std::vector<RoundResult> results;
    if (world == 1) results.push_back(std::move(result));
    else
      for (const std::string& b : allgather_strings(*comm, result.encode())) results.push_back(RoundResult::decode(b));
    for (const RoundResult& r : results)  // every rank stops on the first rank's error, so none waits
      if (!r.error.empty()) throw SplitPredictError(r.error);
    for (const RoundResult& r : results) {
      sum.skipped += static_cast<int64_t>(r.notes.size());
      sum.predicted += static_cast<int64_t>(r.lines.size());
      if (!writer) continue;
      for (const std::string& n : r.notes) std::fprintf(stderr, "%s\n", n.c_str());
      const size_t dim = r.lines.empty() ? 0 : r.embeddings.size() / r.lines.size();
      for (size_t i = 0; i < r.lines.size(); ++i) {
        sink(r.lines[i]);
        if (o.on_embedding) o.on_embedding(std::span<const float>(r.embeddings.data() + i * dim, dim));
      }
    }
    progress.add(round_items);
  }
  progress.finish();
  sum.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return sum;
}

}  // namespace fastnn::inference
