#include "trainer/metrics/run_comparison.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/report/html.h"
#include "core/report/svg_line_chart.h"

namespace fastnn {
namespace {

using report::format_number;
using report::html_escape;

nlohmann::json number_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

double median(std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return !std::isfinite(x); }), v.end());
  if (v.empty()) return std::nan("");
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// The evaluation with the highest top-1 (the first of equals); null when there is none.
const RunMetrics::Eval* best_eval(const RunMetrics& m) {
  const RunMetrics::Eval* best = nullptr;
  for (const RunMetrics::Eval& e : m.evals)
    if (std::isfinite(e.top1) && (!best || e.top1 > best->top1)) best = &e;
  return best;
}

std::string runs_section(const std::vector<ComparedRun>& runs) {
  std::string b = "<table class=\"runs\">\n<tr><th>run</th><th>model</th><th>last step</th><th>last top-1</th>"
                  "<th>best top-1 (step)</th><th>last eval loss</th><th>median images/s</th></tr>\n";
  for (const ComparedRun& r : runs) {
    const RunMetrics& m = r.metrics;
    const RunMetrics::Eval* best = best_eval(m);
    b += str("<tr><td class=\"l\">", html_escape(r.run_dir), "</td><td class=\"l\">",
             html_escape(r.model_name.empty() ? "–" : r.model_name), "</td><td>",
             m.train_step.empty() ? std::string("–") : str(static_cast<int64_t>(m.train_step.back())), "</td><td>",
             m.evals.empty() ? std::string("–") : format_number(m.evals.back().top1, 4), "</td><td>",
             best ? str(format_number(best->top1, 4), " (", best->step, ")") : std::string("–"), "</td><td>",
             m.evals.empty() ? std::string("–") : format_number(m.evals.back().loss, 4), "</td><td>",
             format_number(median(m.images_per_sec), 4), "</td></tr>\n");
  }
  return report::html_section("runs", "Runs", b + "</table>\n");
}

std::string curves_section(const std::vector<ComparedRun>& runs) {
  const auto chart = [&](const char* title, const char* y_label, auto pick) {
    std::vector<report::Series> series;
    for (const ComparedRun& r : runs) {
      report::Series s{r.run_dir, {}, {}};
      pick(r.metrics, &s);
      series.push_back(std::move(s));
    }
    return report::svg_line_chart({title, "step", y_label}, series);
  };
  std::string b;
  b += chart("training loss", "loss", [](const RunMetrics& m, report::Series* s) { s->x = m.train_step, s->y = m.loss; });
  b += chart("training accuracy", "accuracy",
             [](const RunMetrics& m, report::Series* s) { s->x = m.train_step, s->y = m.accuracy; });
  b += chart("learning rate", "lr", [](const RunMetrics& m, report::Series* s) { s->x = m.train_step, s->y = m.lr; });
  b += chart("evaluation top-1", "top-1", [](const RunMetrics& m, report::Series* s) {
    for (const RunMetrics::Eval& e : m.evals) s->x.push_back(static_cast<double>(e.step)), s->y.push_back(e.top1);
  });
  b += chart("evaluation loss", "loss", [](const RunMetrics& m, report::Series* s) {
    for (const RunMetrics::Eval& e : m.evals) s->x.push_back(static_cast<double>(e.step)), s->y.push_back(e.loss);
  });
  return report::html_section("curves", "Curves (one line per run)", b);
}

std::string hyperparameters_section(const std::vector<ComparedRun>& runs, const std::vector<std::string>& fields,
                                    size_t shared) {
  if (fields.empty())
    return report::html_section("hyperparameters", "Hyperparameters",
                                str("<p class=\"ok\">No recorded field differs (", shared, " compared).</p>\n"));
  std::string b = "<table class=\"hyperparameters\">\n<tr><th>field</th>";
  for (const ComparedRun& r : runs) b += str("<th>", html_escape(r.run_dir), "</th>");
  b += "</tr>\n";
  for (const std::string& f : fields) {
    b += str("<tr data-field=\"", html_escape(f), "\"><td class=\"l\">", html_escape(f), "</td>");
    for (const ComparedRun& r : runs) {
      const auto it = r.config.find(f);
      b += str("<td class=\"l\">", it == r.config.end() ? std::string("–") : html_escape(it->second), "</td>");
    }
    b += "</tr>\n";
  }
  b += str("</table>\n<p class=\"meta\">", fields.size(), " field(s) differ; ", shared, " are the same in every run.</p>\n");
  return report::html_section("hyperparameters", "Hyperparameters that differ", b);
}

}  // namespace

std::vector<std::string> differing_config_fields(const std::vector<ComparedRun>& runs) {
  static const std::set<std::string> ignored = {"output_dir"};
  std::set<std::string> names;
  for (const ComparedRun& r : runs)
    for (const auto& [name, value] : r.config) names.insert(name);
  std::vector<std::string> out;
  for (const std::string& name : names) {
    if (ignored.contains(name)) continue;
    std::vector<std::optional<std::string>> values;  // of the runs that recorded a config
    for (const ComparedRun& r : runs) {
      if (r.config.empty()) continue;
      const auto it = r.config.find(name);
      values.push_back(it == r.config.end() ? std::nullopt : std::optional<std::string>(it->second));
    }
    if (std::any_of(values.begin(), values.end(), [&](const auto& v) { return v != values.front(); }))
      out.push_back(name);
  }
  return out;
}

std::string run_comparison_page(const std::vector<ComparedRun>& runs, const std::vector<std::string>& notes) {
  FASTNN_CHECK(!runs.empty(), "run_comparison_page: no run");
  const std::vector<std::string> fields = differing_config_fields(runs);
  size_t compared = 0;
  for (const ComparedRun& r : runs) compared = std::max(compared, r.config.size());
  const size_t shared = compared > fields.size() ? compared - fields.size() : 0;

  std::string body = str("<h1>fastnn report: ", runs.size(), " runs</h1>\n");
  body += runs_section(runs);
  body += curves_section(runs);
  body += hyperparameters_section(runs, fields, shared);
  std::vector<std::string> all_notes = notes;
  for (const ComparedRun& r : runs) {
    if (r.config.empty()) all_notes.push_back(str(r.run_dir, ": no checkpoint records its config; its hyperparameters are not compared"));
    for (const std::string& w : r.metrics.warnings) all_notes.push_back(w);
  }
  std::string nb;
  for (const std::string& n : all_notes) nb += str("<li>", html_escape(n), "</li>\n");
  body += report::html_section("notes", "Notes", nb.empty() ? "<p class=\"ok\">None.</p>\n" : "<ul>\n" + nb + "</ul>\n");

  nlohmann::json jruns = nlohmann::json::array();
  for (const ComparedRun& r : runs) {
    const RunMetrics& m = r.metrics;
    nlohmann::json evals = nlohmann::json::array();
    for (const RunMetrics::Eval& e : m.evals)
      evals.push_back({{"step", e.step}, {"top1", number_or_null(e.top1)}, {"top5", number_or_null(e.top5)},
                       {"loss", number_or_null(e.loss)}});
    nlohmann::json differing = nlohmann::json::object();
    for (const std::string& f : fields)
      if (const auto it = r.config.find(f); it != r.config.end()) differing[f] = it->second;
    nlohmann::json train_loss = nlohmann::json::array();
    for (double v : m.loss) train_loss.push_back(number_or_null(v));
    const RunMetrics::Eval* best = best_eval(m);
    jruns.push_back({{"run_dir", r.run_dir},
                     {"model_name", r.model_name},
                     {"train_step", m.train_step},
                     {"train_loss", train_loss},
                     {"evals", evals},
                     {"best_top1", best ? nlohmann::json{{"step", best->step}, {"top1", best->top1}} : nlohmann::json(nullptr)},
                     {"median_images_per_sec", number_or_null(median(m.images_per_sec))},
                     {"config_recorded", !r.config.empty()},
                     {"differing", differing}});
  }
  body += report::json_script({{"kind", "fastnn-run-comparison"}, {"runs", jruns}, {"differing_fields", fields},
                               {"fields_compared", compared}});
  return report::html_page(str("fastnn report: ", runs.size(), " runs"), body);
}

}  // namespace fastnn
