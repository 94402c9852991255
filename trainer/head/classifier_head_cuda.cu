// The classifier head on the GPU (contract in classifier_head_cuda.h): kernels and glue in one file (each
// .cu costs ~9 s of nvcc per build). The order of work is classifier_head.cpp's run(), step for step;
// every formula is the CPU head's (the same FASTNN_HD functions where there are any: head_math.h,
// margin.h), in double where the CPU computes in double.
#include "trainer/head/classifier_head_cuda.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "core/check.h"
#include "trainer/cuda/blas.h"
#include "trainer/cuda/device_util.cuh"
#include "trainer/cuda/storage_types.h"
#include "trainer/head/head_math.h"
#include "trainer/head/head_memory.h"
#include "trainer/head/margin.h"
#include "trainer/head/partial_fc.h"

namespace fastnn::head {
namespace {

using cuda::block_sum;
using cuda::from_f;
using cuda::grid_for;
using cuda::kThreads;
using cuda::to_f;
using cuda::warp_sum;

// As classifier_head.cpp: a row shorter than this counts as this long (no NaN for a zero embedding).
constexpr double kTinyNorm = 1e-12;
constexpr int kWarpsPerBlock = kThreads / 32;

struct DeviceResults {
  double loss;
  unsigned long long correct, correct_top5, bad_labels;
};

// ---- conversions ----

template <typename T>
__global__ void to_f32_kernel(const T* in, int64_t count, float* out) {
  FASTNN_GRID_LOOP(k, count) out[k] = to_f(in[k]);
}

template <typename L>
__global__ void labels_kernel(const L* in, int64_t n, int64_t* out) {
  FASTNN_GRID_LOOP(i, n) out[i] = static_cast<int64_t>(in[i]);
}

// out = g * factor rounded to T (the CPU: out[i] * back, in double).
template <typename T>
__global__ void scale_store_kernel(const float* g, int64_t count, double factor, T* out) {
  FASTNN_GRID_LOOP(k, count) out[k] = from_f<T>(static_cast<float>(hd::mul(static_cast<double>(g[k]), factor)));
}

__global__ void init_kernel(float* w, int64_t rows, int64_t dim, int64_t first_class, uint64_t seed, double bound) {
  FASTNN_GRID_LOOP(k, rows * dim)
  w[k] = static_cast<float>(initial_weight(seed, first_class + k / dim, k % dim, bound));
}

__global__ void gather_rows_kernel(const float* w, const int64_t* rows, int64_t m, int64_t dim, float* out) {
  for (int64_t j = blockIdx.x; j < m; j += gridDim.x)
    for (int64_t d = threadIdx.x; d < dim; d += blockDim.x) out[j * dim + d] = w[rows[j] * dim + d];
}

// ---- per-row norms (one warp per row) ----

// inv[i] = 1 / max(|in_i|, kTinyNorm); with `out`, out_i = in_i * inv[i] (classifier_head.cpp's inverse_norms).
__global__ void inverse_norms_kernel(const float* in, int64_t rows, int64_t dim, double* inv, float* out) {
  const int lane = threadIdx.x & 31;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5); i < rows;
       i += static_cast<int64_t>(gridDim.x) * kWarpsPerBlock) {
    const float* row = in + i * dim;
    double ss = 0;
    for (int64_t d = lane; d < dim; d += 32) ss += hd::mul(static_cast<double>(row[d]), static_cast<double>(row[d]));
    ss = warp_sum(ss);
    const double norm = hd::sqrt(ss);
    const double v = hd::div(1.0, norm > kTinyNorm ? norm : kTinyNorm);
    if (lane == 0) inv[i] = v;
    if (out)
      for (int64_t d = lane; d < dim; d += 32) out[i * dim + d] = static_cast<float>(hd::mul(static_cast<double>(row[d]), v));
  }
}

// Backward of u = v / |v| (v raw, inv = 1/|v|): out = (g - u (u . g)) / |v| * extra, rounded to T (out
// may be g itself: each lane reads its elements before the warp's sum and writes them after).
template <typename T>
__global__ void normalize_backward_kernel(const float* v, const double* inv, int64_t rows, int64_t dim, const float* g,
                                          T* out, double extra) {
  const int lane = threadIdx.x & 31;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5); i < rows;
       i += static_cast<int64_t>(gridDim.x) * kWarpsPerBlock) {
    const double iv = inv[i];
    double dot = 0;
    for (int64_t d = lane; d < dim; d += 32)
      dot += hd::mul(static_cast<double>(v[i * dim + d]), static_cast<double>(g[i * dim + d]));
    dot = hd::mul(warp_sum(dot), iv);  // u . g
    for (int64_t d = lane; d < dim; d += 32) {
      const double u_dot = hd::mul(hd::mul(static_cast<double>(v[i * dim + d]), iv), dot);
      const double r = hd::mul(hd::mul(hd::sub(static_cast<double>(g[i * dim + d]), u_dot), iv), extra);
      out[i * dim + d] = from_f<T>(static_cast<float>(r));
    }
  }
}

// ---- logits [rows, cols]: block rows over blockIdx.y, columns over x (no division per element) ----

dim3 matrix_grid(int64_t rows, int64_t cols) {
  const int64_t x = std::min<int64_t>((cols + kThreads - 1) / kThreads, 4096);
  const int64_t y = std::min<int64_t>(rows, 65535);
  return dim3(static_cast<unsigned>(std::max<int64_t>(x, 1)), static_cast<unsigned>(std::max<int64_t>(y, 1)));
}

#define FASTNN_MATRIX_LOOP(i, j, rows, cols)                                                           \
  for (int64_t i = blockIdx.y; i < (rows); i += gridDim.y)                                          \
    for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < (cols);         \
         j += static_cast<int64_t>(gridDim.x) * blockDim.x)

// z[i, j] = z * inv[j] * factor: the cosines' 1/|w_j| applied to z instead of normalising W.
__global__ void scale_columns_kernel(float* z, int64_t rows, int64_t cols, const double* inv, double factor) {
  FASTNN_MATRIX_LOOP(i, j, rows, cols) {
    float& v = z[i * cols + j];
    v = static_cast<float>(hd::mul(factor, hd::mul(static_cast<double>(v), inv[j])));
  }
}

// ---- per row: the target, the maximum and the top 5, the sum of exp ----

struct RowArgs {
  const float* z;  // [n, m]: cosines (normalized) or raw logits
  int64_t n, m;
  int64_t row_begin, row_end, classes;
  const int64_t* cols;  // PartialFC's sampled local rows, or null (the full path)
  double s;             // the scale (1 unnormalized)
  MarginSpec spec;
};

__device__ int64_t class_of(const RowArgs& a, int64_t j) { return a.row_begin + (a.cols ? a.cols[j] : j); }

// One thread per row: the label's column here, its logit and slope; counts labels outside [0, K).
__global__ void targets_kernel(RowArgs a, const int64_t* labels, int64_t* tcol, double* tlogit, double* tslope,
                               DeviceResults* res) {
  FASTNN_GRID_LOOP(i, a.n) {
    const int64_t label = labels[i];
    if (label < 0 || label >= a.classes) atomicAdd(&res->bad_labels, 1ull);
    const int64_t c = a.cols ? sampled_target_column(label, a.row_begin, a.row_end, a.cols, a.m)
                             : target_column(label, a.row_begin, a.row_end);
    tcol[i] = c;
    double logit = 0, slope = 0;
    if (c >= 0) {
      const double cz = static_cast<double>(a.z[i * a.m + c]);
      if (a.spec.normalized) {
        const MarginValue v = target_logit(cz, a.spec);
        logit = v.logit;
        slope = v.dlogit_dcos;
      } else {
        logit = cz;
        slope = 1.0;
      }
    }
    tlogit[i] = logit;
    tslope[i] = slope;
  }
}

__device__ double logit_at(const RowArgs& a, int64_t i, int64_t j, int64_t c, double tl) {
  return j == c ? tl : hd::mul(a.s, static_cast<double>(a.z[i * a.m + j]));
}

// The block's maximum (as std::max: a NaN never replaces a number); valid in every thread.
__device__ double block_max(double v) {
  __shared__ double partial[32];
  for (int o = 16; o > 0; o >>= 1) {
    const double other = __shfl_xor_sync(0xffffffffu, v, o);
    v = v < other ? other : v;
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  __syncthreads();
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < warps ? partial[lane] : -HUGE_VAL;
  for (int o = 16; o > 0; o >>= 1) {
    const double other = __shfl_xor_sync(0xffffffffu, v, o);
    v = v < other ? other : v;
  }
  return v;
}

// One block per row (kThreads threads): rmax[i] and the row's top 5 of the margin-free values, written
// in the gathered layout at top[i].
__global__ void row_max_top_kernel(RowArgs a, const int64_t* tcol, const double* tlogit, double* rmax, double* top) {
  // Raw storage: a __shared__ array may not have TopCandidates' initialiser.
  __shared__ alignas(TopCandidates) unsigned char storage[kThreads * sizeof(TopCandidates)];
  TopCandidates* lists = reinterpret_cast<TopCandidates*>(storage);
  for (int64_t i = blockIdx.x; i < a.n; i += gridDim.x) {
    const int64_t c = tcol[i];
    const double tl = tlogit[i];
    double mx = -HUGE_VAL;
    TopCandidates best;
    for (int64_t j = threadIdx.x; j < a.m; j += blockDim.x) {
      const double v = logit_at(a, i, j, c, tl);
      mx = mx < v ? v : mx;
      best.offer(static_cast<double>(a.z[i * a.m + j]), class_of(a, j));
    }
    mx = block_max(mx);
    lists[threadIdx.x] = best;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
      if (static_cast<int>(threadIdx.x) < stride) lists[threadIdx.x].merge(lists[threadIdx.x + stride]);
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      rmax[i] = mx;
      lists[0].write(top + i * kTopK * 2);
    }
    __syncthreads();  // lists is rewritten for the next row
  }
}

// One block per row: sums[i] = sum of exp(logit - rmax), sums[n + i] = the target logit where this rank
// has it (exactly one rank does), 0 elsewhere.
__global__ void row_sum_kernel(RowArgs a, const int64_t* tcol, const double* tlogit, const double* rmax, double* sums) {
  for (int64_t i = blockIdx.x; i < a.n; i += gridDim.x) {
    const int64_t c = tcol[i];
    const double tl = tlogit[i], mx = rmax[i];
    double se = 0;
    for (int64_t j = threadIdx.x; j < a.m; j += blockDim.x) se += exp(hd::sub(logit_at(a, i, j, c, tl), mx));
    se = block_sum(se);
    if (threadIdx.x == 0) {
      sums[i] = se;
      sums[a.n + i] = c >= 0 ? tl : 0.0;
    }
  }
}

// One block: the loss, (1/n) sum of log S_i + M_i - target_i, in a fixed order.
__global__ void loss_kernel(const double* sums, const double* rmax, int64_t n, DeviceResults* res) {
  double l = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) l += hd::sub(hd::add(log(sums[i]), rmax[i]), sums[n + i]);
  l = block_sum(l);
  if (threadIdx.x == 0) res->loss = hd::div(l, static_cast<double>(n));
}

// One thread per row of this rank's samples: the merged top 5 against the label.
__global__ void hits_kernel(const double* all_top, int sources, int64_t n, int64_t offset, int64_t local,
                            const int64_t* labels, DeviceResults* res) {
  FASTNN_GRID_LOOP(r, local) {
    const int64_t i = offset + r;
    const TopHits h = merged_hits(all_top, sources, n, i, labels[i]);
    if (h.top1) atomicAdd(&res->correct, 1ull);
    if (h.top5) atomicAdd(&res->correct_top5, 1ull);
  }
}

// dLoss/dz in place: (softmax - onehot) / n times ds/dz (s, or the margin's slope at the target), times
// *grad_scale (the loss scale; null: 1).
__global__ void dlogits_kernel(RowArgs a, float* z, const int64_t* tcol, const double* tlogit, const double* tslope,
                               const double* rmax, const double* sums, double inv_n, const double* grad_scale) {
  const double gs = grad_scale ? *grad_scale : 1.0;
  for (int64_t i = blockIdx.y; i < a.n; i += gridDim.y) {  // matrix_grid's loop, the row's values read once
    const double norm = hd::div(1.0, sums[i]), mx = rmax[i];
    const int64_t c = tcol[i];
    for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < a.m;
         j += static_cast<int64_t>(gridDim.x) * blockDim.x) {
      float& cell = z[i * a.m + j];
      double g;
      if (j == c) {
        g = hd::mul(hd::mul(hd::sub(hd::mul(exp(hd::sub(tlogit[i], mx)), norm), 1.0), inv_n), tslope[i]);
      } else {
        const double e = exp(hd::sub(hd::mul(a.s, static_cast<double>(cell)), mx));
        g = hd::mul(hd::mul(hd::mul(e, norm), inv_n), a.s);
      }
      cell = static_cast<float>(hd::mul(g, gs));
    }
  }
}

void check_launch() { CUDA_CHECK_LAUNCH(); }

}  // namespace

// Buffers that grow to the largest step and are kept (classifier_head_cuda.h, "Memory").
struct CudaClassifierHead::Scratch {
  cuda::Workspace x_local, labels_local, x, labels, xs, inv_x, inv_w, w_used, z, tcol, tlogit, tslope, rmax, sums, top,
      all_top, dx, dx_local, cols, grads;
  template <typename T>
  static T* take(cuda::Workspace& w, int64_t count) {
    return static_cast<T*>(w.get(static_cast<size_t>(std::max<int64_t>(count, 1)) * sizeof(T)).raw());
  }
};

CudaClassifierHead::CudaClassifierHead(const HeadOptions& o, HeadCollectives* comm)
    : o_(o), comm_(comm), scratch_(std::make_unique<Scratch>()) {
  if (comm_) {
    world_ = comm_->world_size();
    rank_ = comm_->rank();
  }
  std::tie(row_begin_, row_end_) = head_rows(o, world_, rank_);
  const int64_t count = rows() * o.emb_dim;
  weights_ = Tensor::empty({std::max<int64_t>(count, 1)}, DType::kF32, Device::kCuda);
  cudaStream_t s = cuda::current_stream();
  if (count > 0) {
    init_kernel<<<grid_for(count), kThreads, 0, s>>>(weights(), rows(), o.emb_dim, row_begin_, o.seed,
                                                      initial_weight_bound(o.emb_dim, o.num_classes));
    check_launch();
  }
  if (!sampled_path()) {
    full_grads_ = Tensor::empty({std::max<int64_t>(count, 1)}, DType::kF32, Device::kCuda);
    grads_ = full_grads_.data<float>();
  }
  results_ = Tensor::empty({static_cast<int64_t>(sizeof(DeviceResults))}, DType::kU8, Device::kCuda);
}

CudaClassifierHead::~CudaClassifierHead() = default;

void CudaClassifierHead::train(const void* features, DType dtype, const void* labels, DType label_dtype, int64_t n,
                               uint64_t step, void* dfeatures, DType grad_dtype, const double* grad_scale,
                               cudaStream_t s) {
  FASTNN_CHECK(dfeatures != nullptr, "train needs a feature gradient buffer");
  run(features, dtype, labels, label_dtype, n, step, dfeatures, grad_dtype, grad_scale, false, s);
}

void CudaClassifierHead::evaluate(const void* features, DType dtype, const void* labels, DType label_dtype, int64_t n,
                                  cudaStream_t s) {
  run(features, dtype, labels, label_dtype, n, 0, nullptr, DType::kF32, nullptr, false, s);
}

void CudaClassifierHead::evaluate_shared(const void* features, DType dtype, const void* labels, DType label_dtype,
                                         int64_t n, cudaStream_t s) {
  run(features, dtype, labels, label_dtype, n, 0, nullptr, DType::kF32, nullptr, true, s);
}

void CudaClassifierHead::run(const void* features, DType dtype, const void* labels, DType label_dtype, int64_t n,
                             uint64_t step, void* dfeatures, DType grad_dtype, const double* grad_scale, bool shared,
                             cudaStream_t s) {
  FASTNN_CHECK(n >= 1, "classifier head: an empty batch");
  FASTNN_CHECK(label_dtype == DType::kI32 || label_dtype == DType::kI64, "classifier head: labels must be i32 or i64, got ",
               dtype_name(label_dtype));
  Scratch& b = *scratch_;
  const bool training = dfeatures != nullptr;
  const bool gather = collective() && !shared;
  const int64_t d = o_.emb_dim, k = o_.num_classes;
  const int64_t big_n = gather ? n * world_ : n, offset = gather ? n * rank_ : 0;
  const bool sampled = training && sampled_path();
  // The logits z below are one [big_n, m] matrix for three GEMMs: below 2^31 elements (head_memory.h).
  // On the full path every rank decides alike, before any collective, by the widest rank's m (rank 0
  // holds the most rows); PartialFC's m is known after the draw and differs by rank (checked there: a
  // rank that stops ends the others at their next collective's timeout).
  if (!sampled) {
    const auto [first, last] = head_rows(o_, world_, 0);
    check_device_logits(big_n, last - first, world_, 1.0);
  }

  // The batch in f32 and i64, all-gathered when sharded.
  float* x_local = Scratch::take<float>(b.x_local, n * d);
  cuda::with_storage_type(dtype, "classifier head features", [&](auto t) {
    using T = decltype(t);
    to_f32_kernel<T><<<grid_for(n * d), kThreads, 0, s>>>(static_cast<const T*>(features), n * d, x_local);
  });
  check_launch();
  int64_t* labels_local = Scratch::take<int64_t>(b.labels_local, n);
  if (label_dtype == DType::kI32) labels_kernel<<<grid_for(n), kThreads, 0, s>>>(static_cast<const int32_t*>(labels), n, labels_local);
  else labels_kernel<<<grid_for(n), kThreads, 0, s>>>(static_cast<const int64_t*>(labels), n, labels_local);
  check_launch();
  float* x = x_local;
  int64_t* batch_labels = labels_local;
  if (gather) {
    x = Scratch::take<float>(b.x, big_n * d);
    batch_labels = Scratch::take<int64_t>(b.labels, big_n);
    comm_->allgather(x_local, x, static_cast<size_t>(n * d), DType::kF32, s);
    comm_->allgather(labels_local, batch_labels, static_cast<size_t>(n), DType::kI64, s);
  }
  last_batch_ = big_n;
  last_local_ = n;
  last_labels_ = batch_labels;

  // The classes in play: every row, or PartialFC's sample drawn on the host from the global labels.
  const int64_t* cols = nullptr;
  if (sampled) {
    std::vector<int64_t> host_labels(static_cast<size_t>(big_n));
    if (collective()) comm_->wait(s);
    CUDA_CHECK(cudaMemcpyAsync(host_labels.data(), batch_labels, host_labels.size() * sizeof(int64_t),
                               cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    sampled_ = sample_local_rows(o_.seed, step, row_begin_, row_end_, o_.sample_ratio, host_labels);
    int64_t* dev = Scratch::take<int64_t>(b.cols, sampled_count());
    if (!sampled_.empty())
      CUDA_CHECK(cudaMemcpyAsync(dev, sampled_.data(), sampled_.size() * sizeof(int64_t), cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaStreamSynchronize(s));  // sampled_ may change before a later copy would run
    sampled_device_ = cols = dev;
  }
  const int64_t m = sampled ? sampled_count() : rows();
  if (sampled) check_device_logits(big_n, m, world_, o_.sample_ratio);

  // Operands: the used rows (PartialFC: a compact copy), and for the cosine losses unit-length features,
  // with z's columns scaled by 1/|w| instead of normalising a copy of W.
  const MarginSpec& mg = o_.margin;
  const float* w = weights();
  if (sampled) {
    float* used = Scratch::take<float>(b.w_used, m * d);
    if (m > 0) {
      gather_rows_kernel<<<static_cast<unsigned>(std::min<int64_t>(m, 65535)), kThreads, 0, s>>>(w, cols, m, d, used);
      check_launch();
    }
    w = used;
  }
  double* inv_w = Scratch::take<double>(b.inv_w, m);
  double* inv_x = Scratch::take<double>(b.inv_x, big_n);
  float* xs = x;
  if (mg.normalized) {
    xs = Scratch::take<float>(b.xs, big_n * d);
    if (m > 0) inverse_norms_kernel<<<grid_for(m, kWarpsPerBlock), kThreads, 0, s>>>(w, m, d, inv_w, nullptr);
    inverse_norms_kernel<<<grid_for(big_n, kWarpsPerBlock), kThreads, 0, s>>>(x, big_n, d, inv_x, xs);
    check_launch();
  }
  float* z = Scratch::take<float>(b.z, big_n * m);
  cuda::gemm(s, DType::kF32, false, true, big_n, m, d, 1.0f, xs, d, w, d, 0.0f, z, m);
  if (mg.normalized && m > 0) {
    scale_columns_kernel<<<matrix_grid(big_n, m), kThreads, 0, s>>>(z, big_n, m, inv_w, 1.0);
    check_launch();
  }

  // Per row: the target, the maximum (allreduced), the top 5, the sum of exp and the target logit
  // (allreduced), then the loss and the merged top-1/top-5 of this rank's samples.
  const RowArgs ra{z, big_n, m, row_begin_, row_end_, k, cols, mg.normalized ? mg.scale : 1.0, mg};
  auto* res = static_cast<DeviceResults*>(results_.raw());
  CUDA_CHECK(cudaMemsetAsync(res, 0, sizeof(DeviceResults), s));
  int64_t* tcol = Scratch::take<int64_t>(b.tcol, big_n);
  double* tlogit = Scratch::take<double>(b.tlogit, big_n);
  double* tslope = Scratch::take<double>(b.tslope, big_n);
  double* rmax = Scratch::take<double>(b.rmax, big_n);
  double* sums = Scratch::take<double>(b.sums, 2 * big_n);
  double* top = Scratch::take<double>(b.top, big_n * kTopK * 2);
  const unsigned row_blocks = static_cast<unsigned>(std::min<int64_t>(big_n, 65535));
  targets_kernel<<<grid_for(big_n), kThreads, 0, s>>>(ra, batch_labels, tcol, tlogit, tslope, res);
  row_max_top_kernel<<<row_blocks, kThreads, 0, s>>>(ra, tcol, tlogit, rmax, top);
  check_launch();
  if (collective()) comm_->allreduce_max(rmax, static_cast<size_t>(big_n), DType::kF64, s);
  row_sum_kernel<<<row_blocks, kThreads, 0, s>>>(ra, tcol, tlogit, rmax, sums);
  check_launch();
  if (collective()) comm_->allreduce_sum(sums, static_cast<size_t>(2 * big_n), DType::kF64, s);
  loss_kernel<<<1, kThreads, 0, s>>>(sums, rmax, big_n, res);
  const double* all_top = top;
  if (collective()) {
    double* gathered = Scratch::take<double>(b.all_top, world_ * big_n * kTopK * 2);
    comm_->allgather(top, gathered, static_cast<size_t>(big_n * kTopK * 2), DType::kF64, s);
    all_top = gathered;
  }
  hits_kernel<<<grid_for(n), kThreads, 0, s>>>(all_top, collective() ? world_ : 1, big_n, offset, n, batch_labels, res);
  check_launch();
  if (!training) return;

  // dLoss/dz, then the used rows' weight gradient (through w/|w| for the cosine losses) and the loss
  // batch's feature gradient dz . w^ (w^ = w/|w| folded into dz's columns).
  if (m > 0) {
    dlogits_kernel<<<matrix_grid(big_n, m), kThreads, 0, s>>>(ra, z, tcol, tlogit, tslope, rmax, sums,
                                                                1.0 / static_cast<double>(big_n), grad_scale);
    check_launch();
  }
  grads_ = sampled ? Scratch::take<float>(b.grads, m * d) : full_grads_.data<float>();
  cuda::gemm(s, DType::kF32, true, false, m, d, big_n, 1.0f, z, m, xs, d, 0.0f, grads_, d);
  if (mg.normalized && m > 0) {
    normalize_backward_kernel<float><<<grid_for(m, kWarpsPerBlock), kThreads, 0, s>>>(w, inv_w, m, d, grads_, grads_, 1.0);
    scale_columns_kernel<<<matrix_grid(big_n, m), kThreads, 0, s>>>(z, big_n, m, inv_w, 1.0);
    check_launch();
  }
  float* dx = Scratch::take<float>(b.dx, big_n * d);
  if (m > 0) cuda::gemm(s, DType::kF32, false, false, big_n, d, m, 1.0f, z, m, w, d, 0.0f, dx, d);
  else CUDA_CHECK(cudaMemsetAsync(dx, 0, static_cast<size_t>(big_n * d) * sizeof(float), s));
  float* mine = dx;
  if (collective()) {
    mine = Scratch::take<float>(b.dx_local, n * d);
    comm_->reduce_scatter_sum(dx, mine, static_cast<size_t>(n * d), DType::kF32, s);
  }
  // The caller averages the backbone's gradients over the ranks; the sharded loss is already the global
  // batch's mean, so its feature gradient is scaled back up by the world size.
  const double back = collective() ? static_cast<double>(world_) : 1.0;
  cuda::with_storage_type(grad_dtype, "classifier head feature gradient", [&](auto t) {
    using T = decltype(t);
    T* out = static_cast<T*>(dfeatures);
    if (mg.normalized)
      normalize_backward_kernel<T><<<grid_for(n, kWarpsPerBlock), kThreads, 0, s>>>(x + offset * d, inv_x + offset, n, d,
                                                                                    mine, out, back);
    else
      scale_store_kernel<T><<<grid_for(n * d), kThreads, 0, s>>>(mine, n * d, back, out);
  });
  check_launch();
}

HeadResult CudaClassifierHead::results(cudaStream_t s) {
  if (collective()) comm_->wait(s);
  else CUDA_CHECK(cudaStreamSynchronize(s));
  DeviceResults r{};
  CUDA_CHECK(cudaMemcpyAsync(&r, results_.raw(), sizeof r, cudaMemcpyDeviceToHost, s));
  CUDA_CHECK(cudaStreamSynchronize(s));
  if (r.bad_labels > 0) {
    std::vector<int64_t> labels(static_cast<size_t>(last_batch_));
    CUDA_CHECK(cudaMemcpyAsync(labels.data(), last_labels_, labels.size() * sizeof(int64_t), cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    for (size_t i = 0; i < labels.size(); ++i)
      if (labels[i] < 0 || labels[i] >= o_.num_classes)
        throw Error(str("label ", labels[i], " of sample ", i, " is outside 0..", o_.num_classes - 1));
  }
  HeadResult out;
  out.loss = r.loss;
  out.correct = static_cast<int64_t>(r.correct);
  out.correct_top5 = static_cast<int64_t>(r.correct_top5);
  out.examples = last_local_;
  return out;
}

}  // namespace fastnn::head
