// Fine-tuning selection by name, scope and shape.
#include "trainer/checkpoint/finetune.h"

#include <set>

#include "core/check.h"

namespace fastnn::checkpoint {

FinetuneSelection select_for_finetune(std::span<const ArrayView> checkpoint,
                                      const std::map<std::string, std::vector<int64_t>>& expected,
                                      std::span<const std::string> exclude_scopes) {
  FinetuneSelection sel;
  std::set<std::string> provided;
  for (const auto& a : checkpoint) {
    const std::string* scope = nullptr;
    for (const auto& s : exclude_scopes)
      if (!s.empty() && a.name.starts_with(s)) {
        scope = &s;
        break;
      }
    const auto it = expected.find(a.name);
    if (scope) {
      sel.skipped.push_back({a.name, str("excluded by scope '", *scope, "'")});
    } else if (it == expected.end()) {
      sel.skipped.push_back({a.name, "not in model"});
    } else if (it->second != a.shape) {
      sel.skipped.push_back(
          {a.name, str("shape ", shape_string(a.shape), " in checkpoint, ", shape_string(it->second), " in model")});
    } else {
      sel.loaded.push_back(a);
      provided.insert(a.name);
    }
  }
  for (const auto& [name, shape] : expected)
    if (!provided.count(name)) sel.missing.push_back(name);
  return sel;
}

std::string FinetuneSelection::summary() const {
  std::string s = str("fine-tune: loaded ", loaded.size(), " arrays, skipped ", skipped.size(), ", ", missing.size(),
                      " model arrays keep their initial values");
  for (const auto& k : skipped) s += str("\n  skipped ", k.name, ": ", k.reason);
  for (const auto& m : missing) s += str("\n  not in checkpoint: ", m);
  return s;
}

}  // namespace fastnn::checkpoint
