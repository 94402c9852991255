#include "trainer/zoo/zoo_table.h"

#include <cstdio>

#include "core/check.h"
#include "trainer/graph/statistics.h"
#include "trainer/zoo/zoo.h"

namespace fastnn::zoo {

namespace {

std::string grouped(int64_t v) {
  std::string s = std::to_string(v), out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i > 0 && (s.size() - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return out;
}

}  // namespace

std::vector<ZooTableRow> zoo_table(int num_classes) {
  std::vector<ZooTableRow> rows;
  for (const ZooModel& m : zoo_models()) {
    const NetDef net = build_net(m.name, {.num_classes = num_classes});
    const graph::ModelStatistics s = graph::model_statistics(net);
    ZooTableRow r;
    r.name = m.name;
    r.summary = m.summary;
    r.preset = m.preset;
    r.default_size = m.default_size;
    r.min_size = m.min_size;
    r.channels = m.default_channels;
    r.num_classes = num_classes ? num_classes : m.default_classes;
    r.aux_logits = net.has_aux_logits();
    r.trainable_params = s.trainable_params;
    r.state_elements = s.state_elements;
    r.macs = s.flops / 2;  // statistics count 2 FLOPs per multiply-add
    r.layers = net.layers_size();
    rows.push_back(std::move(r));
  }
  return rows;
}

nlohmann::json zoo_table_json(const std::vector<ZooTableRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const ZooTableRow& r : rows)
    out.push_back({{"name", r.name},
                   {"summary", r.summary},
                   {"trainable_params", r.trainable_params},
                   {"moving_statistics", r.state_elements},
                   {"macs", r.macs},
                   {"flops", 2 * r.macs},
                   {"layers", r.layers},
                   {"input", {{"height", r.default_size}, {"width", r.default_size}, {"channels", r.channels}}},
                   {"min_size", r.min_size},
                   {"num_classes", r.num_classes},
                   {"aux_logits", r.aux_logits},
                   {"preprocessing", r.preset}});
  return out;
}

std::string zoo_table_text(const std::vector<ZooTableRow>& rows) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%-20s %14s %9s %10s %9s %-9s %s\n", "model", "parameters", "GMACs", "input",
                "classes", "preset", "notes");
  out += line;
  for (const ZooTableRow& r : rows) {
    const std::string input = str(r.default_size, "x", r.default_size, "x", r.channels);
    std::snprintf(line, sizeof line, "%-20s %14s %9.3f %10s %9d %-9s %s\n", r.name.c_str(),
                  grouped(r.trainable_params).c_str(), static_cast<double>(r.macs) / 1e9, input.c_str(), r.num_classes,
                  r.preset.c_str(), r.aux_logits ? "with aux logits" : "");
    out += line;
  }
  return out;
}

}  // namespace fastnn::zoo
