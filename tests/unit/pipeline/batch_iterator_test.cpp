// map_and_batch + prefetch: determinism across thread counts, epoch boundaries, the bounded pool,
// error reporting, the guard.
#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "core/check.h"
#include "pipeline/dataset.h"
#include "pipeline/guard.h"
#include "pipeline/rng.h"
#include "pipeline_test_util.h"

namespace fastnn::pipeline {
namespace {

using testing::ScratchDir;
using testing::write_named_shards;

constexpr int kSlot = 16;

// Slot: the record's name (8 bytes, zero padded), then 4 bytes from the per-sample RNG, then the
// epoch position (4 bytes). Label: file * 1000 + record. Spins a record-dependent time so that
// samples finish out of order.
std::shared_ptr<SampleMapper> naming_mapper(const std::string& fail_on = "") {
  BatchSpec spec{1, kSlot, 1, DType::kU8, Layout::kNHWC};
  return make_function_mapper(spec, [fail_on](std::string_view rec, const SampleContext& ctx, void* slot,
                                              int32_t* label) {
    if (!fail_on.empty() && rec == fail_on) throw FormatError("bad sample");
    auto* p = static_cast<uint8_t*>(slot);
    std::memset(p, 0, kSlot);
    std::memcpy(p, rec.data(), std::min<size_t>(rec.size(), 8));
    uint32_t r = SampleRng(ctx.seed, ctx.epoch, ctx.index, RngStream::kUser).next_u32();
    std::memcpy(p + 8, &r, 4);
    uint32_t idx = static_cast<uint32_t>(ctx.index);
    std::memcpy(p + 12, &idx, 4);
    int f = 0, n = 0;
    std::sscanf(std::string(rec).c_str(), "f%dr%d", &f, &n);
    *label = f * 1000 + n;
    auto until = std::chrono::steady_clock::now() + std::chrono::microseconds((n * 37) % 60);
    while (std::chrono::steady_clock::now() < until) {
    }
  });
}

struct Seen {
  int64_t epoch, step;
  std::vector<uint8_t> data;
  std::vector<int32_t> labels;
  std::vector<SampleSource> sources;
  bool operator==(const Seen&) const = default;
};

std::vector<Seen> run(const Dataset& ds, uint64_t first_batch = 0, PipelineStats* stats = nullptr) {
  std::vector<Seen> out;
  auto it = ds.make_iterator(first_batch);
  BatchHandle b;
  while (it->next(&b)) {
    Seen s{b->epoch(), b->step(), {}, {}, {}};
    auto* d = static_cast<const uint8_t*>(b->data());
    s.data.assign(d, d + b->bytes());
    s.labels.assign(b->labels(), b->labels() + b->size());
    s.sources.assign(b->sources(), b->sources() + b->size());
    out.push_back(std::move(s));
  }
  if (stats != nullptr) *stats = it->stats();
  return out;
}

Dataset make(const std::vector<std::string>& paths, int threads, bool deterministic = true, int batch = 16,
             bool drop = false, int64_t epochs = 2) {
  Dataset ds = Dataset::from_files(paths);
  ds.interleave(2, 1).shuffle(20, 5).repeat(epochs).map_and_batch(naming_mapper(), batch, 3, drop).prefetch(4);
  DatasetOptions o;
  o.num_threads = threads;
  o.deterministic = deterministic;
  o.seed = 11;
  ds.with_options(o);
  return ds;
}

TEST(MapAndBatch, SameBatchesForAnyThreadCount) {
  ScratchDir dir("det");
  auto paths = write_named_shards(dir, {50, 50, 37});
  auto one = run(make(paths, 1));
  ASSERT_EQ(one.size(), 18u);  // 137 records: 9 batches per epoch, the last one short
  for (int threads : {2, 3, 4}) EXPECT_EQ(run(make(paths, threads)), one) << threads << " threads";
}

TEST(MapAndBatch, EpochBoundariesAndDropRemainder) {
  ScratchDir dir("epochs");
  auto paths = write_named_shards(dir, {50, 50, 37});
  for (bool drop : {true, false}) {
    Dataset ds = make(paths, 2, true, 16, drop, 3);
    EXPECT_EQ(ds.batches_per_epoch(), drop ? 8 : 9);
    auto batches = run(ds);
    ASSERT_EQ(batches.size(), size_t(3 * ds.batches_per_epoch()));
    std::map<int64_t, std::set<int32_t>> labels_per_epoch;
    for (size_t i = 0; i < batches.size(); ++i) {
      const Seen& s = batches[i];
      EXPECT_EQ(s.epoch, int64_t(i) / ds.batches_per_epoch());
      EXPECT_EQ(s.step, int64_t(i) % ds.batches_per_epoch());
      size_t expect = (!drop && s.step == 8) ? 137 - 8 * 16 : 16;
      EXPECT_EQ(s.labels.size(), expect);
      for (size_t k = 0; k < s.labels.size(); ++k) {
        EXPECT_TRUE(labels_per_epoch[s.epoch].insert(s.labels[k]).second) << "sample twice in an epoch";
        uint32_t idx;
        std::memcpy(&idx, s.data.data() + k * kSlot + 12, 4);
        EXPECT_EQ(idx, uint32_t(s.step * 16 + k)) << "epoch position";
      }
    }
    for (auto& [e, l] : labels_per_epoch) EXPECT_EQ(l.size(), drop ? 128u : 137u);
  }
}

// Resuming: an iterator started at batch k gives exactly batches k, k+1, ... of one started at 0
// (shuffled, augmented, cached or not), reads no record of the epochs before k's and decodes
// nothing before k.
TEST(MapAndBatch, StartingAtALaterBatchGivesTheSameTail) {
  ScratchDir dir("start");
  auto paths = write_named_shards(dir, {50, 50, 37});  // 137 records: 9 batches of 16 per epoch
  for (bool cached : {false, true}) {
    auto build = [&] {
      Dataset ds = Dataset::from_files(paths);
      ds.interleave(2, 1);
      if (cached) ds.cache();
      ds.shuffle(20, 5).repeat(3).map_and_batch(naming_mapper(), 16, 3, false).prefetch(4);
      DatasetOptions o;
      o.num_threads = 3;
      o.seed = 11;
      ds.with_options(o);
      return ds;
    };
    const auto all = run(build());
    ASSERT_EQ(all.size(), 27u);
    for (uint64_t first : {1u, 8u, 9u, 13u, 26u, 27u, 40u}) {
      PipelineStats stats;
      const auto tail = run(build(), first, &stats);
      const std::vector<Seen> expect(all.begin() + std::min<size_t>(first, all.size()), all.end());
      EXPECT_EQ(tail, expect) << "first batch " << first << (cached ? ", cached" : "");
      uint64_t delivered = 0;
      for (const Seen& s : tail) delivered += s.labels.size();
      EXPECT_EQ(stats.workers.samples, delivered) << "decoded only what was delivered, first batch " << first;
      const uint64_t epochs_read = first >= 27 ? 0 : 3 - first / 9;
      EXPECT_EQ(stats.records_read + stats.cache_records, epochs_read * 137) << "first batch " << first;
    }
  }
}

TEST(MapAndBatch, NonDeterministicModeDeliversTheSameSamples) {
  ScratchDir dir("nondet");
  auto paths = write_named_shards(dir, {40, 40});
  auto det = run(make(paths, 2, true));
  auto nondet = run(make(paths, 3, false));
  ASSERT_EQ(det.size(), nondet.size());
  std::multiset<std::vector<uint8_t>> a, b;
  for (auto& s : det) a.insert(s.data);
  for (auto& s : nondet) b.insert(s.data);
  EXPECT_EQ(a, b) << "batches may come in another order, but each batch is the same";
}

TEST(MapAndBatch, MemoryStaysBoundedOverTwentyEpochs) {
  ScratchDir dir("bounded");
  auto paths = write_named_shards(dir, {64, 64});
  auto alloc = std::make_shared<HostBatchAllocator>();
  Dataset ds = Dataset::from_files(paths);
  ds.shuffle(32, 1).repeat(20).map_and_batch(naming_mapper(), 8, 2, true).prefetch(3);
  DatasetOptions o;
  o.num_threads = 2;
  o.allocator = alloc;
  o.max_held_batches = 2;
  ds.with_options(o);
  auto it = ds.make_iterator();
  const uint64_t capacity = 3 + 2 + 2;
  BatchHandle a, b;
  uint64_t n = 0;
  while (it->next(n % 2 ? &a : &b)) ++n;  // hold two at once, like a double-buffered device copy
  EXPECT_EQ(n, 20u * 16u);
  // 320 batches from at most prefetch + num_parallel_batches + held buffers, allocated on first use.
  EXPECT_LE(alloc->allocations(), capacity);
  EXPECT_GE(alloc->allocations(), 2u);
  PipelineStats s = it->stats();
  EXPECT_EQ(s.buffers_allocated, alloc->allocations());
  EXPECT_EQ(s.pool_capacity, int(capacity));
  EXPECT_EQ(s.samples, 20u * 128u);
  a.reset();
  b.reset();
  it.reset();
  EXPECT_EQ(alloc->live_bytes(), 0u) << "every buffer returned";
}

TEST(MapAndBatch, SampleErrorNamesFileRecordAndOffset) {
  ScratchDir dir("sample-error");
  auto paths = write_named_shards(dir, {6, 6});
  Dataset ds = Dataset::from_files(paths);
  ds.map_and_batch(naming_mapper("f1r3"), 4, 2, false);
  DatasetOptions o;
  o.num_threads = 2;
  ds.with_options(o);
  auto it = ds.make_iterator();
  BatchHandle b;
  int batches = 0;
  try {
    while (it->next(&b)) ++batches;
    FAIL() << "no error";
  } catch (const FormatError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find(paths[1] + ": record 3 at offset 60: bad sample"), std::string::npos) << msg;
  }
  EXPECT_EQ(batches, 2) << "the batches before the bad one arrive first";

  o.skip_corrupt = true;
  Dataset skip = Dataset::from_files(paths);
  skip.map_and_batch(naming_mapper("f1r3"), 4, 2, false).with_options(o);
  auto seen = run(skip);
  size_t total = 0;
  for (auto& s : seen) {
    total += s.labels.size();
    for (int32_t l : s.labels) EXPECT_NE(l, 1003);
  }
  EXPECT_EQ(total, 11u);
  EXPECT_EQ(seen[2].labels, (std::vector<int32_t>{1002, 1004, 1005})) << "compacted, in order";
}

// A label outside [0, num_classes) inside a valid shard names the shard file, record and offset.
TEST(MapAndBatch, LabelOutOfRangeNamesFileRecordAndOffset) {
  ScratchDir dir("label-range");
  auto paths = write_named_shards(dir, {6, 6});  // labels: file * 1000 + record
  Dataset ds = Dataset::from_files(paths);
  ds.map_and_batch(naming_mapper(), 4, 2, false);
  DatasetOptions o;
  o.num_threads = 2;
  o.num_classes = 1003;  // f1r3 (label 1003) is the first one out of range
  ds.with_options(o);
  auto it = ds.make_iterator();
  BatchHandle b;
  try {
    while (it->next(&b)) {
    }
    FAIL() << "no error";
  } catch (const FormatError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find(paths[1] + ": record 3 at offset 60: label 1003 is outside 0..1002"), std::string::npos) << msg;
  }
  o.num_classes = 1006;  // every label in range
  Dataset ok = Dataset::from_files(paths);
  ok.map_and_batch(naming_mapper(), 4, 2, false).with_options(o);
  size_t total = 0;
  for (auto& s : run(ok)) total += s.labels.size();
  EXPECT_EQ(total, 12u);
  o.num_classes = -1;
  EXPECT_THROW(Dataset::from_files(paths).with_options(o), ConfigError);
}

TEST(MapAndBatch, ConsumerHoldingEveryBufferIsAnError) {
  ScratchDir dir("hold");
  auto paths = write_named_shards(dir, {64});
  Dataset ds = Dataset::from_files(paths);
  ds.map_and_batch(naming_mapper(), 4, 1, true).prefetch(0);
  DatasetOptions o;
  o.num_threads = 1;
  o.max_held_batches = 1;
  ds.with_options(o);
  auto it = ds.make_iterator();
  std::vector<BatchHandle> held(3);
  ASSERT_TRUE(it->next(&held[0]));
  ASSERT_TRUE(it->next(&held[1]));
  EXPECT_THROW(it->next(&held[2]), ConfigError);
}

TEST(MapAndBatch, StopsCleanlyMidStreamAndHandlesOutliveTheIterator) {
  ScratchDir dir("stop");
  auto paths = write_named_shards(dir, {30});
  Dataset ds = Dataset::from_files(paths);
  ds.repeat(-1).map_and_batch(naming_mapper(), 4, 2, true).prefetch(2);
  auto it = ds.make_iterator();
  BatchHandle keep;
  ASSERT_TRUE(it->next(&keep));
  std::vector<int32_t> labels(keep->labels(), keep->labels() + keep->size());
  it.reset();  // infinite repeat: the destructor must stop the driver and the arena
  EXPECT_EQ(std::vector<int32_t>(keep->labels(), keep->labels() + keep->size()), labels);
  keep.reset();
}

TEST(Guard, RepeatedBatchAndConstantLabels) {
  BatchGuard g(/*constant_label_run=*/64);
  std::vector<uint8_t> data(1000);
  std::vector<int32_t> labels(32);
  for (int i = 0; i < 32; ++i) labels[i] = i % 5;
  for (size_t i = 0; i < data.size(); ++i) data[i] = uint8_t(i * 7);
  EXPECT_TRUE(g.observe(data.data(), data.size(), labels.data(), 32).empty());
  data[999] ^= 1;
  EXPECT_TRUE(g.observe(data.data(), data.size(), labels.data(), 32).empty()) << "differs in one byte";
  auto w = g.observe(data.data(), data.size(), labels.data(), 32);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("identical"), std::string::npos);
  EXPECT_TRUE(g.observe(data.data(), data.size(), labels.data(), 32).empty()) << "reported once";
  std::vector<int32_t> same(32, 3);
  data[0] ^= 1;
  EXPECT_TRUE(g.observe(data.data(), data.size(), same.data(), 32).empty());
  data[0] ^= 2;
  w = g.observe(data.data(), data.size(), same.data(), 32);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("labels are all 3"), std::string::npos);
}

TEST(Guard, PipelineCountsWarnings) {
  ScratchDir dir("guard");
  auto paths = write_named_shards(dir, {40});
  auto constant = make_function_mapper({1, 4, 1, DType::kU8, Layout::kNHWC},
                                       [](std::string_view, const SampleContext&, void* slot, int32_t* label) {
                                         std::memset(slot, 1, 4);
                                         *label = 0;
                                       });
  Dataset ds = Dataset::from_files(paths);
  ds.map_and_batch(constant, 8, 1, true);
  DatasetOptions o;
  o.guard = true;
  o.num_threads = 1;
  ds.with_options(o);
  auto it = ds.make_iterator();
  BatchHandle b;
  while (it->next(&b)) {
  }
  EXPECT_GE(it->stats().guard_warnings, 1u);
}

}  // namespace
}  // namespace fastnn::pipeline
