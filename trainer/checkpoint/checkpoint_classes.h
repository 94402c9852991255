// The class map a checkpoint's model was trained with (../shared/DESIGN.md "Class maps"), so that
// `fastnn eval`, `predict`, `serve` and a resumed `train` can refuse data whose classes are numbered
// otherwise instead of reporting a silent top-1 of 0.
//
// The map is CheckpointMeta.class_names, which `fastnn train` records with every checkpoint (origin:
// the meta file). A labels.txt beside the checkpoint that disagrees with it is refused (ConfigError
// naming the first difference): something means to relabel the model's outputs. A checkpoint written
// before the names were recorded stands in labels.txt beside it, else the class map of its run's
// dataset_dir (manifest.json / labels.txt, less the run's labels_offset); when both exist they must
// agree. nullopt when nothing says. Errors: ConfigError as above; FormatError / IoError from reading.
#pragma once

#include <optional>

#include "core/class_map.h"
#include "trainer/checkpoint/checkpoint_manager.h"

namespace fastnn::checkpoint {

std::optional<ClassMap> checkpoint_class_map(const LoadedCheckpoint& checkpoint);

}  // namespace fastnn::checkpoint
