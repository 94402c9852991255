// TensorFlow's table format: fastnn's writer against its reader, and the reader against tables built
// here byte by byte (an independent encoder, which can also write Snappy blocks and broken ones).
#include "core/tf_checkpoint/table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <snappy.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "core/check.h"
#include "core/crc32c.h"

namespace fastnn::tf_checkpoint {
namespace {

using ::testing::HasSubstr;
using Entries = std::vector<std::pair<std::string, std::string>>;

void varint(std::string* s, uint64_t v) {
  for (; v >= 0x80; v >>= 7) s->push_back(static_cast<char>(v | 0x80));
  s->push_back(static_cast<char>(v));
}

void fixed32(std::string* s, uint32_t v) {
  for (int i = 0; i < 4; ++i) s->push_back(static_cast<char>(v >> (8 * i)));
}

struct RawEntry {
  uint32_t shared;
  std::string key_tail, value;
};

// A block's contents from explicit entries and restart offsets.
std::string block(const std::vector<RawEntry>& entries, const std::vector<uint32_t>& restarts) {
  std::string b;
  for (const RawEntry& e : entries) {
    varint(&b, e.shared);
    varint(&b, e.key_tail.size());
    varint(&b, e.value.size());
    b += e.key_tail + e.value;
  }
  for (uint32_t r : restarts) fixed32(&b, r);
  fixed32(&b, static_cast<uint32_t>(restarts.size()));
  return b;
}

// Entries with no shared prefixes, a restart at every one.
std::string simple_block(const Entries& entries) {
  std::vector<RawEntry> raw;
  std::vector<uint32_t> restarts;
  size_t at = 0;
  for (const auto& [k, v] : entries) {
    restarts.push_back(static_cast<uint32_t>(at));
    raw.push_back({0, k, v});
    at = block(raw, {}).size() - 4;
  }
  return block(raw, restarts);
}

struct Stored {
  std::string contents;
  char type = 0;  // 0 raw, 1 snappy
  std::string last_key;
};

// A table of the given data blocks (stored as given, with correct trailers), an empty metaindex, an
// index and the footer.
std::string assemble(const std::vector<Stored>& blocks) {
  std::string file;
  auto put = [&](const std::string& contents, char type) {
    std::string handle;
    varint(&handle, file.size());
    varint(&handle, contents.size());
    file += contents;
    file.push_back(type);
    fixed32(&file, crc32c_mask(crc32c(file.data() + file.size() - contents.size() - 1, contents.size() + 1)));
    return handle;
  };
  Entries index;
  for (const Stored& b : blocks) index.push_back({b.last_key, put(b.contents, b.type)});
  const std::string meta = put(block({}, {0}), 0);
  const std::string idx = put(simple_block(index), 0);
  std::string footer = meta + idx;
  footer.resize(40, '\0');
  fixed32(&footer, static_cast<uint32_t>(kTableMagic));
  fixed32(&footer, static_cast<uint32_t>(kTableMagic >> 32));
  return file + footer;
}

std::string parse_error(const std::string& bytes) {
  try {
    Table::parse(bytes, "t.index");
  } catch (const FormatError& e) {
    return e.what();
  }
  return "(parsed)";
}

TEST(TfTable, WriterRoundTripsThroughTheReaderOverManyBlocks) {
  Entries entries;
  for (int i = 0; i < 300; ++i)  // shared prefixes, restarts every 16 keys, blocks of ~200 bytes
    entries.push_back({"InceptionV3/Mixed_" + std::to_string(1000 + i) + "/weights", std::string(i % 7, 'v') + char('a' + i % 26)});
  entries.insert(entries.begin(), {"", "header"});
  const std::string bytes = encode_table(entries, 200);
  const Table t = Table::parse(bytes, "t.index");
  ASSERT_EQ(t.entries().size(), entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    EXPECT_EQ(t.entries()[i].key, entries[i].first);
    EXPECT_EQ(t.entries()[i].value, entries[i].second);
    // A raw block's value offset is where the value's bytes are in the file.
    EXPECT_EQ(bytes.substr(t.entries()[i].offset, entries[i].second.size()), entries[i].second);
  }
  ASSERT_NE(t.find("InceptionV3/Mixed_1150/weights"), nullptr);
  EXPECT_EQ(t.find("InceptionV3/Mixed_1150/weights")->value, entries[151].second);
  EXPECT_EQ(t.find("InceptionV3/Mixed_1150"), nullptr);
  EXPECT_TRUE(Table::has_magic(bytes));
}

TEST(TfTable, AnEmptyTableHasAnEmptyIndexBlock) {
  const Table t = Table::parse(encode_table({}), "empty.index");
  EXPECT_TRUE(t.entries().empty());
}

TEST(TfTable, ReadsPrefixCompressedKeysFromAnIndependentEncoder) {
  // "conv1/biases", "conv1/weights" (shares "conv1/"), restart, "conv2/weights".
  const std::string b = block({{0, "conv1/biases", "B"}, {6, "weights", "W1"}, {0, "conv2/weights", "W2"}}, {0, 28});
  const Table t = Table::parse(assemble({{b, 0, "conv2/weights"}}), "t.index");
  ASSERT_EQ(t.entries().size(), 3u);
  EXPECT_EQ(t.entries()[1].key, "conv1/weights");
  EXPECT_EQ(t.entries()[1].value, "W1");
  EXPECT_EQ(t.entries()[2].key, "conv2/weights");
}

TEST(TfTable, ReadsSnappyBlocks) {
  Entries entries;
  for (int i = 0; i < 50; ++i) entries.push_back({str("k", 100 + i), std::string(100, char('a' + i % 3))});
  const std::string contents = simple_block(entries);
  std::string packed;
  snappy::Compress(contents.data(), contents.size(), &packed);
  ASSERT_LT(packed.size(), contents.size() / 4);
  const std::string bytes = assemble({{packed, 1, "k149"}});
  const Table t = Table::parse(bytes, "t.index");
  ASSERT_EQ(t.entries().size(), 50u);
  EXPECT_EQ(t.find("k120")->value, std::string(100, 'c'));
  EXPECT_EQ(t.find("k120")->offset, 0u);  // inside a compressed block: the block's offset
}

TEST(TfTable, RefusesDamageNamingTheFileAndTheByte) {
  const std::string good = encode_table({{"", "h"}, {"a", "1"}, {"b", "2"}});
  std::string flipped = good;
  flipped[3] ^= 0x10;
  EXPECT_THAT(parse_error(flipped), HasSubstr("t.index: block at byte 0"));
  EXPECT_THAT(parse_error(flipped), HasSubstr("CRC-32C"));
  EXPECT_THAT(parse_error(good.substr(0, good.size() - 1)), HasSubstr("not a TensorFlow table"));
  EXPECT_THAT(parse_error(good.substr(0, 20)), HasSubstr("too short for a table"));
  std::string bad_type = assemble({{simple_block({{"a", "1"}}), 7, "a"}});
  EXPECT_THAT(parse_error(bad_type), HasSubstr("unknown compression type 7"));
}

TEST(TfTable, RefusesMalformedBlocks) {
  // An entry at a restart point that claims a shared prefix.
  EXPECT_THAT(parse_error(assemble({{block({{2, "ab", "v"}}, {0}), 0, "ab"}})), HasSubstr("at a restart point"));
  // A shared prefix longer than the previous key.
  EXPECT_THAT(parse_error(assemble({{block({{0, "a", "1"}, {5, "b", "2"}}, {0}), 0, "b"}})),
              HasSubstr("shares 5 bytes with a 1-byte previous key"));
  // A restart offset in the middle of an entry.
  EXPECT_THAT(parse_error(assemble({{block({{0, "a", "1"}, {0, "b", "2"}}, {0, 2}), 0, "b"}})),
              HasSubstr("restart point 1 is not the start of an entry"));
  // More restart points than the block has bytes.
  std::string huge = block({{0, "a", "1"}}, {0});
  huge.replace(huge.size() - 4, 4, std::string("\xff\xff\xff\x0f", 4));
  EXPECT_THAT(parse_error(assemble({{huge, 0, "a"}})), HasSubstr("restart points do not fit"));
  // A value running past the block.
  std::string long_value = block({{0, "a", "1"}}, {0});
  long_value[2] = 100;
  EXPECT_THAT(parse_error(assemble({{long_value, 0, "a"}})), HasSubstr("runs past the end of its block"));
  // Keys out of order across blocks, and an index key below its block's last key.
  EXPECT_THAT(parse_error(assemble({{simple_block({{"b", "1"}}), 0, "b"}, {simple_block({{"a", "2"}}), 0, "c"}})),
              HasSubstr("keys out of order"));
  EXPECT_THAT(parse_error(assemble({{simple_block({{"b", "1"}}), 0, "a"}})), HasSubstr("sorts before its block's last key"));
}

TEST(TfTable, RefusesHandlesOutsideTheFileAndOversizedSnappyClaims) {
  std::string bytes = encode_table({{"a", "1"}});
  // The footer's index handle pointing past the footer.
  std::string footer = bytes.substr(bytes.size() - kTableFooterBytes);
  std::string moved = bytes.substr(0, bytes.size() - kTableFooterBytes);
  std::string handles;
  varint(&handles, 0);
  varint(&handles, 0);
  varint(&handles, 1u << 20);
  varint(&handles, 10);
  handles.resize(40, '\0');
  EXPECT_THAT(parse_error(moved + handles + footer.substr(40)), HasSubstr("run past the footer"));
  // A 10-byte Snappy block claiming a gigabyte.
  std::string claim;
  varint(&claim, 1u << 30);
  claim += "abcdefgh";
  EXPECT_THAT(parse_error(assemble({{claim, 1, "a"}})), HasSubstr("more than it can hold"));
}

}  // namespace
}  // namespace fastnn::tf_checkpoint
