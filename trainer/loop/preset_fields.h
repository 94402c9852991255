// The job config's own values for its preprocessing preset, answering to timm's flags: random_crop_scale
// (timm's --scale; fastnn's scale is PLSC's margin scale), random_crop_ratio (--ratio), input_mean
// (--mean), input_std (--std), crop_pct. Every
// command that turns images into model inputs as the run did (train, eval, predict, serve, export)
// applies them, so a checkpoint is fed what it was trained on.
//
// input_mean / input_std are in timm's and torchvision's units, fractions of 255; a value above 1 is
// refused (it is a pixel value: 123.68 is 0.485 of 255), as a silently wrong normalisation would be.
// Errors: ConfigError naming the field, the item and the rule.
#pragma once

#include <string>
#include <vector>

#include "pipeline/preset.h"
#include "schemas/job_config.pb.h"

namespace fastnn::loop {

struct PresetFields {
  std::vector<float> mean, std;  // pixel units (× 255); empty: the preset's
  float area_min = 0, area_max = 0, aspect_min = 0, aspect_max = 0;  // 0: the preset's
  double crop_pct = 0;                                               // 0: the preset's
};

PresetFields preset_fields(const JobConfig& config);
// Sets the given values on `p` (the preset's own fill the rest in pipeline::resolve_preset).
void apply_preset_fields(const PresetFields& fields, pipeline::PreprocessConfig& p);
// What the job set of the evaluation's values, in its own units, for start lines: "mean 0.5, std
// 0.25, crop_pct 0.9"; "" when it set none (the crop ranges are the training line's).
std::string evaluation_fields_text(const PresetFields& fields);

}  // namespace fastnn::loop
