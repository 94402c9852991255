// Memory over many epochs, measured by counting every C++ heap byte of this test binary (global
// operator new/delete replaced below): record strings in the shuffle buffer and the batch pool,
// cache, readers, per-worker scratch. Batch buffers come from the BatchAllocator (aligned_alloc, not
// counted here); MapAndBatch.MemoryStaysBoundedOverTwentyEpochs bounds those.
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>

#include <gtest/gtest.h>

#include "core/check.h"
#include "core/tfrecord.h"
#include "pipeline/dataset.h"
#include "pipeline_test_util.h"

namespace {
std::atomic<int64_t> g_live{0};
std::atomic<int64_t> g_peak{0};

void* counted(void* p) {
  if (p == nullptr) throw std::bad_alloc();
  int64_t now = g_live.fetch_add(static_cast<int64_t>(malloc_usable_size(p))) + static_cast<int64_t>(malloc_usable_size(p));
  int64_t peak = g_peak.load();
  while (now > peak && !g_peak.compare_exchange_weak(peak, now)) {
  }
  return p;
}
void uncounted(void* p) {
  if (p == nullptr) return;
  g_live.fetch_sub(static_cast<int64_t>(malloc_usable_size(p)));
  std::free(p);
}
void* aligned(size_t n, std::align_val_t a) {
  size_t al = static_cast<size_t>(a);
  return counted(std::aligned_alloc(al, (std::max<size_t>(n, 1) + al - 1) / al * al));
}
}  // namespace

void* operator new(size_t n) { return counted(std::malloc(std::max<size_t>(n, 1))); }
void* operator new[](size_t n) { return counted(std::malloc(std::max<size_t>(n, 1))); }
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  void* p = std::malloc(std::max<size_t>(n, 1));
  return p ? counted(p) : nullptr;
}
void* operator new(size_t n, std::align_val_t a) { return aligned(n, a); }
void* operator new[](size_t n, std::align_val_t a) { return aligned(n, a); }
void operator delete(void* p) noexcept { uncounted(p); }
void operator delete[](void* p) noexcept { uncounted(p); }
void operator delete(void* p, size_t) noexcept { uncounted(p); }
void operator delete[](void* p, size_t) noexcept { uncounted(p); }
void operator delete(void* p, std::align_val_t) noexcept { uncounted(p); }
void operator delete[](void* p, std::align_val_t) noexcept { uncounted(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { uncounted(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { uncounted(p); }

namespace fastnn::pipeline {
namespace {

using testing::ScratchDir;

// Records of one size (1000 bytes: heap strings, and no capacity ratchet between sizes) that start
// with their name.
std::vector<std::string> write_padded_shards(const ScratchDir& dir, int files, int records) {
  std::vector<std::string> paths;
  for (int f = 0; f < files; ++f) {
    std::string p = dir.file(str("padded-", f, ".tfrecord"));
    TFRecordWriter w(p);
    for (int r = 0; r < records; ++r) {
      std::string rec = str("f", f, "r", r, ".");
      rec.resize(1000, 'x');
      w.write(rec);
    }
    w.close();
    paths.push_back(p);
  }
  return paths;
}

std::shared_ptr<SampleMapper> name_mapper() {
  BatchSpec spec{1, 16, 1, DType::kU8, Layout::kNHWC};
  return make_function_mapper(spec, [](std::string_view rec, const SampleContext&, void* slot, int32_t* label) {
    std::memset(slot, 0, 16);
    std::memcpy(slot, rec.data(), std::min<size_t>(rec.find('.'), 16));
    *label = static_cast<int32_t>(rec.size());
  });
}

// Peak live C++ heap bytes while the consumer was in each epoch, for a 20-epoch run.
void peaks_per_epoch(const Dataset& ds, int64_t* after_destruction, int64_t before, std::vector<int64_t>* out) {
  std::vector<int64_t> peaks;
  {
    auto it = ds.make_iterator();
    BatchHandle b;
    int64_t epoch = 0;
    // The pool allocates its buffers (and their record strings) on first use, so a late slow
    // moment of the consumer could allocate the last one in epoch 12: bounded, but not "flat".
    // Let it fill during epoch 0 instead.
    ASSERT_TRUE(it->next(&b));
    for (int i = 0; i < 5000 && it->stats().buffers_allocated < uint64_t(it->stats().pool_capacity); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_EQ(it->stats().buffers_allocated, uint64_t(it->stats().pool_capacity));
    g_peak.store(g_live.load());
    while (it->next(&b)) {
      EXPECT_EQ(b->labels()[0], 1000);
      if (b->epoch() != epoch) {
        peaks.push_back(g_peak.load());
        g_peak.store(g_live.load());
        epoch = b->epoch();
      }
    }
    peaks.push_back(g_peak.load());
  }
  *after_destruction = g_live.load() - before;
  *out = peaks;
}

TEST(Memory, HeapStaysFlatOverTwentyEpochs) {
  ScratchDir dir("heap");
  auto paths = write_padded_shards(dir, 4, 64);
  for (bool cache : {true, false}) {
    SCOPED_TRACE(cache ? "cache" : "no cache");
    Dataset ds = Dataset::from_files(paths);
    ds.interleave(2, 1);
    if (cache) ds.cache();
    ds.shuffle(50, 1).repeat(20).map_and_batch(name_mapper(), 8, 2, true).prefetch(3);
    DatasetOptions o;
    o.num_threads = 2;
    ds.with_options(o);
    int64_t before = g_live.load();
    int64_t leaked = 0;
    std::vector<int64_t> peaks;
    peaks_per_epoch(ds, &leaked, before, &peaks);
    ASSERT_EQ(peaks.size(), 20u);
    int64_t early = *std::max_element(peaks.begin() + 1, peaks.begin() + 10);
    int64_t late = *std::max_element(peaks.begin() + 10, peaks.end());
    // The shuffle buffer and pool hold (50 + 7 × 8) records of 1000 bytes = ~110 KB; a leak of
    // 16 bytes per record would add 4 KB per epoch, 40 KB over the last ten.
    EXPECT_LE(late, early + 8192) << "live heap grew after the first epochs";
    if (!cache) {
      EXPECT_LE(late - before, int64_t{4} << 20) << "readers + buffers stay small";
    }
    EXPECT_LE(std::abs(leaked), int64_t{1024}) << "everything returned when the iterator is gone";
  }
}

}  // namespace
}  // namespace fastnn::pipeline
