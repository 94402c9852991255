// The real class names of MNIST-format datasets, whose files carry only label numbers, and how an
// input folder is told to be one of them.
//
// MNIST and Fashion-MNIST (and KMNIST, EMNIST...) ship IDX files with the very same names, so the
// files cannot say which dataset they hold. The choice is made openly and said (`source`, printed by
// `convert` and kept in the manifest): `--dataset fashion-mnist` or `mnist` names it; with `auto` the
// input path does, by its last folder name containing "mnist" (any case): with "fashion" in it
// (fashion-mnist, FashionMNIST) Fashion-MNIST's ten names; "kmnist", "emnist" another dataset (numbers);
// otherwise MNIST, whose digits "0".."9" are its real names. A path that names no MNIST dataset gets
// the numbers "0".."n-1" and a source that says so and how to name them. Names apply only to ten
// classes: `--num-classes` other than 10 with fashion-mnist is a ConfigError, and with auto gets numbers.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace fastnn::converters {

enum class MnistDataset { kAuto, kMnist, kFashion, kOther };

// "auto", "mnist", "fashion-mnist", "other" (--dataset); ConfigError for anything else.
MnistDataset parse_mnist_dataset(std::string_view name);

// T-shirt/top, Trouser, Pullover, Dress, Coat, Sandal, Shirt, Sneaker, Bag, Ankle boot (Zalando's
// README, label order).
const std::vector<std::string>& fashion_mnist_class_names();

struct NamedClasses {
  std::vector<std::string> names;
  std::string source;  // which names were applied and why, in words
};

// The class names for the MNIST-format folder `dir` (rules above).
NamedClasses mnist_class_names(const std::string& dir, MnistDataset which, int num_classes);

}  // namespace fastnn::converters
