#include "trainer/metrics/run_report.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/base64.h"
#include "core/line_reader.h"
#include "core/report/heatmap_table.h"
#include "core/report/html.h"
#include "core/report/svg_bar_chart.h"
#include "core/report/svg_line_chart.h"
#include "trainer/metrics/jsonl_writer.h"
#include "trainer/metrics/record_image.h"

namespace fastnn {
namespace {

using report::format_number;
using report::html_escape;

double number(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : std::numeric_limits<double>::quiet_NaN();
}

// A JSON array of the values, NaN as null.
nlohmann::json values(const std::vector<double>& v) {
  nlohmann::json a = nlohmann::json::array();
  for (double x : v) a.push_back(std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr));
  return a;
}

bool read_confusion(const nlohmann::json& m, RunMetrics* r, int64_t step) {
  if (!m.is_array() || m.empty() || static_cast<int64_t>(m.size()) > kMaxConfusionClasses) return false;
  const size_t c = m.size();
  std::vector<int64_t> cells;
  cells.reserve(c * c);
  for (const nlohmann::json& row : m) {
    if (!row.is_array() || row.size() != c) return false;
    for (const nlohmann::json& v : row) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0) return false;
      cells.push_back(v.get<int64_t>());
    }
  }
  r->confusion_step = step;
  r->confusion_classes = static_cast<int64_t>(c);
  r->confusion = std::move(cells);
  return true;
}

// The eval line's "misclassified" entries; false (and nothing kept) when one is not well formed.
bool read_misclassified(const nlohmann::json& m, RunMetrics* r, int64_t step) {
  if (!m.is_array()) return false;
  std::vector<MisclassifiedImage> images;
  for (const nlohmann::json& e : m) {
    if (!e.is_object()) return false;
    const auto field = [&](const char* k) { return e.contains(k) && e[k].is_number_integer() && e[k].get<int64_t>() >= 0; };
    if (!e.contains("file") || !e["file"].is_string() || !field("record") || !field("offset") || !field("label") ||
        !field("predicted") || !e.contains("confidence") || !e["confidence"].is_number())
      return false;
    images.push_back({.file = e["file"].get<std::string>(), .record = e["record"].get<uint64_t>(),
                      .offset = e["offset"].get<uint64_t>(), .label = e["label"].get<int64_t>(),
                      .predicted = e["predicted"].get<int64_t>(), .confidence = e["confidence"].get<double>()});
  }
  r->misclassified_step = step;
  r->misclassified = std::move(images);
  return true;
}

std::string class_name(const RunReportInfo& info, int64_t c) {
  return c < static_cast<int64_t>(info.class_names.size()) ? info.class_names[c] : std::to_string(c);
}

// Per class: the diagonal cell over its row's sum (by_column false: accuracy, i.e. recall) or over its
// column's sum (by_column true: precision); NaN where that sum is 0.
std::vector<double> per_class_ratio(const RunMetrics& m, bool by_column) {
  const int64_t c = m.confusion_classes;
  std::vector<double> out(static_cast<size_t>(c), std::numeric_limits<double>::quiet_NaN());
  for (int64_t i = 0; i < c; ++i) {
    int64_t sum = 0;
    for (int64_t k = 0; k < c; ++k) sum += by_column ? m.confusion[k * c + i] : m.confusion[i * c + k];
    if (sum > 0) out[i] = static_cast<double>(m.confusion[i * c + i]) / static_cast<double>(sum);
  }
  return out;
}
std::vector<double> per_class_accuracy(const RunMetrics& m) { return per_class_ratio(m, false); }
std::vector<double> per_class_precision(const RunMetrics& m) { return per_class_ratio(m, true); }

std::string curves_section(const RunMetrics& m) {
  std::vector<double> es, e_loss, e_top1, e_top5;
  for (const RunMetrics::Eval& e : m.evals) {
    es.push_back(static_cast<double>(e.step));
    e_loss.push_back(e.loss);
    e_top1.push_back(e.top1);
    e_top5.push_back(e.top5);
  }
  std::string b = "<div class=\"charts\">\n";
  b += str("<div id=\"chart-loss\">",
           report::svg_line_chart({.title = "loss", .x_label = "step", .y_label = "cross-entropy"},
                                  {{"train loss", m.train_step, m.loss}, {"eval loss", es, e_loss}}),
           "</div>\n");
  b += str("<div id=\"chart-accuracy\">",
           report::svg_line_chart({.title = "accuracy", .x_label = "step", .y_label = "accuracy"},
                                  {{"train top-1", m.train_step, m.accuracy}, {"eval top-1", es, e_top1},
                                   {"eval top-5", es, e_top5}}),
           "</div>\n");
  b += str("<div id=\"chart-lr\">",
           report::svg_line_chart({.title = "learning rate", .x_label = "step", .y_label = "learning rate",
                                   .y_from_zero = true},
                                  {{"lr", m.train_step, m.lr}}),
           "</div>\n");
  b += str("<div id=\"chart-throughput\">",
           report::svg_line_chart({.title = "throughput", .x_label = "step", .y_label = "images / s", .y_from_zero = true},
                                  {{"images/s", m.train_step, m.images_per_sec}}),
           "</div>\n");
  b += "</div>\n";
  if (!m.evals.empty()) {
    b += "<table id=\"evals\">\n<tr><th>step</th><th class=\"l\">split</th><th>top-1</th><th>top-5</th><th>loss</th>"
         "<th>examples</th></tr>\n";
    for (const RunMetrics::Eval& e : m.evals)
      b += str("<tr><td>", e.step, "</td><td class=\"l\">", html_escape(e.split), "</td><td>", format_number(e.top1, 4),
               "</td><td>", format_number(e.top5, 4), "</td><td>", format_number(e.loss, 4), "</td><td>",
               e.num_examples, "</td></tr>\n");
    b += "</table>\n";
  }
  return report::html_section("curves", "Training curves", b);
}

// Each image as its shard holds it (a data URI of the PNG or JPEG bytes), drawn 96 to 160 pixels on its
// long side (small images scaled by whole factors, pixelated by the page's CSS).
std::string gallery_section(const RunMetrics& m, const RunReportInfo& info) {
  if (m.misclassified.empty()) return "";
  std::string b = str("<p>The evaluation at step ", m.misclassified_step, "'s ", m.misclassified.size(),
                      " most confident mistakes, most confident first: true class → predicted (its probability).</p>\n"
                      "<div class=\"gallery\">\n");
  for (const MisclassifiedImage& x : m.misclassified) {
    const std::string caption = str(class_name(info, x.label), " → ", class_name(info, x.predicted), " (",
                                    format_number(x.confidence, 3), ")");
    const std::string where = str(x.file, ": record ", x.record, " at offset ", x.offset);
    std::string picture;
    try {
      const RecordImage img = read_record_image(x.file, x.record, x.offset);
      const int longest = std::max(img.width, img.height);
      const double k = longest < 96 ? std::ceil(96.0 / longest) : std::min(1.0, 160.0 / longest);
      picture = str("<img src=\"data:image/", img.format, ";base64,", base64_encode(img.bytes), "\" width=\"",
                    std::lround(img.width * k), "\" height=\"", std::lround(img.height * k), "\" alt=\"",
                    html_escape(caption), "\" title=\"", html_escape(where), "\">");
    } catch (const Error& e) {
      picture = str("<span class=\"bad\">", html_escape(e.what()), "</span>");
    }
    b += str("<figure>", picture, "<figcaption>", html_escape(caption), "</figcaption></figure>\n");
  }
  b += "</div>\n";
  return report::html_section("misclassified", "Most confident mistakes", b);
}

std::string confusion_section(const RunMetrics& m, const RunReportInfo& info) {
  if (m.confusion_classes == 0)
    return report::html_section(
        "confusion", "Confusion matrix",
        "<p class=\"note\">No evaluation in metrics.jsonl has a confusion matrix (a run older than this report, a "
        "sharded classifier head, or more than 256 classes). `fastnn eval --json` prints one for a checkpoint.</p>\n");
  const int64_t c = m.confusion_classes;
  int64_t total = 0, hits = 0;
  for (int64_t i = 0; i < c; ++i)
    for (int64_t k = 0; k < c; ++k) total += m.confusion[i * c + k], hits += i == k ? m.confusion[i * c + k] : 0;
  std::string b = str("<p class=\"note\">The last evaluation with a confusion matrix: step ", m.confusion_step, ", ",
                      total, " examples, top-1 ", format_number(total ? static_cast<double>(hits) / total : 0, 4),
                      ". Rows: the true class; columns: the predicted class (shaded by the row's largest cell).</p>\n");
  report::Heatmap h;
  h.corner = "true \\ predicted";
  for (int64_t i = 0; i < c; ++i) {
    const std::string n = class_name(info, i);
    h.row_labels.push_back(str(i, ": ", n));
    h.col_labels.push_back(std::to_string(i));
  }
  for (int64_t v : m.confusion) h.values.push_back(static_cast<double>(v));
  h.row_scale = true;
  h.diagonal = true;
  b += str("<div id=\"confusion-matrix\">", report::html_heatmap_table(h), "</div>\n");
  const std::vector<double> acc = per_class_accuracy(m);
  b += "<h3>Per-class accuracy</h3>\n";
  if (static_cast<size_t>(c) <= report::kMaxBars) {
    report::BarChart chart;
    chart.title = "accuracy per class (diagonal / row sum)";
    chart.x_label = "class";
    chart.y_label = "accuracy";
    chart.segments = {"accuracy"};
    for (int64_t i = 0; i < c; ++i) {
      chart.categories.push_back(c <= 16 ? class_name(info, i) : std::to_string(i));
      chart.values.push_back({std::isfinite(acc[i]) ? acc[i] : 0.0});
    }
    chart.width = 760;
    b += report::svg_bar_chart(chart);
  }
  const std::vector<double> precision = per_class_precision(m);
  b += "<table id=\"per-class\">\n<tr><th>class</th><th class=\"l\">name</th><th>examples</th><th>correct</th>"
       "<th>accuracy (recall)</th><th>predicted</th><th>precision</th></tr>\n";
  for (int64_t i = 0; i < c; ++i) {
    int64_t row = 0, column = 0;
    for (int64_t k = 0; k < c; ++k) row += m.confusion[i * c + k], column += m.confusion[k * c + i];
    b += str("<tr data-class=\"", i, "\"><td>", i, "</td><td class=\"l\">", html_escape(class_name(info, i)), "</td><td>",
             row, "</td><td>", m.confusion[i * c + i], "</td><td>", format_number(acc[i], 4), "</td><td>", column,
             "</td><td>", format_number(precision[i], 4), "</td></tr>\n");
  }
  b += "</table>\n";
  return report::html_section("confusion", "Confusion matrix and per-class accuracy", b);
}

}  // namespace

RunMetrics read_run_metrics(const std::string& path) {
  LineReader in(path, kMaxMetricsLineBytes);  // a FIFO or folder in its place is refused, not waited on
  RunMetrics r;
  std::string line;
  int64_t n = 0, used = 0;
  while (in.next(&line)) {
    ++n;
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("step") || !j["step"].is_number_integer() || !j.contains("event") ||
        !j["event"].is_string()) {
      ++r.skipped;
      continue;
    }
    const int64_t step = j["step"].get<int64_t>();
    const std::string event = j["event"].get<std::string>();
    if (event == "train") {
      r.train_step.push_back(static_cast<double>(step));
      r.loss.push_back(number(j, "loss"));
      r.accuracy.push_back(number(j, "accuracy"));
      r.lr.push_back(number(j, "lr"));
      r.images_per_sec.push_back(number(j, "images_per_sec"));
      ++used;
    } else if (event == "eval" || event == "eval_moving_averages") {
      RunMetrics::Eval e;
      e.step = step;
      e.split = j.value("split", std::string());
      e.top1 = number(j, "top1");
      e.top5 = number(j, "top5");
      e.loss = number(j, "loss");
      e.num_examples = j.contains("num_examples") && j["num_examples"].is_number_integer() ? j["num_examples"].get<int64_t>() : 0;
      if (event != "eval") {  // the moving averages' evaluation: no confusion matrix, not "the" evaluation
        r.moving_average_evals.push_back(e);
        continue;
      }
      r.evals.push_back(e);
      ++used;
      if (j.contains("misclassified") && !read_misclassified(j["misclassified"], &r, step))
        r.warnings.push_back(str(path, ": line ", n, " (eval at step ", step, "): misclassified is not a list of {file, "
                                 "record, offset, label, predicted, confidence}; ignored"));
      if (j.contains("confusion_matrix") && !read_confusion(j["confusion_matrix"], &r, step))
        r.warnings.push_back(str(path, ": line ", n, " (eval at step ", step, "): confusion_matrix is not a square "
                                 "matrix of at most ", kMaxConfusionClasses, " classes of counts; ignored"));
    }
  }
  if (used == 0) throw ConfigError(str(path, " holds no train or eval line (", n, " line(s) read)"));
  if (r.skipped) r.warnings.push_back(str(path, ": ", r.skipped, " line(s) that are not metrics objects skipped"));
  return r;
}

std::string run_report_page(const RunMetrics& m, const RunReportInfo& info) {
  std::string body = str("<h1>fastnn report: ", html_escape(info.run_dir), "</h1>\n<p class=\"meta\">");
  if (!info.model_name.empty()) body += str("model ", html_escape(info.model_name), " · ");
  if (!info.dataset_dir.empty()) body += str("data ", html_escape(info.dataset_dir), " · ");
  body += str(m.train_step.size(), " train lines, last step ",
              m.train_step.empty() ? std::string("–") : str(static_cast<int64_t>(m.train_step.back())), " · ",
              m.evals.size(), " evaluation(s)");
  if (!m.evals.empty()) body += str(", last top-1 ", format_number(m.evals.back().top1, 4));
  if (!m.moving_average_evals.empty())
    body += str(" (moving averages ", format_number(m.moving_average_evals.back().top1, 4), ")");
  body += "</p>\n";
  body += curves_section(m);
  body += confusion_section(m, info);
  body += gallery_section(m, info);
  std::vector<std::string> notes = info.notes;
  notes.insert(notes.end(), m.warnings.begin(), m.warnings.end());
  std::string nb;
  for (const std::string& n : notes) nb += str("<li>", html_escape(n), "</li>\n");
  body += report::html_section("notes", "Notes", nb.empty() ? "<p class=\"ok\">None.</p>\n" : "<ul>\n" + nb + "</ul>\n");

  auto evals_json = [](const std::vector<RunMetrics::Eval>& list) {
    nlohmann::json out = nlohmann::json::array();
    for (const RunMetrics::Eval& e : list)
      out.push_back({{"step", e.step}, {"split", e.split}, {"top1", values({e.top1})[0]}, {"top5", values({e.top5})[0]},
                     {"loss", values({e.loss})[0]}, {"num_examples", e.num_examples}});
    return out;
  };
  nlohmann::json last = nullptr;
  if (m.confusion_classes > 0) {
    const int64_t c = m.confusion_classes;
    nlohmann::json rows = nlohmann::json::array(), names = nlohmann::json::array();
    for (int64_t i = 0; i < c; ++i) {
      rows.push_back(std::vector<int64_t>(m.confusion.begin() + i * c, m.confusion.begin() + (i + 1) * c));
      names.push_back(class_name(info, i));
    }
    last = {{"step", m.confusion_step}, {"confusion_matrix", rows}, {"per_class_accuracy", values(per_class_accuracy(m))},
            {"per_class_precision", values(per_class_precision(m))},
            {"class_names", names}};
  }
  const nlohmann::json data = {
      {"kind", "fastnn-run-report"},
      {"run_dir", info.run_dir},
      {"model_name", info.model_name},
      {"train", {{"step", values(m.train_step)}, {"loss", values(m.loss)}, {"accuracy", values(m.accuracy)},
                 {"lr", values(m.lr)}, {"images_per_sec", values(m.images_per_sec)}}},
      {"evals", evals_json(m.evals)},
      {"moving_average_evals", evals_json(m.moving_average_evals)},
      {"last_eval", last},
      {"misclassified", misclassified_json(m.misclassified)}};
  body += report::json_script(data);
  return report::html_page(str("fastnn report: ", info.run_dir), body);
}

}  // namespace fastnn
