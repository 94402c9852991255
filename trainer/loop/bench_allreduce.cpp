#include "trainer/loop/bench_allreduce.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <span>

#include "core/check.h"
#include "trainer/loop/data_parallel.h"
#include "trainer/loop/nccl_collectives.h"
#include "trainer/tensor.h"

namespace fastnn::loop {
namespace {

// Median and minimum wall time of `iters` calls of fn, after `warmup` calls.
std::pair<double, double> time_calls(const std::function<void()>& fn, int iters, int warmup) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> ms;
  for (int i = 0; i < iters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms.front()};
}

}  // namespace

AllreduceBenchResult run_allreduce_bench(const JobConfig& c, const AllreduceBenchOptions& o) {
  FASTNN_CHECK(o.iters >= 1 && o.warmup >= 0, "bench allreduce: need iters >= 1 and warmup >= 0");
  DataParallel dp(c);
  AllreduceBenchResult r;
  r.target = resolve_compute_target(c, dp.comm().local_rank());
  r.rank = dp.rank();
  r.world_size = dp.world();
  std::unique_ptr<DeviceCollectives> nccl;
  void* stream = nullptr;
  if (r.target.device == Device::kCuda) {
    select_device(r.target);
    nccl = make_nccl_collectives(dp.comm(), c.collective_timeout_seconds());
    stream = device_stream(r.target);
    r.backend = "nccl";
  } else {
    r.backend = dp.comm().name();
  }
  const double n = r.world_size;
  for (int64_t bytes : o.bytes) {
    FASTNN_CHECK(bytes >= 4, "bench allreduce: message sizes must be >= 4 bytes, got ", bytes);
    const int64_t count = bytes / 4;
    std::function<void()> call;
    Tensor buffer = Tensor::empty({count}, DType::kF32, r.target.device);
    if (nccl) {
      // Device memory's contents do not change NCCL's work; the buffer is averaged in place.
      const DeviceCollectives::Buffer b{buffer.raw(), static_cast<size_t>(count), DType::kF32};
      call = [&, b] { nccl->average(std::span<const DeviceCollectives::Buffer>(&b, 1), stream); };
    } else {
      std::fill_n(buffer.data<float>(), count, 1.0f + static_cast<float>(r.rank));
      call = [&] { dp.comm().allreduce_average(std::span<float>(buffer.data<float>(), static_cast<size_t>(count))); };
    }
    const auto [median, best] = time_calls(call, o.iters, o.warmup);
    AllreduceBenchRow row;
    row.bytes = count * 4;
    row.median_ms = median;
    row.min_ms = best;
    row.algbw_gbps = median > 0 ? static_cast<double>(row.bytes) / (median * 1e6) : 0;
    row.busbw_gbps = row.algbw_gbps * 2 * (n - 1) / n;  // 0 in a world of one: nothing crosses a link
    r.rows.push_back(row);
  }
  return r;
}

nlohmann::json allreduce_bench_json(const AllreduceBenchResult& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (const AllreduceBenchRow& w : r.rows)
    rows.push_back({{"bytes", w.bytes}, {"median_ms", w.median_ms}, {"min_ms", w.min_ms},
                    {"algbw_gbps", w.algbw_gbps}, {"busbw_gbps", w.busbw_gbps}});
  return {{"bench", "allreduce"}, {"device", r.target.describe()}, {"backend", r.backend},
          {"world_size", r.world_size}, {"rows", rows}};
}

}  // namespace fastnn::loop
