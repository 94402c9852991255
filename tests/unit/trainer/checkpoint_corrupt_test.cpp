// safetensors reader on corrupt input: every kind of damage is a FormatError that names the file and,
// where there is one, the tensor. Files are built by hand so the damage is exactly the one intended.
#include <gtest/gtest.h>

#include <string>

#include "core/check.h"
#include "tests/unit/trainer/checkpoint_test_util.h"
#include "core/safetensors.h"

namespace fastnn::checkpoint {
namespace {

using testing_util::le64;

std::string file_of(const std::string& json, size_t buffer_bytes) { return le64(json.size()) + json + std::string(buffer_bytes, 'x'); }

// Expects parse() to throw a FormatError whose message contains every fragment.
void expect_error(const std::string& bytes, std::initializer_list<std::string> fragments) {
  try {
    SafetensorsFile::parse(bytes, "bad.safetensors");
    ADD_FAILURE() << "no error";
  } catch (const FormatError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("bad.safetensors"), std::string::npos) << msg;
    for (const auto& f : fragments) EXPECT_NE(msg.find(f), std::string::npos) << "missing '" << f << "' in: " << msg;
  }
}

const char* kGood = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"U8","shape":[4],"data_offsets":[8,12]}})";

TEST(CheckpointCorrupt, GoodFileParses) { EXPECT_EQ(SafetensorsFile::parse(file_of(kGood, 12), "good").arrays().size(), 2u); }

TEST(CheckpointCorrupt, HeaderLength) {
  expect_error("", {"too short"});
  expect_error(std::string("\x10\0\0", 3), {"too short"});
  expect_error(le64(uint64_t{1} << 40) + "{}", {"header length 1099511627776 exceeds the limit"});
  expect_error(le64(~uint64_t{0}), {"exceeds the limit"});
  expect_error(le64(100) + "{}", {"header length 100 runs past the end"});
  SafetensorsLimits small;
  small.max_header_bytes = 16;
  EXPECT_THROW(SafetensorsFile::parse(file_of(kGood, 12), "x", small), FormatError);
}

TEST(CheckpointCorrupt, InvalidJson) {
  expect_error(file_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})", 8), {"not valid JSON"});
  expect_error(file_of("", 0), {"not valid JSON"});
  expect_error(file_of("{\"a\xff\":1}", 0), {"not valid JSON"});  // not UTF-8
  expect_error(file_of("[1, 2]", 0), {"not an object"});
  // nlohmann reports a number beyond double's range as out_of_range, not parse_error (found by fuzzing)
  expect_error(file_of(R"({"c":4444E0000000000000000000444})", 0), {"unusable", "number overflow"});
  expect_error(file_of(std::string(1000, '[') + std::string(1000, ']'), 0), {"nests deeper"});
  expect_error(file_of(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})", 2),
               {"key 'a' twice"});
}

TEST(CheckpointCorrupt, EntryFields) {
  expect_error(file_of(R"({"w":[1]})", 0), {"tensor 'w'", "not an object"});
  expect_error(file_of(R"({"w":{"dtype":"F32","shape":[1]}})", 4), {"tensor 'w'", "missing field 'data_offsets'"});
  expect_error(file_of(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}})", 4), {"tensor 'w'", "unknown field 'x'"});
  expect_error(file_of(R"({"w":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})", 8), {"tensor 'w'", "unsupported dtype 'F64'"});
  expect_error(file_of(R"({"w":{"dtype":"f32","shape":[1],"data_offsets":[0,4]}})", 4), {"unsupported dtype 'f32'"});
  expect_error(file_of(R"({"w":{"dtype":7,"shape":[1],"data_offsets":[0,4]}})", 4), {"dtype is not a string"});
  expect_error(file_of(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4), {"tensor 'w'", "shape entry -1"});
  expect_error(file_of(R"({"w":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", 4), {"shape entry 1.5"});
  expect_error(file_of(R"({"w":{"dtype":"F32","shape":2,"data_offsets":[0,4]}})", 4), {"shape is not a list"});
  expect_error(file_of(R"({"w":{"dtype":"U8","shape":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1],"data_offsets":[0,1]}})", 1), {"rank 17"});
  expect_error(file_of(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0]}})", 1), {"not a list of two offsets"});
  expect_error(file_of(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,-1]}})", 1), {"not non-negative integers"});
  expect_error(file_of(R"({"__metadata__":{"k":1}})", 0), {"__metadata__ value of 'k' is not a string"});
  expect_error(file_of(R"({"__metadata__":[]})", 0), {"__metadata__ is not an object"});
}

TEST(CheckpointCorrupt, ShapeMismatch) {
  expect_error(file_of(R"({"fc/w":{"dtype":"F32","shape":[10,5],"data_offsets":[0,196]}})", 196),
               {"tensor 'fc/w'", "shape [10, 5]", "50 elements of F32", "196 bytes"});
  // A shape whose byte size overflows 64 bits must not wrap around to match.
  expect_error(file_of(R"({"w":{"dtype":"I64","shape":[4611686018427387904,4],"data_offsets":[0,0]}})", 0), {"tensor 'w'"});
  expect_error(file_of(R"({"w":{"dtype":"I64","shape":[2305843009213693952],"data_offsets":[0,0]}})", 0), {"tensor 'w'"});
}

TEST(CheckpointCorrupt, Offsets) {
  expect_error(file_of(R"({"w":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})", 3), {"tensor 'w'", "run past the end"});
  expect_error(file_of(R"({"w":{"dtype":"U8","shape":[0],"data_offsets":[4,0]}})", 4), {"end before they begin"});
  expect_error(file_of(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})", 6),
               {"tensor 'b'", "overlap tensor 'a'"});
  expect_error(file_of(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})", 4),
               {"overlap"});
  expect_error(file_of(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[2],"data_offsets":[4,6]}})", 6),
               {"bytes [2, 4)", "belong to no tensor"});
  expect_error(file_of(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}})", 4), {"bytes [0, 2)"});
  expect_error(file_of(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})", 5), {"trailing bytes"});
}

TEST(CheckpointCorrupt, TruncatedAtEveryLength) {
  const std::string good = file_of(kGood, 12);
  for (size_t n = 0; n < good.size(); ++n) {
    SCOPED_TRACE(n);
    EXPECT_THROW(SafetensorsFile::parse(std::string_view(good).substr(0, n), "t"), FormatError);
  }
}

TEST(CheckpointCorrupt, FileErrorsNameThePath) {
  testing_util::ScratchDir dir("st-corrupt");
  const std::string path = dir.file("broken.safetensors");
  testing_util::write_bytes(path, file_of(kGood, 11));
  try {
    SafetensorsFile::open(path);
    ADD_FAILURE() << "no error";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  EXPECT_THROW(SafetensorsFile::open(dir.file("missing.safetensors")), IoError);
  EXPECT_THROW(SafetensorsFile::open(dir.path()), IoError);  // a directory
  testing_util::write_bytes(path, "");
  EXPECT_THROW(SafetensorsFile::open(path), FormatError);
}

}  // namespace
}  // namespace fastnn::checkpoint
