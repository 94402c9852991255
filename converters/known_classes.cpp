#include "converters/known_classes.h"

#include <cctype>
#include <climits>
#include <cstdlib>

#include "core/ascii.h"
#include "core/check.h"

namespace fastnn::converters {
namespace {

std::vector<std::string> numbers(int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back(std::to_string(i));
  return out;
}

// The nearest of `dir`'s own name and its parent's (made absolute, so "." inside fashion-mnist/ counts)
// that contains "mnist"; "" when neither does. Folders further up name projects, not datasets.
std::string mnist_folder(const std::string& dir) {
  std::string path = dir;
  if (char* real = ::realpath(dir.c_str(), nullptr)) {
    path = real;
    std::free(real);
  }
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  for (int up = 0; up < 2 && !path.empty(); ++up) {
    const size_t slash = path.rfind('/');
    const std::string part = ascii_lower(slash == std::string::npos ? path : path.substr(slash + 1));
    if (part.find("mnist") != std::string::npos) return part;
    if (slash == std::string::npos) break;
    path.resize(slash);
  }
  return "";
}

}  // namespace

MnistDataset parse_mnist_dataset(std::string_view name) {
  if (name == "auto") return MnistDataset::kAuto;
  if (name == "mnist") return MnistDataset::kMnist;
  if (name == "fashion-mnist") return MnistDataset::kFashion;
  if (name == "other") return MnistDataset::kOther;
  throw ConfigError(str("--dataset must be auto, mnist, fashion-mnist or other, not \"", name, "\""));
}

const std::vector<std::string>& fashion_mnist_class_names() {
  static const std::vector<std::string> names = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                                 "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  return names;
}

NamedClasses mnist_class_names(const std::string& dir, MnistDataset which, int num_classes) {
  const char* how_to = "--dataset fashion-mnist, mnist or other says which";
  if (which == MnistDataset::kFashion) {
    if (num_classes != 10)
      throw ConfigError(str("--dataset fashion-mnist has 10 classes, --num-classes is ", num_classes));
    return {fashion_mnist_class_names(), "Fashion-MNIST's class names (--dataset fashion-mnist)"};
  }
  if (which == MnistDataset::kMnist) return {numbers(num_classes), "MNIST's digits (--dataset mnist)"};
  if (which == MnistDataset::kOther) return {numbers(num_classes), "label numbers (--dataset other)"};
  const std::string folder = mnist_folder(dir);
  if (folder.empty())
    return {numbers(num_classes),
            str("label numbers: the input path ", dir, " does not say which MNIST-format dataset it holds (", how_to, ")")};
  if (num_classes != 10)
    return {numbers(num_classes), str("label numbers: --num-classes ", num_classes, " is not the ten classes of ", folder)};
  if (folder.find("fashion") != std::string::npos)
    return {fashion_mnist_class_names(),
            str("Fashion-MNIST's class names: the input path names the folder ", folder, " (", how_to, ")")};
  const size_t at = folder.find("mnist");
  if (at > 0 && (folder[at - 1] == 'k' || folder[at - 1] == 'e'))
    return {numbers(num_classes), str("label numbers: the input folder ", folder,
                                      " is not MNIST or Fashion-MNIST, whose names fastnn knows (", how_to, ")")};
  return {numbers(num_classes), str("MNIST's digits: the input path names the folder ", folder, " (", how_to, ")")};
}

}  // namespace fastnn::converters
