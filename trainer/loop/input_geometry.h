// What the preprocessing preset does to a run's images, said at the start of training, and a warning
// when the images are far from what the model takes under a preset that does not resize them:
//   lenet     centre crop or zero-pad to the input size (no resampling): a 256-px photo becomes its
//             central 28x28 pixels;
//   cifarnet  a random crop of the input size out of the image padded by 4 (no resampling);
//   inception and torchvision resample (random resized crop), vgg/resnet resize the shorter side: any
//             size works, but an image much smaller than the input is blown up (warned below a half).
// The line also names the job's own mean, std and crop_pct (preset_fields.h) when it set them.
// The images' size is the manifest's when all records share it, else the range over the first records
// of the first training file (their image/height and image/width features).
// The warning names the numbers and what to do (resize at conversion, another preprocessing_name, or
// train_image_size). Never throws for unreadable sizes: they are left out of the line.
#pragma once

#include <string>

#include "schemas/job_config.pb.h"
#include "trainer/loop/run_setup.h"

namespace fastnn::loop {

struct InputGeometry {
  std::string line;     // always: "preprocessing lenet: ... ; images 256x256 (all records)"
  std::string warning;  // empty when the images suit the preset
};

InputGeometry describe_input_geometry(const RunSetup& setup);

}  // namespace fastnn::loop
