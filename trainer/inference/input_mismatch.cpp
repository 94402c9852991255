#include "trainer/inference/input_mismatch.h"

#include <algorithm>
#include <array>
#include <vector>

#include "core/check.h"
#include "core/example.h"
#include "core/image.h"
#include "pipeline/preset.h"

namespace fastnn::inference {
namespace {

std::string item_name(const InputItem& it) {
  if (it.line >= 0) return str(it.path, ":", it.line);
  if (it.record >= 0) return str(it.path, " record ", it.record);
  return it.path;
}

}  // namespace

std::string input_mismatch_warning(const InputItem& item, const ModelInfo& m, const std::string& name) {
  if (!item.error.empty() || item.bytes.empty() || m.height <= 0 || m.width <= 0) return "";
  ImageInfo image;
  bool resizes = true;
  try {
    static const ExampleParser parser({keys::kImageEncoded});
    std::array<FeatureView, 1> v;
    parser.parse(item.bytes, v);
    if (v[0].kind() == FeatureView::Kind::kMissing) return "";
    image = read_image_info(v[0].single_bytes(keys::kImageEncoded));
    resizes = pipeline::preset_resizes(pipeline::parse_preset(m.preset));
  } catch (const Error&) {
    return "";
  }
  std::vector<std::string> why;
  if (m.channels == 1 && image.channels >= 3) why.push_back("a colour image into a gray model");
  const int64_t in_long = std::max(m.height, m.width), in_short = std::min(m.height, m.width);
  if (!resizes && std::max(image.height, image.width) > 2 * in_long) {
    const double kept = static_cast<double>(m.height) * m.width / (static_cast<double>(image.height) * image.width);
    why.push_back(str("the ", m.preset, " preprocessing does not resize, so the model sees a central ", m.height, "x",
                      m.width, " crop (", kept < 0.01 ? "under 1" : str(static_cast<int>(100 * kept + 0.5)),
                      "% of the image)"));
  } else if (resizes && 2 * std::min(image.height, image.width) < in_short) {
    why.push_back(str("the image is blown up more than 2x to ", m.height, "x", m.width));
  }
  if (why.empty()) return "";
  std::string reasons;
  for (const std::string& w : why) reasons += str(reasons.empty() ? "" : "; ", w);
  return str(name.empty() ? item_name(item) : name, " is ", image.height, "x", image.width, "x", image.channels, " but ", m.model_name,
             " was trained on ", m.height, "x", m.width, "x", m.channels, " images: ", reasons,
             ". Answers on images unlike its training data mean little (this is said once)");
}

}  // namespace fastnn::inference
