// HTML text for the self-contained report pages (`fastnn check --report`, `fastnn report`).
//
// A page is one file that a browser shows offline: no script runs, nothing is fetched (no external
// CSS, JS, fonts or images; pictures are data: URIs, charts inline SVG). Every string that comes from
// data (class names from labels.txt, file names, a dataset name) goes through html_escape() before
// it is placed in text or in a double-quoted attribute, so a class named `<script>` is shown, never run.
// The numbers a page shows are also embedded as JSON in `<script type="application/json" id="data">`
// (json_script()): inert (the type is not JavaScript), and what tests and scripts read instead of
// scraping the tables.
// Thread-safe (pure functions).
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace fastnn::report {

// & < > " ' → &amp; &lt; &gt; &quot; &#39;. Safe in element text and in quoted attribute values.
std::string html_escape(std::string_view text);

// `<script type="application/json" id="ID">JSON</script>`. '<', '>' and '&' inside the JSON are
// written as \u003c, \u003e, \u0026 (still the same JSON), so no string can close the element; bytes
// that are not UTF-8 are replaced (U+FFFD). `id` must be a plain identifier (checked).
std::string json_script(const nlohmann::json& data, std::string_view id = "data");

// A number as a page shows it: %.*g with `significant` digits; "–" for NaN or infinity.
std::string format_number(double v, int significant = 4);

// Marks a page as fastnn's own, in its <head>: rerunning the command that wrote it replaces it
// without --overwrite (page_file.h), where any other file in the way is kept.
inline constexpr std::string_view kGeneratorMeta = "<meta name=\"generator\" content=\"fastnn\">";

// The whole document: doctype, UTF-8, the generator mark, the title (escaped), the project's inline
// stylesheet, `body` (HTML, placed as given).
std::string html_page(std::string_view title, std::string_view body);

// <section id="ID"><h2>TITLE</h2>BODY</section>; id and title are escaped, body is HTML.
std::string html_section(std::string_view id, std::string_view title, std::string_view body);

}  // namespace fastnn::report
