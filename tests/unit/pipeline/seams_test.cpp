// The pipeline's outer contracts: batch memory from a caller's allocator (the CUDA backend's pinned
// host memory), corrupt frames met by the whole pipeline (not only the record stages), and a file
// cache that an interrupted first epoch must not leave behind.
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>

#include <gtest/gtest.h>

#include "core/check.h"
#include "pipeline/dataset.h"
#include "pipeline_test_util.h"

namespace fastnn::pipeline {
namespace {

using testing::ScratchDir;
using testing::write_named_shards;

constexpr int kSeamSlot = 8;

// Slot = the record's bytes, zero padded; label = file * 1000 + record.
std::shared_ptr<SampleMapper> copy_mapper() {
  BatchSpec spec{1, kSeamSlot, 1, DType::kU8, Layout::kNHWC};
  return make_function_mapper(spec, [](std::string_view rec, const SampleContext&, void* slot, int32_t* label) {
    std::memset(slot, 0, kSeamSlot);
    std::memcpy(slot, rec.data(), std::min<size_t>(rec.size(), kSeamSlot));
    int f = 0, n = 0;
    std::sscanf(std::string(rec).c_str(), "f%dr%d", &f, &n);
    *label = f * 1000 + n;
  });
}

// Stands in for the CUDA backend's cudaHostAlloc allocator: hands out blocks from its own arena
// (with a guard word in front) and records every call, so the test can tell its memory from malloc's.
class RecordingAllocator : public BatchAllocator {
 public:
  void* allocate(size_t bytes) override {
    std::lock_guard lock(mu_);
    auto block = std::make_unique<unsigned char[]>(bytes + 128);
    auto addr = reinterpret_cast<uintptr_t>(block.get()) + 64;
    void* p = reinterpret_cast<void*>((addr + 63) / 64 * 64);
    live_[p] = bytes;
    blocks_.push_back(std::move(block));
    ++allocations_;
    return p;
  }
  void deallocate(void* p, size_t bytes) override {
    std::lock_guard lock(mu_);
    auto it = live_.find(p);
    ASSERT_NE(it, live_.end()) << "deallocate of memory this allocator did not give";
    EXPECT_EQ(it->second, bytes) << "deallocate must get the size allocate got";
    live_.erase(it);
  }
  const char* name() const override { return "recording"; }

  bool owns(const void* p, size_t bytes) {
    std::lock_guard lock(mu_);
    for (auto& [start, size] : live_)
      if (p >= start && static_cast<const char*>(p) + bytes <= static_cast<const char*>(start) + size) return true;
    return false;
  }
  int allocations() {
    std::lock_guard lock(mu_);
    return allocations_;
  }
  size_t live() {
    std::lock_guard lock(mu_);
    return live_.size();
  }

 private:
  std::mutex mu_;
  std::map<void*, size_t> live_;
  std::vector<std::unique_ptr<unsigned char[]>> blocks_;
  int allocations_ = 0;
};

TEST(Seams, EveryBatchLivesInTheCallersAllocatorMemory) {
  ScratchDir dir("alloc");
  auto paths = write_named_shards(dir, {40, 40});
  auto alloc = std::make_shared<RecordingAllocator>();
  Dataset ds = Dataset::from_files(paths);
  ds.shuffle(16, 3).repeat(3).map_and_batch(copy_mapper(), 8, 2, true).prefetch(2);
  DatasetOptions o;
  o.num_threads = 2;
  o.allocator = alloc;
  ds.with_options(o);
  BatchHandle keep;
  {
    auto it = ds.make_iterator();
    BatchHandle b;
    int n = 0;
    while (it->next(&b)) {
      ++n;
      ASSERT_EQ(reinterpret_cast<uintptr_t>(b->data()) % 64, 0u);
      ASSERT_TRUE(alloc->owns(b->data(), b->bytes())) << "batch " << n << " is not in the allocator's memory";
      for (int i = 0; i < b->size(); ++i) {
        std::string name(static_cast<const char*>(b->sample(i)));
        EXPECT_EQ(name, str("f", b->labels()[i] / 1000, "r", b->labels()[i] % 1000));
      }
      if (n == 5) keep = std::move(b);  // held past the iterator, like an unfinished device copy
    }
    EXPECT_EQ(n, 30);
    EXPECT_LE(alloc->allocations(), 2 + 2 + 2);
  }
  EXPECT_EQ(alloc->live(), size_t(alloc->allocations())) << "a held batch keeps the pool and its memory";
  EXPECT_TRUE(alloc->owns(keep->data(), keep->bytes()));
  keep.reset();
  EXPECT_EQ(alloc->live(), 0u) << "every block given back, with its size";
}

TEST(Seams, CorruptFrameMidEpochThroughTheWholePipeline) {
  ScratchDir dir("corrupt-pipe");
  auto paths = write_named_shards(dir, {8, 8});
  testing::corrupt_record(paths[1], 5);
  auto make = [&](bool skip) {
    Dataset ds = Dataset::from_files(paths);
    ds.repeat(2).map_and_batch(copy_mapper(), 4, 2, false).prefetch(2);
    DatasetOptions o;
    o.num_threads = 2;
    o.skip_corrupt = skip;
    ds.with_options(o);
    return ds;
  };
  {
    auto it = make(false).make_iterator();
    BatchHandle b;
    int batches = 0;
    try {
      while (it->next(&b)) ++batches;
      FAIL() << "no error";
    } catch (const FormatError& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find(paths[1]), std::string::npos) << msg;
      EXPECT_NE(msg.find("offset 100"), std::string::npos) << msg;
    }
    EXPECT_EQ(batches, 3) << "the 12 good records before the corrupt one arrive first";
  }
  auto it = make(true).make_iterator();
  BatchHandle b;
  std::vector<int32_t> labels;
  while (it->next(&b)) labels.insert(labels.end(), b->labels(), b->labels() + b->size());
  // Per epoch: file 0 whole, file 1 up to its corrupt record 5 (the framing after it is lost).
  std::vector<int32_t> epoch = {0, 1, 2, 3, 4, 5, 6, 7, 1000, 1001, 1002, 1003, 1004};
  std::vector<int32_t> expect = epoch;
  expect.insert(expect.end(), epoch.begin(), epoch.end());
  EXPECT_EQ(labels, expect);
  EXPECT_EQ(it->stats().corrupt_records, 2u) << "counted once per epoch";
}

TEST(Seams, AbandonedFirstEpochLeavesNoCacheFile) {
  ScratchDir dir("cache-abandon");
  auto paths = write_named_shards(dir, {20, 20});
  std::string cache = dir.file("train.cache");
  Dataset ds = Dataset::from_files(paths);
  ds.cache(cache).repeat(2).map_and_batch(copy_mapper(), 4, 1, true).prefetch(1);
  {
    auto it = ds.make_iterator();
    BatchHandle b;
    ASSERT_TRUE(it->next(&b));
  }  // stopped during the first epoch
  for (auto& e : std::filesystem::directory_iterator(dir.path()))
    EXPECT_EQ(e.path().string().find("train.cache"), std::string::npos) << "left behind: " << e.path();
  // A complete run then writes it, and the next run reads only the cache.
  auto count = [&] {
    auto it = ds.make_iterator();
    BatchHandle b;
    int n = 0;
    while (it->next(&b)) ++n;
    return std::pair{n, it->stats().files_opened};
  };
  EXPECT_EQ(count(), (std::pair<int, uint64_t>{20, 2}));
  EXPECT_TRUE(std::filesystem::exists(cache));
  EXPECT_EQ(count(), (std::pair<int, uint64_t>{20, 0}));
}

}  // namespace
}  // namespace fastnn::pipeline
