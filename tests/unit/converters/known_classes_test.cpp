// converters/known_classes: which MNIST-format dataset a folder holds, told by --dataset or by the
// input path's folder name, never guessed in silence: the source always says which names were applied.
#include "converters/known_classes.h"

#include <gtest/gtest.h>

#include "convert_test_util.h"
#include "core/check.h"

namespace fastnn::converters {
namespace {

using namespace testing;

TEST(KnownClasses, FashionMnistNamesInLabelOrder) {
  const auto& n = fashion_mnist_class_names();
  ASSERT_EQ(n.size(), 10u);
  EXPECT_EQ(n[0], "T-shirt/top");
  EXPECT_EQ(n[5], "Sandal");
  EXPECT_EQ(n[9], "Ankle boot");
}

TEST(KnownClasses, ThePathsLastMnistFolderDecides) {
  TempDir t;
  for (const char* d : {"fashion-mnist", "data/FashionMNIST/raw", "MNIST/raw", "kmnist", "fashionista/mnist", "digits"})
    fs::create_directories(t / d);
  NamedClasses c = mnist_class_names(t / "fashion-mnist", MnistDataset::kAuto, 10);
  EXPECT_EQ(c.names, fashion_mnist_class_names());
  EXPECT_NE(c.source.find("Fashion-MNIST's class names: the input path names the folder fashion-mnist"),
            std::string::npos)
      << c.source;
  EXPECT_EQ(mnist_class_names(t / "data/FashionMNIST/raw", MnistDataset::kAuto, 10).names, fashion_mnist_class_names());
  c = mnist_class_names(t / "MNIST/raw", MnistDataset::kAuto, 10);
  EXPECT_EQ(c.names[3], "3");
  EXPECT_NE(c.source.find("MNIST's digits"), std::string::npos) << c.source;
  // "fashion" outside the MNIST folder's own name does not count.
  EXPECT_NE(mnist_class_names(t / "fashionista/mnist", MnistDataset::kAuto, 10).source.find("MNIST's digits"),
            std::string::npos);
  c = mnist_class_names(t / "kmnist", MnistDataset::kAuto, 10);
  EXPECT_EQ(c.names[0], "0");
  EXPECT_NE(c.source.find("not MNIST or Fashion-MNIST"), std::string::npos) << c.source;
  c = mnist_class_names(t / "digits", MnistDataset::kAuto, 10);
  EXPECT_EQ(c.names[9], "9");
  EXPECT_NE(c.source.find("does not say which MNIST-format dataset"), std::string::npos) << c.source;
  EXPECT_NE(c.source.find("--dataset fashion-mnist"), std::string::npos) << c.source;
  // "." inside the folder is judged by its real path.
  const fs::path cwd = fs::current_path();
  fs::current_path(t / "fashion-mnist");
  EXPECT_EQ(mnist_class_names(".", MnistDataset::kAuto, 10).names, fashion_mnist_class_names());
  fs::current_path(cwd);
}

TEST(KnownClasses, TheFlagWinsAndClassCountsMustFit) {
  TempDir t;
  fs::create_directories(t / "fashion-mnist");
  EXPECT_EQ(mnist_class_names(t / "fashion-mnist", MnistDataset::kMnist, 10).source, "MNIST's digits (--dataset mnist)");
  EXPECT_EQ(mnist_class_names(t / "x", MnistDataset::kFashion, 10).names, fashion_mnist_class_names());
  EXPECT_THROW(mnist_class_names(t / "x", MnistDataset::kFashion, 12), ConfigError);
  const NamedClasses c = mnist_class_names(t / "fashion-mnist", MnistDataset::kAuto, 12);
  EXPECT_EQ(c.names.size(), 12u);
  EXPECT_NE(c.source.find("--num-classes 12"), std::string::npos) << c.source;
  EXPECT_EQ(parse_mnist_dataset("fashion-mnist"), MnistDataset::kFashion);
  EXPECT_THROW(parse_mnist_dataset("fashion"), ConfigError);
}

}  // namespace
}  // namespace fastnn::converters
