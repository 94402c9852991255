#include "trainer/loop/checkpoint_io.h"

#include <algorithm>

#include <map>

#include "core/check.h"
#include "core/logging.h"
#include "core/tf_checkpoint/tf_checkpoint.h"
#include "trainer/checkpoint/checkpoint_manager.h"
#include "trainer/checkpoint/finetune.h"
#include "trainer/checkpoint/row_shards.h"
#include "trainer/checkpoint/tf_restore.h"
#include "trainer/runner/step_runner.h"

namespace fastnn::loop {
namespace {

NamedArray as_f32(const graph::NamedTensor& v, const checkpoint::ArrayView& a, const std::string& source) {
  if (a.shape != v.value.shape())
    throw FormatError(str(source, ": array ", a.name, " has shape ", checkpoint::shape_string(a.shape), ", the model ",
                          checkpoint::shape_string(v.value.shape())));
  return {v.name, checkpoint::to_f32(a)};
}

}  // namespace

std::vector<checkpoint::ArrayView> variable_views(const std::vector<graph::NamedTensor>& variables,
                                            const std::vector<NamedArray>& values) {
  FASTNN_CHECK(variables.size() == values.size(), "variable_views: ", variables.size(), " variables, ",
               values.size(), " values");
  std::vector<checkpoint::ArrayView> out;
  for (size_t i = 0; i < values.size(); ++i) {
    FASTNN_CHECK(values[i].name == variables[i].name && static_cast<int64_t>(values[i].data.size()) == variables[i].value.numel(),
                 "variable_views: ", values[i].name, " does not match ", variables[i].name);
    out.push_back(checkpoint::f32_view(values[i].name, variables[i].value.shape(), values[i].data.data(), values[i].data.size()));
  }
  return out;
}

std::vector<NamedArray> checkpoint_variables(const std::vector<graph::NamedTensor>& variables,
                                             std::span<const checkpoint::ArrayView> arrays, const std::string& source) {
  std::map<std::string, const checkpoint::ArrayView*> by_name;
  for (const checkpoint::ArrayView& a : arrays) by_name[a.name] = &a;
  std::vector<NamedArray> out;
  for (const graph::NamedTensor& v : variables) {
    auto it = by_name.find(v.name);
    if (it == by_name.end()) throw FormatError(str(source, ": no array named ", v.name));
    out.push_back(as_f32(v, *it->second, source));
  }
  return out;
}

std::vector<NamedArray> finetune_variables(const std::vector<graph::NamedTensor>& variables, const NetDef& net,
                                           const std::string& path, const StartOptions& o) {
  for (const std::string& scope : o.exclude_scopes)  // a misspelt scope would restore what it meant to exclude
    if (std::none_of(variables.begin(), variables.end(), [&](const graph::NamedTensor& v) { return v.name.starts_with(scope); }))
      throw ConfigError(str("checkpoint_exclude_scopes: \"", scope, "\" matches no variable of the model "
                            "(print_model_statistics lists the names)"));
  if (const auto tf = tf_checkpoint::find_tf_checkpoint(path)) {
    const tf_checkpoint::TfCheckpoint c = tf_checkpoint::open_tf_checkpoint(*tf);
    std::map<std::string, checkpoint::TfVariable> by_name;
    for (checkpoint::TfVariable& v : checkpoint::tf_variables(net)) by_name[v.name] = std::move(v);
    // The runner's variables: the net's, and a replicated classifier head's weights (fastnn's own array,
    // in no TF-slim network: same layout; a sharded head's rows are not among them).
    std::vector<checkpoint::TfVariable> layout;
    for (const graph::NamedTensor& v : variables) {
      const auto it = by_name.find(v.name);
      layout.push_back(it != by_name.end() ? it->second : checkpoint::TfVariable{v.name, v.value.shape()});
      FASTNN_CHECK(layout.back().shape == v.value.shape(), "the net's plan gives ", v.name, " shape ",
                   checkpoint::shape_string(layout.back().shape), ", the model ", checkpoint::shape_string(v.value.shape()));
    }
    checkpoint::TfRestore r = checkpoint::restore_from_tf(c, layout, {.exclude_scopes = o.exclude_scopes,
                                                          .use_moving_averages = o.use_moving_averages,
                                                          .ignore_missing_vars = o.ignore_missing_vars});
    log_info("fine-tuning: ", r.summary);
    return std::move(r.values);
  }
  checkpoint::LoadedCheckpoint c = checkpoint::load_checkpoint(path, {.optimizer = false});
  std::map<std::string, std::vector<int64_t>> expected;
  for (const graph::NamedTensor& v : variables) expected[v.name] = v.value.shape();
  const std::vector<checkpoint::ArrayView> arrays = c.weights.arrays();
  const checkpoint::FinetuneSelection sel = checkpoint::select_for_finetune(arrays, expected, o.exclude_scopes);
  std::map<std::string, const checkpoint::ArrayView*> by_name;
  for (const checkpoint::ArrayView& a : sel.loaded) by_name[a.name] = &a;
  std::vector<NamedArray> out;
  for (const graph::NamedTensor& v : variables)
    if (auto it = by_name.find(v.name); it != by_name.end()) out.push_back(as_f32(v, *it->second, c.prefix));
  log_info(str("fine-tuning from ", c.prefix, ":\n", sel.summary()));
  return out;
}

void load_head_rows(runner::StepRunner& runner, const checkpoint::LoadedCheckpoint& l, bool optimizer) {
  if (!runner.has_sharded_rows()) return;  // the layout only: sharded_rows() would copy every row to the host
  checkpoint::RowShardReader reader(l);
  runner.load_sharded_rows(reader, optimizer);
}

std::vector<std::string> finetune_head_rows(runner::StepRunner& runner, const std::string& path,
                                            const std::vector<std::string>& exclude) {
  const std::vector<checkpoint::RowShardSlice> mine = runner.sharded_row_layout();  // names and ranges, no data
  if (mine.empty()) return exclude;
  std::vector<std::string> rest;
  bool excluded = false;
  for (const std::string& scope : exclude) {
    const bool covers = std::any_of(mine.begin(), mine.end(), [&](const checkpoint::RowShardSlice& r) { return r.name.starts_with(scope); });
    excluded = excluded || covers;
    if (!covers) rest.push_back(scope);
  }
  const checkpoint::RowShardSlice& w = mine.front();  // the weights (slots follow it)
  if (excluded) {
    log_info("fine-tuning: the classifier head's rows (", w.name, ") are excluded by checkpoint_exclude_scopes: initialised");
    return rest;
  }
  const checkpoint::LoadedCheckpoint l = checkpoint::load_checkpoint(path, {.optimizer = false});
  checkpoint::RowShardReader reader(l);
  const checkpoint::RowShardedArrayLayout* saved = reader.find(w.name);
  if (saved == nullptr || saved->global_shape != w.global_shape) {
    log_info("fine-tuning: the classifier head's rows (", w.name, " ", checkpoint::shape_string(w.global_shape), ") are not in ",
             l.prefix, saved ? str(" at that shape (it has ", checkpoint::shape_string(saved->global_shape), ")") : std::string(),
             ": initialised");
    return rest;
  }
  runner.load_sharded_rows(reader, false);
  log_info("fine-tuning: the classifier head's rows [", w.row_begin, ", ", w.row_end, ") of ", w.name, " from ", l.prefix);
  return rest;
}

}  // namespace fastnn::loop
