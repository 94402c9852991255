// conv2d on CUDA (ops/conv2d.h) through cuDNN's convolution API, NCHW or NHWC.
//
// Padding: cuDNN pads symmetrically. The symmetric part min(top, bottom) x min(left, right) goes to
// cuDNN; any excess (TensorFlow "same" with an odd total, or explicit [t,b,l,r]) is materialised by
// copying x into a zero-padded buffer in the workspace (pad2d), and the backward-data result is
// computed into that buffer and cropped back (crop2d). With the padded input, cuDNN's output size is
// exactly (H + top + bottom - eff) / stride + 1 = P.
//
// NHWC (add_nhwc_kernel): x and y are [N, H, W, C] / [N, P, Q, K] and cuDNN is told so (the tensor-core
// kernels' own layout: no transposes inside cuDNN). Its filters are then [K, R, S, C/groups]; the
// parameter stays [K, C/groups, R, S] (checkpoints, optimizers and the CPU oracle never see another
// layout), so forward writes the transposed copy into a saved tensor (`weight_krsc`, read again by the
// data gradient) and the filter gradient is computed in [K, R, S, C] in the workspace and transposed
// back: two weight-sized copies a step, against activation-sized transposes in every NCHW half-precision
// convolution. Bias and asymmetric padding act on [N*P*Q, K] rows and [N, H, W*C] planes.
//
// Channel padding (NHWC, f16/bf16, groups 1, C not a multiple of 8: conv_channels_for_cudnn): cuDNN
// sees Cp = C rounded up to 8. x is staged into [N, H, W, Cp] with zero channels (pad2d on [N*H*W, C]
// rows), then padded spatially if needed; the KRSC weight copy gets zero channels the same way; the
// filter gradient [K, R, S, Cp] is cropped to C before it is transposed back, and the data gradient is
// computed into the staged buffer and cropped (so it cannot add into dx). The zero channels contribute
// exact zeros: the C-channel convolution's result.
//
// Algorithms: chosen once per kernel object when it is created, under the policy's rules, and kept
// process-wide by the full problem so identical layers do not search twice (conv2d_algos_cuda.h). With
// Policy::conv_graph_api (conv_api=graph) the three passes run through cuDNN's graph API instead
// (conv2d_graph_cuda.h: its heuristics reach engines the legacy calls do not), with the same rules; a
// shape it has no engine for keeps the legacy calls, with a warning. Workspace: max(fwd, bwd-data,
// bwd-filter) + the staged input when padding is asymmetric or channels are padded (+ the
// channel-padded, spatially unpadded input when both) + NHWC's weight-sized buffers.
//
// fuse_conv_bn (op.h's channel sums): asked by the fused layer, an fp16 NHWC convolution that is not
// staged builds cuDNN's conv + statistics graph (conv_bn_graph_cuda.h) and its training forward then also
// writes the per-channel sums of y that the batch norm after it starts from.
#include <algorithm>
#include <climits>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>

#include "core/logging.h"
#include "trainer/ops/cuda_helpers.h"
#include "trainer/ops/cuda_kernel.h"
#include "trainer/ops/conv2d.h"
#include "trainer/ops/conv2d_algos_cuda.h"
#include "trainer/ops/conv2d_graph_cuda.h"
#include "trainer/ops/conv_bn_graph_cuda.h"
#include "trainer/ops/layout_adapter.h"
#include "trainer/ops/part_marks.h"

namespace fastnn::ops {
namespace {

int to_int(int64_t v) {
  FASTNN_CHECK(v >= 0 && v <= INT_MAX, "conv2d: dimension ", v, " exceeds cuDNN's int range");
  return static_cast<int>(v);
}

cudnnDataType_t cudnn_type(DType dt) {
  return dt == DType::kF32 ? CUDNN_DATA_FLOAT : dt == DType::kF16 ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16;
}

// The graph API's plans for the three passes (bwd_data_add: beta = 1, built when the data gradient may
// add into dx; null: the layer does not add, the graph sums a scratch buffer instead).
struct GraphPlans {
  std::shared_ptr<const cudnn_graph::ConvPlan> fwd, bwd_data, bwd_data_add, bwd_filter;
};

std::mutex g_cache_mu;
// Graph-API plans by problem, pass, beta and thread (cuDNN does not promise that one plan may execute on
// two threads at once: the thread-per-rank worlds would); null: no engine (warned once). Never freed:
// cuDNN >= 9.10 may crash destroying plans during static destruction (PyTorch leaks its cache too).
auto& g_plan_cache = *new std::map<std::string, std::shared_ptr<const cudnn_graph::ConvPlan>>;
// The conv + statistics graphs (fuse_conv_bn), the same way.
auto& g_stats_plan_cache = *new std::map<std::string, std::shared_ptr<const cudnn_graph::ConvBnPlan>>;

// A graph-API plan from `cache` by `key` and the calling thread; on a miss built by build(&why) (null, with
// why, where cuDNN has no usable engine; a descriptor cuDNN refuses throws and counts the same), handed to
// report(plan or null, why) once, and kept, null included, so a shape is built and reported once.
template <typename Plan, typename Build, typename Report>
std::shared_ptr<const Plan> cached_plan(std::map<std::string, std::shared_ptr<const Plan>>& cache,
                                        const std::string& key, Build build, Report report) {
  std::ostringstream thread;
  thread << std::this_thread::get_id();
  const std::string cache_key = str(key, " thread ", thread.str());
  std::lock_guard<std::mutex> lock(g_cache_mu);
  auto it = cache.find(cache_key);
  if (it != cache.end()) return it->second;
  std::string why;
  std::shared_ptr<const Plan> made;
  try {
    made = build(&why);
  } catch (const std::exception& e) {
    why = e.what();
  }
  report(made.get(), why);
  cache.emplace(cache_key, made);
  return made;
}

// What conv2d_runs_on_graph_api asks of a Conv2dCuda<T>, whatever its T.
class GraphApiUser {
 public:
  virtual bool on_graph_api() const = 0;

 protected:
  ~GraphApiUser() = default;
};

template <typename T>
class Conv2dCuda final : public OpKernel, public GraphApiUser {
 public:
  Conv2dCuda(OpSignature sig, const Conv2dParams& p, DType dt, bool nhwc)
      : OpKernel("conv2d", Device::kCuda), p_(p), dt_(dt), nhwc_(nhwc) {
    sig_ = nhwc ? nhwc_signature(std::move(sig)) : std::move(sig);
    const Window2d& g = p.win;
    const int64_t sym_h = std::min(g.pad_top, g.pad_bottom), sym_w = std::min(g.pad_left, g.pad_right);
    et_ = g.pad_top - sym_h, eb_ = g.pad_bottom - sym_h, el_ = g.pad_left - sym_w, er_ = g.pad_right - sym_w;
    asym_ = et_ || eb_ || el_ || er_;
    hp_ = p.h + et_ + eb_, wp_ = p.w + el_ + er_;
    const cuda::Policy pol = cuda::policy();
    cp_ = conv_channels_for_cudnn(p, dt, nhwc, pol.pad_conv_channels);
    chpad_ = cp_ != p.c;
    staged_ = asym_ || chpad_;
    // The data gradient can add into dx (beta = 1) unless it goes through the staged buffer and a crop.
    sig_.accumulates_input_grads = !staged_;

    const cudnnDataType_t t = cudnn_type(dt);
    const cudnnTensorFormat_t f = nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    CUDNN_CHECK(cudnnSetTensor4dDescriptor(descs_.x.d, f, t, to_int(p.n), to_int(cp_), to_int(hp_), to_int(wp_)));
    CUDNN_CHECK(cudnnSetTensor4dDescriptor(descs_.y.d, f, t, to_int(p.n), to_int(p.k), to_int(g.p), to_int(g.q)));
    CUDNN_CHECK(cudnnSetFilter4dDescriptor(descs_.w.d, t, f, to_int(p.k), to_int(cp_ / p.groups), to_int(g.r), to_int(g.s)));
    if (nhwc)  // the weights in cuDNN's NHWC filter order, written by forward for the data gradient
      sig_.saved.push_back(TensorSpec{.name = "weight_krsc", .shape = {p.k, g.r, g.s, cp_ / p.groups}, .dtype = dt});
    const bool fp32_no_tf32 = dt == DType::kF32 && !pol.allow_tf32;
    // f32 without TF32: FMA kernels only; otherwise tensor cores are welcome.
    const cudnnMathType_t math =
        fp32_no_tf32 ? CUDNN_FMA_MATH : dt == DType::kF32 ? CUDNN_DEFAULT_MATH : CUDNN_TENSOR_OP_MATH;
    for (CudnnConvDesc* c : {&descs_.fwd, &descs_.bwd_data, &descs_.bwd_filter}) {
      CUDNN_CHECK(cudnnSetConvolution2dDescriptor(c->d, to_int(sym_h), to_int(sym_w), to_int(g.stride_h),
                                                  to_int(g.stride_w), to_int(g.dil_h), to_int(g.dil_w),
                                                  CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
      CUDNN_CHECK(cudnnSetConvolutionGroupCount(c->d, to_int(p.groups)));
      CUDNN_CHECK(cudnnSetConvolutionMathType(c->d, math));
    }
    int on, oc, oh, ow;
    CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(descs_.fwd.d, descs_.x.d, descs_.w.d, &on, &oc, &oh, &ow));
    FASTNN_CHECK(on == p.n && oc == p.k && oh == g.p && ow == g.q, "conv2d: cuDNN output ", on, "x", oc, "x", oh, "x",
                 ow, " differs from the op's ", p.n, "x", p.k, "x", g.p, "x", g.q, " for ", g.to_string());

    graph_ = pol.conv_graph_api && choose_plans(pol, fp32_no_tf32);
    if (graph_) {
      conv_ws_ = gpu::align256(std::max({plans_.fwd->workspace_bytes(), plans_.bwd_data->workspace_bytes(),
                                          plans_.bwd_filter->workspace_bytes(),
                                          plans_.bwd_data_add ? plans_.bwd_data_add->workspace_bytes() : 0}));
    } else {
      algos_ = choose_conv_algos(descs_, cache_key(pol), pol, fp32_no_tf32);  // each pass's math type set too
      conv_ws_ = gpu::align256(std::max({algos_.fwd.bytes, algos_.bwd_data.bytes, algos_.bwd_filter.bytes}));
    }
    stage_bytes_ = staged_ ? gpu::align256(static_cast<size_t>(p.n * cp_ * hp_ * wp_) * sizeof(T)) : 0;
    mid_bytes_ = asym_ && chpad_ ? gpu::align256(static_cast<size_t>(p.n * cp_ * p.h * p.w) * sizeof(T)) : 0;
    // NHWC: the filter gradient in [K, R, S, Cp], and with padded channels the [K, R, S, C] transposition
    // between it (or the weights) and the [K, C, R, S] parameter.
    const size_t krs = static_cast<size_t>(p.k * g.r * g.s);
    dw_bytes_ = nhwc ? gpu::align256(krs * static_cast<size_t>(cp_ / p.groups) * sizeof(T)) : 0;
    krsc_bytes_ = nhwc && chpad_ ? gpu::align256(krs * static_cast<size_t>(p.c) * sizeof(T)) : 0;
    // The bias gradient's sums reuse the start of the workspace (after the filter pass, before the data pass).
    sig_.workspace_bytes = std::max(conv_ws_ + stage_bytes_ + mid_bytes_ + dw_bytes_ + krsc_bytes_,
                                    p_.bias ? gpu::bias_grad_workspace_bytes(bias_rows(), p_.k, bias_inner()) : 0);
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    const cudaStream_t s = gpu::stream_of(a);
    const cudnnHandle_t h = cuda::cudnn_handle(s);
    char* ws = gpu::ptr<char>(a.workspace);
    const void* x = staged_input(a.inputs[0], ws, s);
    T* y = gpu::ptr<T>(a.outputs[0]);
    const void* w = a.params[0].raw();
    if (nhwc_) {
      void* krsc = a.saved.back().raw();
      write_krsc_weights(w, krsc, ws, s);
      w = krsc;
    }
    fprop(h, x, w, y, ws);
    if (p_.bias) {
      const PartMark part("conv2d bias");
      gpu::bias_add<T>(bias_rows(), p_.k, bias_inner(), gpu::ptr<T>(a.params[1]), y, s);
    }
  }

 public:
  bool on_graph_api() const override { return graph_; }  // conv2d_runs_on_graph_api (conv2d.h)

  // fuse_conv_bn (op.h): cuDNN's conv + statistics graph (conv_bn_graph_cuda.h) where it has an engine
  // for this layer: fp16 NHWC, one group, no bias, not staged, C and K multiples of 8. Built here, once
  // per layer shape and thread; a layer without an engine is logged and keeps the two kernels.
  std::optional<size_t> channel_sums_workspace() override {
    if (!std::is_same_v<T, __half> || !nhwc_ || staged_ || p_.bias || p_.groups != 1 || p_.c % 8 || p_.k % 8)
      return std::nullopt;
    // Looked up again after a refusal: the cache answers null without building or warning twice.
    if (!stats_plan_) {
      const cuda::Policy pol = cuda::policy();
      const std::string key = cache_key(pol) + " conv+stats";
      stats_plan_ = cached_plan(
          g_stats_plan_cache, key,
          [&](std::string* why) {
            return cudnn_graph::ConvBnPlan::build(graph_problem(), cudnn_graph::ConvBnGraph::kFpropStats,
                                                  engine_choice(pol, false), why);
          },
          [&](const cudnn_graph::ConvBnPlan* made, const std::string& why) {
            if (made)
              log_info("conv2d ", key, ": the batch norm's statistics in the convolution's epilogue, on ",
                       made->description());
            else
              log_warn("conv2d (fuse_conv_bn): no conv+statistics engine for ", key, " (", why,
                       "); its batch norm computes the statistics itself");
          });
    }
    if (!stats_plan_) return std::nullopt;
    return stats_plan_->workspace_bytes();
  }

  void forward_with_channel_sums(const ForwardArgs& a, float* sums) override {
    FASTNN_CHECK(stats_plan_, "conv2d: forward_with_channel_sums without a conv+statistics plan");
    const cudaStream_t s = gpu::stream_of(a);
    void* krsc = a.saved.back().raw();
    write_krsc_weights(a.params[0].raw(), krsc, gpu::ptr<char>(a.workspace), s);
    const PartMark part("conv2d fprop+stats");
    // Zeroed first: whether the engine overwrites its sums or adds to them is the gpu test's question.
    CUDA_CHECK(cudaMemsetAsync(sums, 0, 2 * static_cast<size_t>(p_.k) * sizeof(float), s));
    stats_plan_->execute(cuda::cudnn_handle(s),
                         {.x = a.inputs[0].raw(), .w = krsc, .y = a.outputs[0].raw(), .sum = sums, .sqsum = sums + p_.k},
                         gpu::ptr<char>(a.workspace));
  }

 protected:
  void run_backward(const BackwardArgs& a) override {
    const cudaStream_t s = gpu::stream_of(a);
    const cudnnHandle_t h = cuda::cudnn_handle(s);
    char* ws = gpu::ptr<char>(a.workspace);
    const T* dy = gpu::ptr<T>(a.d_outputs[0]);
    // Filter gradient first: it reads the staged x from the workspace, which the data pass reuses.
    if (a.d_params[0].defined()) {
      const void* x = staged_input(a.inputs[0], ws, s);
      void* dw = nhwc_ ? static_cast<void*>(dw_buffer(ws)) : a.d_params[0].raw();  // NHWC: [K, R, S, Cp]
      wgrad(h, x, dw, dy, ws);
      if (nhwc_) write_filter_grad(dw_buffer(ws), a.d_params[0].raw(), ws, s);
    }
    if (p_.bias && a.d_params[1].defined()) {
      const PartMark part("conv2d bias");
      gpu::bias_grad<T>(bias_rows(), p_.k, bias_inner(), dy, gpu::ptr<T>(a.d_params[1]), ws, s);
    }
    if (a.d_inputs[0].defined()) {
      T* dx = gpu::ptr<T>(a.d_inputs[0]);
      void* dxp = staged_ ? static_cast<void*>(stage_buffer(ws)) : static_cast<void*>(dx);
      const void* w = nhwc_ ? a.saved.back().raw() : a.params[0].raw();
      // accumulate: dx already holds another consumer's gradient of x; cuDNN adds into it (beta = 1).
      dgrad(h, dxp, w, dy, ws, a.accumulate & 1);
      if (staged_) unstage(static_cast<const T*>(dxp), dx, ws, s);
    }
  }

 private:
  // The workspace after cuDNN's own part: [staged x][channel-padded x before spatial padding][NHWC filter
  // gradient][KRSC transposition with C channels].
  T* stage_buffer(char* ws) const { return reinterpret_cast<T*>(ws + conv_ws_); }
  T* mid_buffer(char* ws) const { return reinterpret_cast<T*>(ws + conv_ws_ + stage_bytes_); }
  T* dw_buffer(char* ws) const { return reinterpret_cast<T*>(ws + conv_ws_ + stage_bytes_ + mid_bytes_); }
  T* krsc_buffer(char* ws) const {
    return reinterpret_cast<T*>(ws + conv_ws_ + stage_bytes_ + mid_bytes_ + dw_bytes_);
  }

  // The three cuDNN passes, on the graph API's plans or the legacy calls; each is a part of the step
  // profile (ops/part_marks.h), as is every layout copy below ("conv2d layout").
  void fprop(cudnnHandle_t h, const void* x, const void* w, T* y, char* ws) const {
    const PartMark part("conv2d fprop");
    if (graph_) return plans_.fwd->execute(h, x, w, y, ws);
    const float one = 1.f, zero = 0.f;
    CUDNN_CHECK(cudnnConvolutionForward(h, &one, descs_.x.d, x, descs_.w.d, w, descs_.fwd.d,
                                        static_cast<cudnnConvolutionFwdAlgo_t>(algos_.fwd.algo), ws, conv_ws_, &zero,
                                        descs_.y.d, y));
  }
  void wgrad(cudnnHandle_t h, const void* x, void* dw, const T* dy, char* ws) const {
    const PartMark part("conv2d wgrad");
    if (graph_) return plans_.bwd_filter->execute(h, x, dw, dy, ws);
    const float one = 1.f, zero = 0.f;
    CUDNN_CHECK(cudnnConvolutionBackwardFilter(h, &one, descs_.x.d, x, descs_.y.d, dy, descs_.bwd_filter.d,
                                               static_cast<cudnnConvolutionBwdFilterAlgo_t>(algos_.bwd_filter.algo),
                                               ws, conv_ws_, &zero, descs_.w.d, dw));
  }
  // add: into what dx holds (beta = 1).
  void dgrad(cudnnHandle_t h, void* dx, const void* w, const T* dy, char* ws, bool add) const {
    const PartMark part("conv2d dgrad");
    if (graph_) {
      FASTNN_CHECK(!add || plans_.bwd_data_add, "conv2d: asked to add into dx without an adding plan");
      return (add ? plans_.bwd_data_add : plans_.bwd_data)->execute(h, dx, w, dy, ws);
    }
    const float one = 1.f, zero = 0.f;
    CUDNN_CHECK(cudnnConvolutionBackwardData(h, &one, descs_.w.d, w, descs_.y.d, dy, descs_.bwd_data.d,
                                             static_cast<cudnnConvolutionBwdDataAlgo_t>(algos_.bwd_data.algo), ws,
                                             conv_ws_, add ? &one : &zero, descs_.x.d, dx));
  }

  // x itself, or x staged for cuDNN in the workspace: its channels zero-padded to Cp (as [N*H*W, C]
  // rows), then copied into the spatially zero-padded buffer (NHWC: [N, H, W*Cp] planes padded by whole
  // pixels of Cp values).
  const void* staged_input(const Tensor& x, char* ws, cudaStream_t s) const {
    if (!staged_) return x.raw();
    const PartMark part("conv2d layout");
    T* xp = stage_buffer(ws);
    if (!nhwc_) {
      gpu::pad2d<T>(p_.n * p_.c, p_.h, p_.w, et_, eb_, el_, er_, gpu::ptr<T>(x), xp, s);
      return xp;
    }
    const T* src = gpu::ptr<T>(x);
    if (chpad_) {
      T* dst = asym_ ? mid_buffer(ws) : xp;
      gpu::pad2d<T>(1, p_.n * p_.h * p_.w, p_.c, 0, 0, 0, cp_ - p_.c, src, dst, s);
      src = dst;
    }
    if (asym_) gpu::pad2d<T>(p_.n, p_.h, p_.w * cp_, et_, eb_, el_ * cp_, er_ * cp_, src, xp, s);
    return xp;
  }
  // The inverse of staged_input for the data gradient: xp (the staged shape) -> x.
  void unstage(const T* xp, T* x, char* ws, cudaStream_t s) const {
    const PartMark part("conv2d layout");
    if (!nhwc_) {
      gpu::crop2d<T>(p_.n * p_.c, p_.h, p_.w, et_, eb_, el_, er_, xp, x, s);
      return;
    }
    const T* src = xp;
    if (asym_) {
      T* dst = chpad_ ? mid_buffer(ws) : x;
      gpu::crop2d<T>(p_.n, p_.h, p_.w * cp_, et_, eb_, el_ * cp_, er_ * cp_, src, dst, s);
      src = dst;
    }
    if (chpad_) gpu::crop2d<T>(1, p_.n * p_.h * p_.w, p_.c, 0, 0, 0, cp_ - p_.c, src, x, s);
  }
  // The parameter [K, C/g, R, S] as cuDNN's NHWC filter [K, R, S, Cp/g] (zero channels after C).
  void write_krsc_weights(const void* w, void* krsc, char* ws, cudaStream_t s) const {
    const PartMark part("conv2d layout");
    const int64_t rs = p_.win.r * p_.win.s, cg = p_.c / p_.groups;
    if (!chpad_) {
      gpu::transpose_last2(p_.k, cg, rs, sizeof(T), w, krsc, s);
      return;
    }
    T* tmp = krsc_buffer(ws);
    gpu::transpose_last2(p_.k, cg, rs, sizeof(T), w, tmp, s);
    gpu::pad2d<T>(1, p_.k * rs, cg, 0, 0, 0, cp_ - cg, tmp, static_cast<T*>(krsc), s);
  }
  // cuDNN's NHWC filter gradient [K, R, S, Cp/g] as the parameter's [K, C/g, R, S].
  void write_filter_grad(const T* dw_krsc, void* dw, char* ws, cudaStream_t s) const {
    const PartMark part("conv2d layout");
    const int64_t rs = p_.win.r * p_.win.s, cg = p_.c / p_.groups;
    const T* src = dw_krsc;
    if (chpad_) {
      T* tmp = krsc_buffer(ws);
      gpu::crop2d<T>(1, p_.k * rs, cg, 0, 0, 0, cp_ - cg, dw_krsc, tmp, s);
      src = tmp;
    }
    gpu::transpose_last2(p_.k, rs, cg, sizeof(T), src, dw, s);
  }
  // y as bias_add / bias_grad see it: [N, K, P*Q], or [N*P*Q, K, 1] rows in NHWC.
  int64_t bias_rows() const { return nhwc_ ? p_.n * p_.win.p * p_.win.q : p_.n; }
  int64_t bias_inner() const { return nhwc_ ? 1 : p_.win.p * p_.win.q; }

  std::string cache_key(const cuda::Policy& pol) const {
    const Window2d& g = p_.win;
    return str(cuda::current_device(), " ", dtype_name(dt_), nhwc_ ? " nhwc" : " nchw", " n", p_.n, " c", cp_, " ", hp_, "x", wp_,
               " k", p_.k, " g", p_.groups, " ", g.to_string(), " tf32 ", pol.allow_tf32, " det ", pol.deterministic,
               " search ", static_cast<int>(pol.conv_search), " max ", pol.max_conv_workspace);
  }

  // The convolution as the graph API sees it (the staged x when staged_) and the engine rules of `pol`.
  cudnn_graph::ConvProblem graph_problem() const {
    const Window2d& g = p_.win;
    cudnn_graph::ConvProblem pb;
    pb.io = cudnn_type(dt_);
    pb.nhwc = nhwc_;
    pb.n = p_.n, pb.c = cp_, pb.h = hp_, pb.w = wp_;
    pb.k = p_.k, pb.groups = p_.groups, pb.r = g.r, pb.s = g.s, pb.p = g.p, pb.q = g.q;
    pb.pad_h = std::min(g.pad_top, g.pad_bottom), pb.pad_w = std::min(g.pad_left, g.pad_right);
    pb.stride_h = g.stride_h, pb.stride_w = g.stride_w;
    pb.dil_h = g.dil_h, pb.dil_w = g.dil_w;
    return pb;
  }
  static cudnn_graph::EngineChoice engine_choice(const cuda::Policy& pol, bool fp32_no_tf32) {
    cudnn_graph::EngineChoice choice;
    choice.allow_tensor_cores_on_f32 = !fp32_no_tf32;
    choice.deterministic = pol.deterministic;
    choice.max_workspace = pol.max_conv_workspace;
    choice.exhaustive = pol.conv_search == cuda::ConvAlgoSearch::kExhaustive;
    return choice;
  }

  // The graph API's plans for this layer (g_plan_cache: by problem, pass, beta and thread); false, with a
  // warning naming the layer's shape and cuDNN's reasons, when a pass has no usable engine.
  bool choose_plans(const cuda::Policy& pol, bool fp32_no_tf32) {
    const cudnn_graph::ConvProblem pb = graph_problem();
    const cudnn_graph::EngineChoice choice = engine_choice(pol, fp32_no_tf32);
    const std::string base = cache_key(pol) + " graph";
    auto plan = [&](cudnn_graph::ConvPass pass, float beta, const char* name) {
      const std::string key = str(base, " pass ", static_cast<int>(pass), " beta ", beta);
      return cached_plan(
          g_plan_cache, key, [&](std::string* why) { return cudnn_graph::ConvPlan::build(pb, pass, beta, choice, why); },
          [&](const cudnn_graph::ConvPlan* made, const std::string& why) {
            if (made)
              log_debug("conv2d ", key, ": ", name, " on ", made->description());
            else
              log_warn("conv2d (conv_api=graph): no ", name, " engine for ", key, " (", why,
                       "); this layer keeps cuDNN's legacy convolution calls");
          });
    };
    plans_.fwd = plan(cudnn_graph::ConvPass::kForward, 0.0f, "forward");
    if (plans_.fwd) plans_.bwd_filter = plan(cudnn_graph::ConvPass::kBackwardFilter, 0.0f, "backward-filter");
    if (plans_.bwd_filter) plans_.bwd_data = plan(cudnn_graph::ConvPass::kBackwardData, 0.0f, "backward-data");
    const bool ok = plans_.fwd && plans_.bwd_filter && plans_.bwd_data;
    if (!ok) {
      plans_ = {};
      return false;
    }
    // Adding into dx (beta = 1) is an engine of its own; without one the graph gives this layer a scratch
    // buffer and sums it in, as for any kernel that does not add.
    if (sig_.accumulates_input_grads)
      plans_.bwd_data_add = plan(cudnn_graph::ConvPass::kBackwardData, 1.0f, "backward-data (adding)");
    if (!plans_.bwd_data_add) sig_.accumulates_input_grads = false;
    return true;
  }

  Conv2dParams p_;
  DType dt_;
  bool nhwc_ = false;
  int64_t et_ = 0, eb_ = 0, el_ = 0, er_ = 0, hp_ = 0, wp_ = 0;
  bool asym_ = false;
  int64_t cp_ = 0;        // the input channels cuDNN sees (conv_channels_for_cudnn)
  bool chpad_ = false;    // cp_ > C: zero channels added
  bool staged_ = false;   // x goes through the workspace (asymmetric padding or padded channels)
  ConvCallDescs descs_;  // the legacy calls' (conv2d_algos_cuda.h)
  ConvAlgos algos_;
  bool graph_ = false;  // the passes run on plans_ (conv_api=graph), not the legacy calls with algos_
  GraphPlans plans_;
  std::shared_ptr<const cudnn_graph::ConvBnPlan> stats_plan_;  // fuse_conv_bn's, once asked for
  size_t conv_ws_ = 0, stage_bytes_ = 0, mid_bytes_ = 0, dw_bytes_ = 0, krsc_bytes_ = 0;
};

}  // namespace

bool conv2d_runs_on_graph_api(const OpKernel& k) {
  const auto* c = dynamic_cast<const GraphApiUser*>(&k);
  return c && c->on_graph_api();
}

bool conv2d_adds_on_graph_api(const OpKernel& k) {
  return conv2d_runs_on_graph_api(k) && k.signature().accumulates_input_grads;
}

void register_conv2d_cuda(OpRegistry& r) {
  r.add_kernel("conv2d", Device::kCuda, [cpu = gpu::cpu_factory(r, "conv2d")](const Attrs& a, std::span<const TensorSpec> in) {
    const DType dt = gpu::cuda_compute_dtype("conv2d", in);
    OpSignature sig = gpu::cuda_signature(cpu, a, in, dt);
    return gpu::make_cuda_kernel<Conv2dCuda>(dt, std::move(sig), conv2d_params(a, in), dt, false);
  });
  r.add_nhwc_kernel("conv2d", Device::kCuda,
                    [cpu = gpu::cpu_factory(r, "conv2d")](const Attrs& a, std::span<const TensorSpec> in) {
                      const DType dt = gpu::cuda_compute_dtype("conv2d", in);
                      OpSignature sig = gpu::cuda_signature(cpu, a, in, dt);  // validates: errors propagate
                      try {
                        return gpu::make_cuda_kernel<Conv2dCuda>(dt, std::move(sig), conv2d_params(a, in), dt, true);
                      } catch (const Error& e) {  // no usable (or supported) cuDNN algorithm in NHWC for this shape
                        log_warn("conv2d: ", e.what(), "; this layer runs in NCHW behind the layout adapter");
                        return std::unique_ptr<OpKernel>();
                      }
                    });
}

}  // namespace fastnn::ops
