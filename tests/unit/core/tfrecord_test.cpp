#include "core/tfrecord.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <zlib.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/crc32c.h"

// The largest single allocation made while `g_track` is set: corrupt lengths must never size one.
namespace {
std::atomic<bool> g_track{false};
std::atomic<size_t> g_max_alloc{0};
void* tracked_alloc(size_t n) {
  if (g_track.load(std::memory_order_relaxed)) {
    size_t prev = g_max_alloc.load(std::memory_order_relaxed);
    while (n > prev && !g_max_alloc.compare_exchange_weak(prev, n)) {
    }
  }
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
}  // namespace
void* operator new(size_t n) { return tracked_alloc(n); }
void* operator new[](size_t n) { return tracked_alloc(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }

namespace fastnn {
namespace {

namespace fs = std::filesystem;

// ---- Helpers: the framing as the spec states it, built independently of the code under test ----

void put_le(std::string* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint32_t spec_mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }
uint32_t portable_crc(std::string_view s) { return crc32c_extend_portable(0, s.data(), s.size()); }

std::string spec_frame(std::string_view data) {
  std::string len;
  put_le(&len, data.size(), 8);
  std::string out = len;
  put_le(&out, spec_mask(portable_crc(len)), 4);
  out.append(data);
  put_le(&out, spec_mask(portable_crc(data)), 4);
  return out;
}

std::string random_string(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void write_file(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::vector<std::string> read_all(TFRecordReader& r) {
  std::vector<std::string> out;
  std::string_view v;
  while (r.next(&v)) out.emplace_back(v);
  return out;
}

std::vector<std::string> sample_records() {
  std::vector<std::string> recs = {"", "a", random_string(100, 1), random_string(70000, 2),
                                   random_string(2'500'000, 3)};  // > the writer's chunk
  for (int i = 0; i < 1200; ++i) recs.push_back(random_string(i % 1500, 10 + i));
  return recs;
}

class TFRecordTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/fastnn_tfrecord_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

  std::string write(const std::string& name, const std::vector<std::string>& recs,
                    Compression c = Compression::kNone) {
    TFRecordWriter w(path(name), c);
    for (const auto& r : recs) w.write(r);
    w.close();
    return path(name);
  }

  std::string dir_;
};

// ---- Writer ----

TEST_F(TFRecordTest, WriterOutputIsByteIdenticalToTheSpec) {
  const auto recs = sample_records();
  std::string expected;
  for (const auto& r : recs) expected += spec_frame(r);

  TFRecordWriter w(path("a.tfrecord"));
  for (const auto& r : recs) w.write(r);
  EXPECT_EQ(w.records_written(), recs.size());
  EXPECT_EQ(w.bytes_written(), expected.size());
  w.close();
  EXPECT_TRUE(read_file(path("a.tfrecord")) == expected);

  std::string framed;
  for (const auto& r : recs) append_tfrecord_frame(&framed, r);
  EXPECT_TRUE(framed == expected);
  EXPECT_EQ(tfrecord_frame_size(100), 116u);
}

TEST_F(TFRecordTest, WriterFlushesInDestructor) {
  {
    TFRecordWriter w(path("d.tfrecord"), Compression::kGzip);
    w.write("hello");
  }
  TFRecordReaderOptions o;
  o.compression = Compression::kGzip;
  TFRecordReader r(path("d.tfrecord"), o);
  EXPECT_EQ(read_all(r), std::vector<std::string>{"hello"});
}

TEST_F(TFRecordTest, WriterReportsErrorsWithThePath) {
  EXPECT_THROW(
      {
        try {
          TFRecordWriter w(path("no/such/dir/x.tfrecord"));
        } catch (const IoError& e) {
          EXPECT_NE(std::string(e.what()).find("no/such/dir/x.tfrecord"), std::string::npos) << e.what();
          throw;
        }
      },
      IoError);
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  for (Compression c : {Compression::kNone, Compression::kGzip}) {
    TFRecordWriter w("/dev/full", c);
    w.write("small record, buffered");
    try {
      w.close();
      FAIL() << "close() on /dev/full did not throw";
    } catch (const IoError& e) {
      EXPECT_NE(std::string(e.what()).find("/dev/full"), std::string::npos) << e.what();
    }
  }
  TFRecordWriter w("/dev/full");
  EXPECT_THROW(w.write(random_string(3 << 20, 4)), IoError);  // large records are written at once
  EXPECT_THROW(w.close(), IoError);
}

TEST_F(TFRecordTest, WriteAfterCloseIsAnError) {
  TFRecordWriter w(path("c.tfrecord"));
  w.close();
  EXPECT_THROW(w.write("x"), Error);
  EXPECT_THROW(TFRecordWriter(path("l.tfrecord"), Compression::kGzip, 42), ConfigError);
}

// ---- Reader, plain ----

TEST_F(TFRecordTest, PlainRoundTripWithIndicesAndOffsets) {
  const auto recs = sample_records();
  const std::string file = write("p.tfrecord", recs);
  for (size_t buffer : {size_t{1} << 20, size_t{64}, size_t{1000}, size_t{100000}}) {
    TFRecordReaderOptions o;
    o.read_buffer_bytes = buffer;
    TFRecordReader r(file, o);
    EXPECT_EQ(r.name(), file);
    std::string_view v;
    uint64_t offset = 0;
    for (size_t i = 0; i < recs.size(); ++i) {
      ASSERT_TRUE(r.next(&v)) << "buffer " << buffer << " record " << i;
      ASSERT_TRUE(v == recs[i]) << "buffer " << buffer << " record " << i;
      EXPECT_EQ(r.record_index(), i);
      EXPECT_EQ(r.record_offset(), offset);
      offset += tfrecord_frame_size(recs[i].size());
    }
    EXPECT_FALSE(r.next(&v));
    EXPECT_FALSE(r.next(&v));
    EXPECT_EQ(r.source_bytes_read(), fs::file_size(file));
  }
}

TEST_F(TFRecordTest, ReadsInLargeChunksNotPerRecord) {
  std::vector<std::string> recs(20000, std::string(100, 'x'));
  const std::string file = write("chunks.tfrecord", recs);
  TFRecordReaderOptions o;
  o.read_buffer_bytes = 256 << 10;
  TFRecordReader r(file, o);
  std::string_view v;
  ASSERT_TRUE(r.next(&v));
  EXPECT_EQ(r.source_bytes_read(), 256u << 10);  // one read() filled the whole buffer
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(r.next(&v));
  EXPECT_EQ(r.source_bytes_read(), 256u << 10);
}

TEST_F(TFRecordTest, InMemoryPlainReaderReturnsViewsIntoTheBytes) {
  const auto recs = sample_records();
  std::string bytes;
  for (const auto& r : recs) bytes += spec_frame(r);
  TFRecordReader r(bytes, "memory-shard");
  std::string_view v;
  for (size_t i = 0; i < recs.size(); ++i) {
    ASSERT_TRUE(r.next(&v));
    ASSERT_TRUE(v == recs[i]);
    EXPECT_GE(v.data(), bytes.data());
    EXPECT_LE(v.data() + v.size(), bytes.data() + bytes.size());
  }
  EXPECT_FALSE(r.next(&v));
  EXPECT_EQ(r.source_bytes_read(), bytes.size());
}

TEST_F(TFRecordTest, EmptyInputHasZeroRecords) {
  write_file(path("empty"), "");
  std::string_view v;
  for (Compression c : {Compression::kNone, Compression::kGzip, Compression::kZlib}) {
    TFRecordReaderOptions o;
    o.compression = c;
    TFRecordReader f(path("empty"), o);
    EXPECT_FALSE(f.next(&v));
    TFRecordReader m(std::string_view(), "empty", o);
    EXPECT_FALSE(m.next(&v));
    // A compressed stream holding no records.
    if (c != Compression::kNone) {
      const std::string file = write("none.z", {}, c);
      TFRecordReader z(file, o);
      EXPECT_FALSE(z.next(&v));
    }
  }
  EXPECT_EQ(detect_compression(path("empty")), Compression::kNone);
}

// ---- Compression ----

TEST_F(TFRecordTest, GzipAndZlibRoundTrip) {
  std::vector<std::string> recs = sample_records();
  recs.push_back(std::string(3'000'000, 'z'));  // compresses well: the inflated record outgrows the buffer
  std::string plain;
  for (const auto& r : recs) plain += spec_frame(r);
  for (Compression c : {Compression::kGzip, Compression::kZlib}) {
    SCOPED_TRACE(compression_name(c));
    const std::string file = write(std::string("rt.") + compression_name(c), recs, c);
    EXPECT_EQ(detect_compression(file), c);
    for (size_t buffer : {size_t{1} << 20, size_t{100}}) {
      TFRecordReaderOptions o;
      o.compression = c;
      o.read_buffer_bytes = buffer;
      TFRecordReader r(file, o);
      auto got = read_all(r);
      ASSERT_EQ(got.size(), recs.size());
      for (size_t i = 0; i < recs.size(); ++i) ASSERT_TRUE(got[i] == recs[i]) << i;
      EXPECT_EQ(r.source_bytes_read(), fs::file_size(file));
      const std::string bytes = read_file(file);
      TFRecordReader m(bytes, "mem", o);
      EXPECT_EQ(read_all(m).size(), recs.size());
    }
    // Independently decompressed with zlib's own readers, the file holds exactly the plain framing.
    std::string out(plain.size() + 1, '\0');
    if (c == Compression::kGzip) {
      gzFile gz = gzopen(file.c_str(), "rb");
      ASSERT_NE(gz, nullptr);
      size_t total = 0;
      int n;
      while ((n = gzread(gz, out.data() + total, static_cast<unsigned>(std::min<size_t>(out.size() - total, 1 << 20)))) > 0)
        total += static_cast<size_t>(n);
      gzclose(gz);
      out.resize(total);
    } else {
      const std::string z = read_file(file);
      uLongf len = out.size();
      ASSERT_EQ(uncompress(reinterpret_cast<Bytef*>(out.data()), &len, reinterpret_cast<const Bytef*>(z.data()), z.size()), Z_OK);
      out.resize(len);
    }
    EXPECT_TRUE(out == plain);
  }
}

TEST_F(TFRecordTest, ConcatenatedGzipMembersAreOneStream) {
  const std::string a = read_file(write("a.gz", {"one", "two"}, Compression::kGzip));
  const std::string b = read_file(write("b.gz", {"three"}, Compression::kGzip));
  write_file(path("ab.gz"), a + b);
  TFRecordReaderOptions o;
  o.compression = Compression::kGzip;
  TFRecordReader r(path("ab.gz"), o);
  EXPECT_EQ(read_all(r), (std::vector<std::string>{"one", "two", "three"}));
}

TEST_F(TFRecordTest, DetectCompression) {
  EXPECT_EQ(detect_compression(write("p", {"abc"})), Compression::kNone);
  EXPECT_EQ(detect_compression(write("g", {"abc"}, Compression::kGzip)), Compression::kGzip);
  EXPECT_EQ(detect_compression(write("z", {"abc"}, Compression::kZlib)), Compression::kZlib);
  // A plain record of length 0x9c78 starts with the bytes 78 9c, a valid ZLIB header.
  const std::string tricky = write("tricky", {std::string(0x9c78, 'q')});
  EXPECT_EQ(static_cast<unsigned char>(read_file(tricky)[0]), 0x78);
  EXPECT_EQ(detect_compression(tricky), Compression::kNone);
  EXPECT_THROW(detect_compression(path("missing")), IoError);
}

TEST(TFRecordNames, ParseCompression) {
  EXPECT_EQ(parse_compression(""), Compression::kNone);
  EXPECT_EQ(parse_compression("none"), Compression::kNone);
  EXPECT_EQ(parse_compression("NONE"), Compression::kNone);
  EXPECT_EQ(parse_compression("gzip"), Compression::kGzip);
  EXPECT_EQ(parse_compression("GZIP"), Compression::kGzip);
  EXPECT_EQ(parse_compression("zlib"), Compression::kZlib);
  EXPECT_EQ(parse_compression("ZLIB"), Compression::kZlib);
  try {
    parse_compression("lz4");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("gzip"), std::string::npos);
  }
  EXPECT_STREQ(compression_name(Compression::kZlib), "zlib");
}

// ---- Corrupt input ----

struct Corruption {
  const char* what;
  std::string bytes;
};

// Three records; every corruption hits record 1, whose frame starts at offset 66.
std::vector<Corruption> corruptions() {
  const std::string r0 = random_string(50, 7), r1 = random_string(300, 8), r2 = random_string(20, 9);
  const std::string good = spec_frame(r0) + spec_frame(r1) + spec_frame(r2);
  const size_t at = 66;
  auto flip = [&](size_t i) {
    std::string s = good;
    s[i] ^= 0x20;
    return s;
  };
  std::string huge = spec_frame(r0);
  std::string len;
  put_le(&len, uint64_t{1} << 62, 8);
  huge += len;
  put_le(&huge, spec_mask(portable_crc(len)), 4);  // a valid length CRC: only the bound catches it
  huge += r1;
  return {{"flipped length byte", flip(at + 1)},
          {"flipped length CRC", flip(at + 9)},
          {"flipped data byte", flip(at + 12 + 150)},
          {"flipped data CRC", flip(at + 12 + 300 + 2)},
          {"truncated header", good.substr(0, at + 7)},
          {"truncated data", good.substr(0, at + 12 + 100)},
          {"truncated data CRC", good.substr(0, at + 12 + 300 + 2)},
          {"length 2^62", huge}};
}

void expect_format_error(TFRecordReader& r, const std::string& name, const std::string& what) {
  std::string_view v;
  ASSERT_TRUE(r.next(&v)) << what;  // record 0 is intact
  g_max_alloc = 0;
  g_track = true;
  try {
    while (r.next(&v)) {
    }
    g_track = false;
    ADD_FAILURE() << what << ": no error";
  } catch (const FormatError& e) {
    g_track = false;
    const std::string m = e.what();
    EXPECT_NE(m.find(name + ": "), std::string::npos) << what << ": " << m;
    EXPECT_NE(m.find("record 1 at offset 66"), std::string::npos) << what << ": " << m;
  }
  EXPECT_LT(g_max_alloc.load(), size_t{16} << 20) << what;
}

TEST_F(TFRecordTest, CorruptPlainInputGivesFormatErrorWithContext) {
  for (const Corruption& c : corruptions()) {
    write_file(path("bad.tfrecord"), c.bytes);
    for (uint64_t max : {uint64_t{1} << 30, ~uint64_t{0}}) {
      TFRecordReaderOptions o;
      o.max_record_bytes = max;
      TFRecordReader f(path("bad.tfrecord"), o);
      expect_format_error(f, path("bad.tfrecord"), std::string(c.what) + " (file)");
      TFRecordReader m(c.bytes, "in-memory.tfrecord", o);
      expect_format_error(m, "in-memory.tfrecord", std::string(c.what) + " (memory)");
    }
  }
}

// Inside a compressed stream the remaining size is unknown: the bound is max_record_bytes, and
// with no bound the buffer grows only as bytes arrive.
TEST_F(TFRecordTest, CorruptCompressedInputGivesFormatErrorWithContext) {
  for (Compression comp : {Compression::kGzip, Compression::kZlib}) {
    for (const Corruption& c : corruptions()) {
      std::string z(compressBound(c.bytes.size()) + 64, '\0');
      if (comp == Compression::kZlib) {
        uLongf n = z.size();
        ASSERT_EQ(compress(reinterpret_cast<Bytef*>(z.data()), &n, reinterpret_cast<const Bytef*>(c.bytes.data()), c.bytes.size()), Z_OK);
        z.resize(n);
      } else {
        gzFile gz = gzopen(path("bad.gz").c_str(), "wb");
        gzwrite(gz, c.bytes.data(), static_cast<unsigned>(c.bytes.size()));
        gzclose(gz);
        z = read_file(path("bad.gz"));
      }
      for (uint64_t max : {uint64_t{1} << 30, ~uint64_t{0}}) {
        TFRecordReaderOptions o;
        o.compression = comp;
        o.max_record_bytes = max;
        o.read_buffer_bytes = 4096;
        TFRecordReader m(z, "z.tfrecord", o);
        expect_format_error(m, "z.tfrecord", std::string(c.what) + " " + compression_name(comp));
      }
    }
  }
}

TEST_F(TFRecordTest, DataCrcCheckCanBeTurnedOff) {
  std::string bytes = spec_frame("hello") + spec_frame("world");
  bytes[21 + 12] = 'W';  // first byte of "world" (the first frame is 5 + 16 bytes)
  TFRecordReaderOptions o;
  o.verify_data_crc = false;
  TFRecordReader r(bytes, "m", o);
  EXPECT_EQ(read_all(r), (std::vector<std::string>{"hello", "World"}));
  TFRecordReader strict(bytes, "m");
  std::string_view v;
  EXPECT_TRUE(strict.next(&v));
  EXPECT_THROW(strict.next(&v), FormatError);
}

TEST_F(TFRecordTest, RecordLongerThanMaxIsAnError) {
  const std::string bytes = spec_frame(std::string(1000, 'a'));
  TFRecordReaderOptions o;
  o.max_record_bytes = 999;
  TFRecordReader r(bytes, "m", o);
  std::string_view v;
  try {
    r.next(&v);
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("max_record_bytes"), std::string::npos) << e.what();
  }
  o.max_record_bytes = 1000;
  TFRecordReader ok(bytes, "m", o);
  EXPECT_TRUE(ok.next(&v));
}

TEST_F(TFRecordTest, CompressedStreamCutShortIsAnError) {
  std::vector<std::string> recs;
  for (int i = 0; i < 50; ++i) recs.push_back(random_string(2000, 100 + i));
  for (Compression c : {Compression::kGzip, Compression::kZlib}) {
    const std::string full = read_file(write("cut", recs, c));
    for (size_t keep : {full.size() - 1, full.size() - 4, full.size() - 8, full.size() / 2, size_t{11}, size_t{1}}) {
      SCOPED_TRACE(std::string(compression_name(c)) + " keep " + std::to_string(keep));
      write_file(path("cut.part"), full.substr(0, keep));
      TFRecordReaderOptions o;
      o.compression = c;
      TFRecordReader r(path("cut.part"), o);
      std::string_view v;
      size_t n = 0;
      try {
        while (r.next(&v)) ++n;
        ADD_FAILURE() << "no error";
      } catch (const FormatError& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find(path("cut.part")), std::string::npos) << m;
        EXPECT_NE(m.find("cut short"), std::string::npos) << m;
        EXPECT_NE(m.find(str("record ", n, " at offset ")), std::string::npos) << m;
      }
    }
  }
}

TEST_F(TFRecordTest, TrailingBytesAfterZlibStreamAreAnError) {
  write_file(path("t.z"), read_file(write("z", {"abc"}, Compression::kZlib)) + "junk");
  TFRecordReaderOptions o;
  o.compression = Compression::kZlib;
  TFRecordReader r(path("t.z"), o);
  std::string_view v;
  EXPECT_TRUE(r.next(&v));
  EXPECT_THROW(r.next(&v), FormatError);
}

TEST_F(TFRecordTest, MissingFileIsAnIoError) {
  try {
    TFRecordReader r(path("missing.tfrecord"));
    FAIL();
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("missing.tfrecord"), std::string::npos);
  }
}

}  // namespace
}  // namespace fastnn
