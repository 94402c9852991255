// trainer/inference/input_mismatch.h: the warning for an input far from the model's training images, on
// image files read the way `fastnn predict` reads them (InputStream).
#include "trainer/inference/input_mismatch.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "core/image.h"

namespace fastnn::inference {
namespace {

namespace fs = std::filesystem;

class InputMismatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fastnn_input_mismatch_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A PNG of h x w x c written to a file and read back as predict's input item.
  InputItem image_item(int h, int w, int c) {
    const std::vector<uint8_t> pixels(static_cast<size_t>(h) * w * c, 128);
    const fs::path p = dir_ / ("img_" + std::to_string(h) + "x" + std::to_string(w) + "x" + std::to_string(c) + ".png");
    std::ofstream(p, std::ios::binary) << encode_png(pixels.data(), w, h, c);
    InputStream stream(resolve_inputs({p.string()}));
    InputItem item;
    EXPECT_TRUE(stream.next(&item));
    return item;
  }
  static ModelInfo model(const std::string& preset, int size, int channels) {
    ModelInfo m;
    m.model_name = preset == "lenet" ? "lenet" : "inception_v3";
    m.preset = preset;
    m.height = m.width = size;
    m.channels = channels;
    return m;
  }
  fs::path dir_;
};

TEST_F(InputMismatchTest, ImagesLikeTheTrainingOnesAreNotWarnedAbout) {
  EXPECT_EQ(input_mismatch_warning(image_item(28, 28, 1), model("lenet", 28, 1)), "");
  EXPECT_EQ(input_mismatch_warning(image_item(40, 50, 1), model("lenet", 28, 1)), "");   // under 2x: a small crop
  EXPECT_EQ(input_mismatch_warning(image_item(300, 400, 3), model("inception", 299, 3)), "");
  EXPECT_EQ(input_mismatch_warning(image_item(20, 20, 1), model("inception", 32, 3)), "");  // gray into colour is fine
}

TEST_F(InputMismatchTest, APhotographIntoAFashionMnistLenetIsNamedWithTheNumbers) {
  const InputItem photo = image_item(427, 640, 3);
  const std::string w = input_mismatch_warning(photo, model("lenet", 28, 1));
  EXPECT_NE(w.find(photo.path + " is 427x640x3 but lenet was trained on 28x28x1 images"), std::string::npos) << w;
  EXPECT_NE(w.find("a colour image into a gray model"), std::string::npos) << w;
  EXPECT_NE(w.find("central 28x28 crop (under 1% of the image)"), std::string::npos) << w;
  EXPECT_NE(input_mismatch_warning(photo, model("lenet", 28, 1), "an image sent").find("an image sent is 427x640x3"),
            std::string::npos);
}

TEST_F(InputMismatchTest, ATinyImageUnderAResizingPresetIsSaidToBeBlownUp) {
  const std::string w = input_mismatch_warning(image_item(40, 60, 3), model("inception", 299, 3));
  EXPECT_NE(w.find("blown up more than 2x to 299x299"), std::string::npos) << w;
}

TEST_F(InputMismatchTest, UnreadableOrFailedItemsAreLeftToClassify) {
  InputItem bad;
  bad.path = "x.png";
  bad.error = "cannot read";
  EXPECT_EQ(input_mismatch_warning(bad, model("lenet", 28, 1)), "");
  bad.error.clear();
  bad.bytes = "not an Example";
  EXPECT_EQ(input_mismatch_warning(bad, model("lenet", 28, 1)), "");
}

}  // namespace
}  // namespace fastnn::inference
