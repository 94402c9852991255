#include "trainer/inference/input_classes.h"

#include <filesystem>
#include <set>

#include "core/check.h"
#include "core/class_map.h"
#include "trainer/loop/run_setup.h"

namespace fastnn::inference {

void check_input_classes(const std::vector<PredictInput>& inputs, const ModelInfo& m) {
  if (m.class_names.empty()) return;
  const ClassMap model{m.class_names, m.class_names_origin};
  std::set<std::string> folders;
  for (const PredictInput& in : inputs) {
    if (in.kind != PredictInput::Kind::kTFRecord) continue;
    const std::string folder = std::filesystem::path(in.path).parent_path().string();
    if (!folders.insert(folder).second) continue;
    const std::optional<ClassMap> data = read_folder_class_map(folder);
    if (!data) continue;
    const std::optional<ClassMap> shifted = without_first_classes(*data, m.config.labels_offset());
    if (shifted) require_same_classes(model, *shifted, str("predict --input ", in.path), loop::kClassMapAdvice);
  }
}

}  // namespace fastnn::inference
