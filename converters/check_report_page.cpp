#include "converters/check_report_page.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/report/heatmap_table.h"
#include "core/report/html.h"
#include "core/report/png_data_uri.h"
#include "core/report/svg_bar_chart.h"

namespace fastnn::converters {
namespace {

using report::format_number;
using report::html_escape;

constexpr size_t kChartClasses = 23;  // + "other classes" = kMaxSegments
constexpr size_t kTableShards = 64, kTableClasses = 100, kTableSizes = 100;

std::string class_name(const CheckReport& r, int64_t label) {
  const auto& names = r.manifest.class_names;
  return label >= 0 && label < static_cast<int64_t>(names.size()) ? names[label] : std::to_string(label);
}

std::string stats_scope_text(const CheckReport& r) {
  if (r.measured_per_shard == UINT64_MAX)
    return str("over all ", r.survey.decoded, " decoded records (--decode)");
  return str("over a sample: the first ", r.measured_per_shard, " records of each shard, ", r.survey.decoded,
             " of ", r.records, " records (all records with --decode)");
}

nlohmann::json page_data(const CheckReport& r) {
  nlohmann::json splits = nlohmann::json::array();
  for (const SplitReport& s : r.splits) {
    nlohmann::json shards = nlohmann::json::array();
    for (const ShardReport& sh : s.shards)
      shards.push_back({{"file", sh.file}, {"records", sh.records}, {"bytes", sh.bytes}, {"histogram", sh.histogram},
                        {"chi_square", sh.balance.statistic}, {"p_value", sh.balance.p_value},
                        {"error_count", sh.error_count}});
    const ClassBalance& b = s.classes;
    splits.push_back({{"name", s.name}, {"histogram", s.histogram}, {"shards", shards}, {"min_p_value", s.min_p_value},
                      {"classes", {{"counts", b.counts}, {"missing", b.missing}, {"largest", b.largest},
                                   {"smallest", b.smallest}, {"ratio", b.ratio}}}});
  }
  nlohmann::json sizes = nlohmann::json::array();
  for (const auto& [k, n] : r.survey.sizes)
    sizes.push_back({{"height", std::get<0>(k)}, {"width", std::get<1>(k)}, {"channels", std::get<2>(k)}, {"count", n}});
  nlohmann::json channels = nlohmann::json::array();
  for (const auto& [ch, s] : r.survey.channel_stats) {
    nlohmann::json mean = nlohmann::json::array(), sd = nlohmann::json::array();
    for (int c = 0; c < ch; ++c) mean.push_back(s.mean(c)), sd.push_back(s.stddev(c));
    channels.push_back({{"channels", ch}, {"images", s.images}, {"pixels", s.pixels}, {"mean", mean}, {"std", sd}});
  }
  nlohmann::json samples = nlohmann::json::array();
  for (const auto& [label, list] : r.samples) {
    nlohmann::json recs = nlohmann::json::array();
    for (const SampleImage& s : list) recs.push_back({{"split", s.split}, {"shard", s.shard}, {"record", s.record}});
    samples.push_back({{"label", label}, {"name", class_name(r, label)}, {"records", recs}});
  }
  return {{"kind", "fastnn-check-report"},
          {"dataset", r.manifest.dataset},
          {"has_manifest", r.has_manifest},
          {"class_names", r.manifest.class_names},
          {"num_classes", r.manifest.num_classes()},
          {"ok", r.ok()},
          {"error_count", r.error_count()},
          {"records", r.records},
          {"bytes", r.bytes},
          {"splits", splits},
          {"sizes", sizes},
          {"other_sizes", r.survey.other_sizes},
          {"channel_stats", channels},
          {"stats_scope", {{"all_records", r.measured_per_shard == UINT64_MAX}, {"decoded", r.survey.decoded},
                           {"per_shard", r.measured_per_shard == UINT64_MAX ? nlohmann::json(nullptr)
                                                                             : nlohmann::json(r.measured_per_shard)}}},
          {"samples", samples}};
}

std::string summary_section(const CheckReport& r) {
  std::string b = "<table>\n<tr><th class=\"l\">split</th><th>shards</th><th>records</th><th>bytes</th>"
                  "<th>smallest balance p</th><th>problems</th></tr>\n";
  for (const SplitReport& s : r.splits) {
    uint64_t records = 0, bytes = 0, problems = s.errors.size();
    for (const ShardReport& sh : s.shards) records += sh.records, bytes += sh.bytes, problems += sh.error_count;
    b += str("<tr><td class=\"l\">", html_escape(s.name), "</td><td>", s.shards.size(), "</td><td>", records,
             "</td><td>", bytes, "</td><td>", format_number(s.min_p_value, 3), "</td><td class=\"",
             problems ? "bad" : "ok", "\">", problems, "</td></tr>\n");
  }
  b += "</table>\n";
  return report::html_section("summary", "Summary", b);
}

// Records per class of each split (a bar per class), the ratio of its largest class to its smallest,
// the classes it lacks; then one table of every split's counts.
std::string classes_section(const CheckReport& r, const CheckOptions& o) {
  std::string b = str("<p class=\"note\">Records per class in each split. The ratio is the largest class's count over "
                      "the smallest present one's; above ", format_number(o.max_class_ratio, 4),
                      " (--max-class-ratio) it is a warning, and so is a class with no record.</p>\n");
  std::vector<const SplitReport*> splits;
  for (const SplitReport& s : r.splits)
    if (!s.classes.counts.empty()) splits.push_back(&s);
  if (splits.empty()) {
    b += "<p class=\"note\">No class counts (the class count is not known).</p>\n";
    return report::html_section("classes", "Classes", b);
  }
  const size_t classes = splits[0]->classes.counts.size();
  for (const SplitReport* s : splits) {
    const ClassBalance& cb = s->classes;
    b += str("<h3>split ", html_escape(s->name), "</h3>\n");
    report::BarChart chart;
    chart.title = str(s->name, ": records per class");
    chart.x_label = "class";
    chart.y_label = "records";
    chart.segments = {"records"};
    const size_t shown = std::min(classes, report::kMaxBars);
    for (size_t c = 0; c < shown; ++c) {
      chart.categories.push_back(class_name(r, static_cast<int64_t>(c)));
      chart.values.push_back({static_cast<double>(cb.counts[c])});
    }
    chart.width = 760;
    b += report::svg_bar_chart(chart);
    if (shown < classes) b += str("<p class=\"note\">The chart shows the first ", shown, " of ", classes, " classes.</p>\n");
    std::string missing;
    for (size_t i = 0; i < cb.missing.size() && i < 20; ++i)
      missing += str(i ? ", " : "", cb.missing[i], " ", html_escape(class_name(r, cb.missing[i])));
    if (cb.missing.size() > 20) missing += str(" and ", cb.missing.size() - 20, " more");
    b += str("<p class=\"classes\" data-split=\"", html_escape(s->name), "\" data-ratio=\"", format_number(cb.ratio, 6),
             "\" data-missing=\"", cb.missing.size(), "\">", classes - cb.missing.size(), " of ", classes,
             " classes present");
    if (cb.largest >= 0)
      b += str(" · largest ", html_escape(class_name(r, cb.largest)), " (", cb.counts[cb.largest], ") · smallest ",
               html_escape(class_name(r, cb.smallest)), " (", cb.counts[cb.smallest], ") · ratio <span class=\"",
               cb.ratio > o.max_class_ratio ? "bad" : "ok", "\">", format_number(cb.ratio, 4), "</span>");
    if (!cb.missing.empty()) b += str(" · <span class=\"bad\">missing: ", missing, "</span>");
    b += "</p>\n";
  }
  const size_t rows = std::min(classes, kTableClasses);
  std::string t = "<table class=\"class-counts\">\n<tr><th>id</th><th class=\"l\">class</th>";
  for (const SplitReport* s : splits) t += str("<th>", html_escape(s->name), "</th>");
  t += "</tr>\n";
  for (size_t c = 0; c < rows; ++c) {
    t += str("<tr><td>", c, "</td><td class=\"l\">", html_escape(class_name(r, static_cast<int64_t>(c))), "</td>");
    for (const SplitReport* s : splits) {
      const uint64_t n = s->classes.counts[c];
      t += n == 0 ? std::string("<td class=\"bad\">missing</td>") : str("<td>", n, "</td>");
    }
    t += "</tr>\n";
  }
  t += "</table>\n";
  b += t;
  if (rows < classes)
    b += str("<p class=\"note\">The table shows ", rows, " of ", classes, " classes; the page's JSON block has them all.</p>\n");
  return report::html_section("classes", "Classes", b);
}

std::string samples_section(const CheckReport& r, const CheckOptions& o) {
  std::string b;
  if (r.samples.empty()) {
    b = "<p class=\"note\">No sample images (no record passed the check, or --report-samples 0).</p>\n";
    return report::html_section("samples", "Sample images per class", b);
  }
  b = str("<p class=\"note\">Up to ", o.survey.samples_per_class, " images per class, the first in split, shard and "
          "record order", r.manifest.num_classes() > o.survey.max_sample_classes
                              ? str("; classes from ", o.survey.max_sample_classes, " on are not shown")
                              : std::string(),
          ". Hover an image for its shard and record.</p>\n<div class=\"samples\">\n");
  for (const auto& [label, list] : r.samples) {
    b += str("<div class=\"name\" data-label=\"", label, "\">", label, ": ", html_escape(class_name(r, label)),
             "</div><div>");
    for (const SampleImage& s : list) {
      const int side = std::max(s.thumbnail.width, s.thumbnail.height);
      const int scale = side > 0 && side < 48 ? 64 / side : 1;
      b += report::img_tag(s.thumbnail, str(class_name(r, label), " (", s.shard, ", record ", s.record, ")"), scale);
    }
    b += "</div>\n";
  }
  b += "</div>\n";
  return report::html_section("samples", "Sample images per class", b);
}

std::string balance_section(const CheckReport& r) {
  std::string b = "<p class=\"note\">Each shard's label histogram; a p-value below the split's threshold means the "
                  "shard's classes are not spread like the split's (the set is not shuffled).</p>\n";
  const size_t classes = static_cast<size_t>(r.manifest.num_classes());
  for (const SplitReport& s : r.splits) {
    b += str("<h3>split ", html_escape(s.name), "</h3>\n");
    if (s.histogram.empty() || classes == 0) {
      b += "<p class=\"note\">No label histogram (the class count is not known).</p>\n";
      continue;
    }
    report::BarChart chart;
    chart.title = str(s.name, ": records per class in each shard");
    chart.x_label = "shard";
    chart.y_label = "records";
    const size_t shown = std::min(s.shards.size(), report::kMaxBars);
    const bool other = classes > kChartClasses + 1;
    for (size_t c = 0; c < (other ? kChartClasses : classes); ++c) chart.segments.push_back(class_name(r, c));
    if (other) chart.segments.push_back("other classes");
    for (size_t k = 0; k < shown; ++k) {
      const ShardReport& sh = s.shards[k];
      chart.categories.push_back(std::to_string(k));
      std::vector<double> v(chart.segments.size(), 0);
      for (size_t c = 0; c < sh.histogram.size() && c < classes; ++c)
        v[std::min(c, chart.segments.size() - 1)] += static_cast<double>(sh.histogram[c]);
      chart.values.push_back(std::move(v));
    }
    chart.width = 760;
    chart.height = other || classes > 8 ? 340 : 300;
    b += report::svg_bar_chart(chart);
    if (shown < s.shards.size())
      b += str("<p class=\"note\">The chart shows the first ", shown, " of ", s.shards.size(), " shards.</p>\n");

    // Shard × class counts, with the balance test beside them.
    const size_t rows = std::min(s.shards.size(), kTableShards), cols = std::min(classes, kTableClasses);
    std::string t = "<table class=\"heat\">\n<tr><th class=\"l\">shard</th><th>records</th><th>chi-square</th>"
                    "<th>p</th>";
    for (size_t c = 0; c < cols; ++c) t += str("<th>", html_escape(class_name(r, c)), "</th>");
    t += "</tr>\n";
    for (size_t k = 0; k < rows; ++k) {
      const ShardReport& sh = s.shards[k];
      uint64_t mx = 1;
      for (uint64_t v : sh.histogram) mx = std::max(mx, v);
      t += str("<tr data-shard=\"", k, "\"><th class=\"l\">", html_escape(sh.file), "</th><td>", sh.records, "</td><td>",
               format_number(sh.balance.statistic, 4), "</td><td class=\"",
               sh.balance.p_value < s.p_threshold ? "bad" : "ok", "\">", format_number(sh.balance.p_value, 3), "</td>");
      for (size_t c = 0; c < cols; ++c) {
        const uint64_t v = c < sh.histogram.size() ? sh.histogram[c] : 0;
        t += str("<td data-c=\"", c, "\" data-v=\"", v, "\" style=\"background:rgba(31,119,180,",
                 format_number(0.6 * static_cast<double>(v) / static_cast<double>(mx), 3), ")\">", v, "</td>");
      }
      t += "</tr>\n";
    }
    t += "</table>\n";
    b += t;
    if (rows < s.shards.size() || cols < classes)
      b += str("<p class=\"note\">The table shows ", rows, " of ", s.shards.size(), " shards and ", cols, " of ", classes,
               " classes; the page's JSON block has them all.</p>\n");
  }
  return report::html_section("balance", "Class balance per shard", b);
}

std::string sizes_section(const CheckReport& r) {
  std::vector<std::pair<std::tuple<int64_t, int64_t, int64_t>, uint64_t>> sizes(r.survey.sizes.begin(),
                                                                                r.survey.sizes.end());
  std::stable_sort(sizes.begin(), sizes.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  uint64_t total = r.survey.other_sizes;
  for (const auto& s : sizes) total += s.second;
  std::string b;
  if (sizes.size() > 1) {
    report::BarChart chart;
    chart.title = "most common image sizes";
    chart.x_label = "height × width × channels";
    chart.y_label = "records";
    chart.segments = {"records"};
    for (size_t i = 0; i < sizes.size() && i < 24; ++i) {
      const auto& [h, w, c] = sizes[i].first;
      chart.categories.push_back(str(h, "×", w, "×", c));
      chart.values.push_back({static_cast<double>(sizes[i].second)});
    }
    chart.width = 760;
    b += report::svg_bar_chart(chart);
  }
  b += "<table>\n<tr><th>height</th><th>width</th><th>channels</th><th>records</th><th>share</th></tr>\n";
  for (size_t i = 0; i < sizes.size() && i < kTableSizes; ++i) {
    const auto& [h, w, c] = sizes[i].first;
    b += str("<tr class=\"size\"><td>", h, "</td><td>", w, "</td><td>", c, "</td><td>", sizes[i].second, "</td><td>",
             format_number(100.0 * static_cast<double>(sizes[i].second) / static_cast<double>(std::max<uint64_t>(total, 1)), 4),
             "%</td></tr>\n");
  }
  b += "</table>\n";
  b += str("<p class=\"note\">", total, " records with a readable image header, ", sizes.size(), " distinct sizes",
           sizes.size() > kTableSizes ? str(" (the ", kTableSizes, " most common shown)") : std::string(),
           r.survey.other_sizes ? str("; ", r.survey.other_sizes, " records of further sizes not told apart") : "",
           ".</p>\n");
  return report::html_section("sizes", "Image sizes", b);
}

std::string channels_section(const CheckReport& r) {
  std::string b = str("<p class=\"scope\">Pixel values 0..255, ", html_escape(stats_scope_text(r)), ".</p>\n");
  if (r.survey.channel_stats.empty()) {
    b += "<p class=\"note\">No image was decoded.</p>\n";
    return report::html_section("channels", "Per-channel mean and standard deviation", b);
  }
  b += "<table>\n<tr><th class=\"l\">images</th><th class=\"l\">channel</th><th>mean</th><th>std</th>"
       "<th>mean / 255</th><th>std / 255</th></tr>\n";
  static const char* const kNames[4][4] = {{"gray"}, {"gray", "alpha"}, {"R", "G", "B"}, {"R", "G", "B", "A"}};
  for (const auto& [ch, s] : r.survey.channel_stats)
    for (int c = 0; c < ch; ++c)
      b += str("<tr class=\"channel\"><td class=\"l\">", s.images, " with ", ch, " channel", ch > 1 ? "s" : "",
               "</td><td class=\"l\">", kNames[ch - 1][c], "</td><td>", format_number(s.mean(c), 6), "</td><td>",
               format_number(s.stddev(c), 6), "</td><td>", format_number(s.mean(c) / 255, 5), "</td><td>",
               format_number(s.stddev(c) / 255, 5), "</td></tr>\n");
  b += "</table>\n";
  return report::html_section("channels", "Per-channel mean and standard deviation", b);
}

std::string problems_section(const CheckReport& r) {
  std::string b;
  auto list = [&b](const char* title, const std::vector<std::string>& items) {
    if (items.empty()) return;
    b += str("<h3>", title, "</h3>\n<ul>\n");
    for (const std::string& i : items) b += str("<li>", html_escape(i), "</li>\n");
    b += "</ul>\n";
  };
  std::vector<std::string> errors = r.errors;
  for (const SplitReport& s : r.splits) {
    for (const std::string& e : s.errors) errors.push_back(str(s.name, ": ", e));
    for (const ShardReport& sh : s.shards) {
      for (const std::string& e : sh.errors) errors.push_back(str(sh.file, ": ", e));
      if (sh.error_count > sh.errors.size())
        errors.push_back(str(sh.file, ": ... and ", sh.error_count - sh.errors.size(), " more"));
    }
  }
  list("errors", errors);
  list("warnings", r.warnings);
  list("not checked without a manifest", r.not_checked);
  if (b.empty()) b = "<p class=\"ok\">None.</p>\n";
  return report::html_section("problems", "Problems", b);
}

}  // namespace

std::string check_report_page(const CheckReport& r, const CheckOptions& o) {
  const std::string name = r.manifest.dataset.empty() ? o.dir : r.manifest.dataset;
  std::string body = str("<h1>fastnn check: ", html_escape(name), "</h1>\n<p class=\"meta\">", html_escape(o.dir), " · ",
                         r.manifest.num_classes(), " classes · ", r.records, " records · ",
                         format_number(static_cast<double>(r.bytes) / 1e6, 4), " MB",
                         r.has_manifest ? "" : " · no manifest.json", " · <span id=\"result\" class=\"",
                         r.ok() ? "ok\">OK" : "bad\">FAILED", r.ok() ? "" : str(", ", r.error_count(), " problem(s)"),
                         "</span></p>\n");
  body += summary_section(r);
  body += classes_section(r, o);
  body += samples_section(r, o);
  body += balance_section(r);
  body += sizes_section(r);
  body += channels_section(r);
  body += problems_section(r);
  body += report::json_script(page_data(r));
  return report::html_page(str("fastnn check: ", name), body);
}

}  // namespace fastnn::converters
