#include "core/report/html.h"

#include <cctype>
#include <cmath>
#include <cstdio>

#include "core/check.h"

namespace fastnn::report {

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string json_script(const nlohmann::json& data, std::string_view id) {
  FASTNN_CHECK(!id.empty(), "json_script: empty id");
  for (char c : id)
    FASTNN_CHECK(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_', "json_script: id '", id,
                 "' is not a plain identifier");
  const std::string dumped = data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out = str("<script type=\"application/json\" id=\"", id, "\">");
  out.reserve(out.size() + dumped.size() + 16);
  // '<', '>' and '&' occur only inside JSON strings (never in its syntax), where \uXXXX means the same.
  for (char c : dumped) {
    if (c == '<') out += "\\u003c";
    else if (c == '>') out += "\\u003e";
    else if (c == '&') out += "\\u0026";
    else out += c;
  }
  out += "</script>\n";
  return out;
}

std::string format_number(double v, int significant) {
  if (!std::isfinite(v)) return "\xE2\x80\x93";  // en dash
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", significant, v);
  return buf;
}

namespace {

// Plain, print-friendly; the charts carry their own colours.
constexpr const char* kStyle = R"css(
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;margin:24px;color:#222;background:#fff;max-width:1200px}
h1{font-size:1.5em;margin:0 0 4px}h2{font-size:1.2em;border-bottom:1px solid #ddd;padding-bottom:4px;margin-top:28px}
h3{font-size:1em;margin:16px 0 6px}.meta{color:#555;font-size:.9em}.note{color:#555;font-size:.85em}
table{border-collapse:collapse;font-size:.85em;margin:6px 0}th,td{border:1px solid #ddd;padding:3px 6px;text-align:right}
th{background:#f4f4f4}td.l,th.l{text-align:left}.ok{color:#1a7f37}.bad{color:#c62828;font-weight:600}
.samples{display:grid;grid-template-columns:max-content 1fr;gap:4px 12px;align-items:center}
.samples .name{font-size:.85em;text-align:right;max-width:220px;overflow-wrap:anywhere}
.samples img{image-rendering:pixelated;border:1px solid #ccc;margin:1px;vertical-align:middle}
svg{display:block;margin:6px 0;font-size:11px}svg text{fill:#333}.charts{display:flex;flex-wrap:wrap;gap:8px}
table.heat td{min-width:2.2em}
.gallery{display:flex;flex-wrap:wrap;gap:10px}.gallery figure{margin:0;max-width:170px;font-size:.8em;text-align:center}
.gallery img{image-rendering:pixelated;border:1px solid #ccc;display:block;margin:0 auto 2px}
)css";

}  // namespace

std::string html_page(std::string_view title, std::string_view body) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n" + std::string(kGeneratorMeta) + "\n<title>";
  out += html_escape(title);
  out += "</title>\n<style>";
  out += kStyle;
  out += "</style>\n</head>\n<body>\n";
  out += body;
  out += "</body>\n</html>\n";
  return out;
}

std::string html_section(std::string_view id, std::string_view title, std::string_view body) {
  return str("<section id=\"", html_escape(id), "\">\n<h2>", html_escape(title), "</h2>\n", body, "</section>\n");
}

}  // namespace fastnn::report
