#include "trainer/checkpoint/checkpoint_classes.h"

#include <filesystem>

#include "core/check.h"

namespace fastnn::checkpoint {

std::optional<ClassMap> checkpoint_class_map(const LoadedCheckpoint& l) {
  const std::string folder = std::filesystem::path(l.prefix).parent_path().string();
  // Only labels.txt counts beside a checkpoint: a run directory holds no manifest.json.
  std::optional<ClassMap> beside;
  if (std::filesystem::exists(std::filesystem::path(folder.empty() ? "." : folder) / "labels.txt"))
    beside = read_folder_class_map(folder);
  if (l.meta.class_names_size() > 0) {
    ClassMap recorded{{l.meta.class_names().begin(), l.meta.class_names().end()}, meta_path(l.prefix)};
    if (beside) require_same_classes(recorded, *beside, str(l.prefix, ": the labels.txt beside the checkpoint"));
    return recorded;
  }
  std::optional<ClassMap> dataset;
  if (l.meta.has_config() && !l.meta.config().dataset_dir().empty() &&
      std::filesystem::is_directory(l.meta.config().dataset_dir()))
    if (std::optional<ClassMap> m = read_folder_class_map(l.meta.config().dataset_dir()))
      dataset = without_first_classes(*m, l.meta.config().labels_offset());
  if (beside && dataset)
    require_same_classes(*beside, *dataset, str(l.prefix, ": its labels.txt and its run's dataset"));
  return beside ? beside : dataset;
}

}  // namespace fastnn::checkpoint
