#include "trainer/bench/bench_allreduce.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <tuple>

#include "core/check.h"
#include "trainer/comm/bucketed_allreduce.h"
#include "trainer/graph/statistics.h"
#include "trainer/loop/data_parallel.h"
#include "trainer/loop/nccl_collectives.h"
#include "trainer/tensor.h"
#include "trainer/zoo/zoo.h"

namespace fastnn::bench {
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

// One gradient average of `model_name`'s parameters in `bucket_mb` buckets, timed like a size row.
ModelAverageRow time_model_average(const JobConfig& c, const AllreduceBenchOptions& o, loop::DataParallel& dp,
                                   runner::DeviceCollectives* nccl, void* stream, Device device) {
  ModelAverageRow row;
  row.model = c.model_name();
  row.parameters = graph::model_statistics(zoo::build_net(c.model_name(), {.num_classes = c.has_num_classes() ? static_cast<int>(c.num_classes()) : 0})).trainable_params;
  const size_t bucket_bytes = bucket_bytes_from_mib(c.allreduce_bucket_mb());
  Tensor grads = Tensor::empty({row.parameters}, DType::kF32, device);
  std::function<void()> call;
  std::unique_ptr<BucketedAllreduce> host;
  std::vector<runner::DeviceCollectives::Buffer> buckets;
  if (nccl) {
    const size_t per_bucket = bucket_bytes / 4, total = static_cast<size_t>(row.parameters);
    for (size_t at = 0; at < total; at += per_bucket)
      buckets.push_back({static_cast<float*>(grads.raw()) + at, std::min(per_bucket, total - at), DType::kF32});
    row.buckets = buckets.size();
    call = [&] { nccl->average(buckets, stream); };
  } else {
    std::fill_n(grads.data<float>(), row.parameters, 0.5f);
    host = std::make_unique<BucketedAllreduce>(
        dp.comm(), std::vector<GradBuffer>{{row.model, grads.data<float>(), static_cast<size_t>(row.parameters)}},
        bucket_bytes);
    row.buckets = host->buckets().size();
    call = [&] { host->average(); };
  }
  std::tie(row.median_ms, row.min_ms) = time_calls(call, std::max(1, std::min(o.iters, 5)), std::min(o.warmup, 1));
  return row;
}

// Median ms of copying `bytes` between two host buffers (the CPU ceiling of an allreduce).
double host_copy_ms(int64_t bytes, int iters, int warmup) {
  std::vector<char> from(static_cast<size_t>(bytes), 1), to(static_cast<size_t>(bytes));
  size_t k = 0;
  const auto copy = [&] {
    std::memcpy(to.data(), from.data(), to.size());
    from[k % from.size()] = to[(k * 7) % to.size()];  // keeps each copy observable
    ++k;
  };
  return time_calls(copy, iters, warmup).first;
}

}  // namespace

AllreduceBenchResult run_allreduce_bench(const JobConfig& c, const AllreduceBenchOptions& o) {
  FASTNN_CHECK(o.iters >= 1 && o.warmup >= 0, "bench allreduce: need iters >= 1 and warmup >= 0");
  loop::DataParallel dp(c);
  AllreduceBenchResult r;
  r.target = runner::resolve_compute_target(c, dp.comm().local_rank());
  r.rank = dp.rank();
  r.world_size = dp.world();
  std::unique_ptr<runner::DeviceCollectives> nccl;
  void* stream = nullptr;
  if (r.target.device == Device::kCuda) {
    runner::select_device(r.target);
    nccl = loop::make_nccl_collectives(dp.comm(), c.collective_timeout_seconds());
    stream = runner::device_stream(r.target);
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
      const runner::DeviceCollectives::Buffer b{buffer.raw(), static_cast<size_t>(count), DType::kF32};
      call = [&, b] { nccl->average(std::span<const runner::DeviceCollectives::Buffer>(&b, 1), stream); };
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
    if (!nccl) {
      const double copy = host_copy_ms(row.bytes, o.iters, o.warmup);
      row.copy_gbps = copy > 0 ? static_cast<double>(row.bytes) / (copy * 1e6) : 0;
    }
    r.rows.push_back(row);
  }
  if (o.model) r.model = time_model_average(c, o, dp, nccl.get(), stream, r.target.device);
  return r;
}

nlohmann::json allreduce_bench_json(const AllreduceBenchResult& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (const AllreduceBenchRow& w : r.rows)
    rows.push_back({{"bytes", w.bytes}, {"median_ms", w.median_ms}, {"min_ms", w.min_ms},
                    {"algbw_gbps", w.algbw_gbps}, {"busbw_gbps", w.busbw_gbps}, {"copy_gbps", w.copy_gbps}});
  nlohmann::json j = {{"bench", "allreduce"}, {"device", r.target.describe()}, {"backend", r.backend},
                      {"world_size", r.world_size}, {"rows", rows}};
  if (r.model)
    j["model"] = {{"name", r.model->model}, {"parameters", r.model->parameters}, {"buckets", r.model->buckets},
                  {"median_ms", r.model->median_ms}, {"min_ms", r.model->min_ms}};
  return j;
}

}  // namespace fastnn::bench
