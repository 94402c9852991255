// The legacy calls' algorithm choice (conv2d_algos_cuda.h).
#include "trainer/ops/conv2d_algos_cuda.h"

#include <algorithm>
#include <map>
#include <mutex>

#include "core/check.h"

namespace fastnn::ops {

CudnnTensorDesc::CudnnTensorDesc() { CUDNN_CHECK(cudnnCreateTensorDescriptor(&d)); }
CudnnTensorDesc::~CudnnTensorDesc() { cudnnDestroyTensorDescriptor(d); }
CudnnFilterDesc::CudnnFilterDesc() { CUDNN_CHECK(cudnnCreateFilterDescriptor(&d)); }
CudnnFilterDesc::~CudnnFilterDesc() { cudnnDestroyFilterDescriptor(d); }
CudnnConvDesc::CudnnConvDesc() { CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&d)); }
CudnnConvDesc::~CudnnConvDesc() { cudnnDestroyConvolutionDescriptor(d); }

namespace {

std::mutex g_algos_mu;
std::map<std::string, ConvAlgos> g_algos;  // by choose_conv_algos' key

// What differs between the passes: cuDNN's perf type, candidate count, search calls and workspace query.
struct ForwardPass {
  using Perf = cudnnConvolutionFwdAlgoPerf_t;
  static constexpr int kCount = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
  static constexpr const char* kName = "forward";
  static cudnnStatus_t find(cudnnHandle_t h, const ConvCallDescs& d, int* got, Perf* perf) {
    return cudnnFindConvolutionForwardAlgorithm(h, d.x.d, d.w.d, d.fwd.d, d.y.d, kCount, got, perf);
  }
  static cudnnStatus_t get(cudnnHandle_t h, const ConvCallDescs& d, int* got, Perf* perf) {
    return cudnnGetConvolutionForwardAlgorithm_v7(h, d.x.d, d.w.d, d.fwd.d, d.y.d, kCount, got, perf);
  }
  static cudnnStatus_t workspace(cudnnHandle_t h, const ConvCallDescs& d, int algo, size_t* bytes) {
    return cudnnGetConvolutionForwardWorkspaceSize(h, d.x.d, d.w.d, d.fwd.d, d.y.d,
                                                   static_cast<cudnnConvolutionFwdAlgo_t>(algo), bytes);
  }
  static const CudnnConvDesc& conv(const ConvCallDescs& d) { return d.fwd; }
};
struct BackwardDataPass {
  using Perf = cudnnConvolutionBwdDataAlgoPerf_t;
  static constexpr int kCount = CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
  static constexpr const char* kName = "backward-data";
  static cudnnStatus_t find(cudnnHandle_t h, const ConvCallDescs& d, int* got, Perf* perf) {
    return cudnnFindConvolutionBackwardDataAlgorithm(h, d.w.d, d.y.d, d.bwd_data.d, d.x.d, kCount, got, perf);
  }
  static cudnnStatus_t get(cudnnHandle_t h, const ConvCallDescs& d, int* got, Perf* perf) {
    return cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.w.d, d.y.d, d.bwd_data.d, d.x.d, kCount, got, perf);
  }
  static cudnnStatus_t workspace(cudnnHandle_t h, const ConvCallDescs& d, int algo, size_t* bytes) {
    return cudnnGetConvolutionBackwardDataWorkspaceSize(h, d.w.d, d.y.d, d.bwd_data.d, d.x.d,
                                                        static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), bytes);
  }
  static const CudnnConvDesc& conv(const ConvCallDescs& d) { return d.bwd_data; }
};
struct BackwardFilterPass {
  using Perf = cudnnConvolutionBwdFilterAlgoPerf_t;
  static constexpr int kCount = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
  static constexpr const char* kName = "backward-filter";
  static cudnnStatus_t find(cudnnHandle_t h, const ConvCallDescs& d, int* got, Perf* perf) {
    return cudnnFindConvolutionBackwardFilterAlgorithm(h, d.x.d, d.y.d, d.bwd_filter.d, d.w.d, kCount, got, perf);
  }
  static cudnnStatus_t get(cudnnHandle_t h, const ConvCallDescs& d, int* got, Perf* perf) {
    return cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x.d, d.y.d, d.bwd_filter.d, d.w.d, kCount, got, perf);
  }
  static cudnnStatus_t workspace(cudnnHandle_t h, const ConvCallDescs& d, int algo, size_t* bytes) {
    return cudnnGetConvolutionBackwardFilterWorkspaceSize(h, d.x.d, d.y.d, d.bwd_filter.d, d.w.d,
                                                          static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), bytes);
  }
  static const CudnnConvDesc& conv(const ConvCallDescs& d) { return d.bwd_filter; }
};

// The first acceptable candidate of a perf list (cuDNN sorts them best first).
template <typename Perf>
ConvAlgo first_usable(const char* pass, const Perf* perf, int count, bool fp32_no_tf32, const cuda::Policy& pol) {
  std::string seen;
  for (int i = 0; i < count; ++i) {
    const Perf& c = perf[i];
    seen += str(seen.empty() ? "" : ", ", "algo ", static_cast<int>(c.algo), " status ", static_cast<int>(c.status),
                " ws ", c.memory, " math ", static_cast<int>(c.mathType));
    if (c.status != CUDNN_STATUS_SUCCESS || c.memory > pol.max_conv_workspace) continue;
    if (pol.deterministic && c.determinism != CUDNN_DETERMINISTIC) continue;
    if (fp32_no_tf32 && (c.mathType == CUDNN_TENSOR_OP_MATH || c.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION))
      continue;
    return ConvAlgo{static_cast<int>(c.algo), c.mathType, c.memory};
  }
  throw ConfigError(str("conv2d: no usable cuDNN ", pass, " algorithm (", seen, ")"));
}

// One pass's algorithm, its math type set on the pass's descriptor and its exact workspace asked for.
template <typename Pass>
ConvAlgo choose(cudnnHandle_t h, const ConvCallDescs& d, const cuda::Policy& pol, bool fp32_no_tf32) {
  typename Pass::Perf perf[Pass::kCount];
  int got = 0;
  if (pol.conv_search == cuda::ConvAlgoSearch::kExhaustive)
    CUDNN_CHECK(Pass::find(h, d, &got, perf));
  else
    CUDNN_CHECK(Pass::get(h, d, &got, perf));
  ConvAlgo a = first_usable(Pass::kName, perf, got, fp32_no_tf32, pol);
  CUDNN_CHECK(cudnnSetConvolutionMathType(Pass::conv(d).d, fp32_no_tf32 ? CUDNN_FMA_MATH : a.math));
  size_t bytes = 0;
  CUDNN_CHECK(Pass::workspace(h, d, a.algo, &bytes));
  a.bytes = std::max(a.bytes, bytes);
  return a;
}

}  // namespace

ConvAlgos choose_conv_algos(ConvCallDescs& d, const std::string& key, const cuda::Policy& pol,
                            bool fp32_no_tf32) {
  {
    std::lock_guard<std::mutex> lock(g_algos_mu);
    auto it = g_algos.find(key);
    if (it != g_algos.end()) {
      // A cached choice still puts its math types on this layer's descriptors.
      const ConvAlgos& a = it->second;
      if (!fp32_no_tf32) {
        CUDNN_CHECK(cudnnSetConvolutionMathType(d.fwd.d, a.fwd.math));
        CUDNN_CHECK(cudnnSetConvolutionMathType(d.bwd_data.d, a.bwd_data.math));
        CUDNN_CHECK(cudnnSetConvolutionMathType(d.bwd_filter.d, a.bwd_filter.math));
      }
      return a;
    }
  }
  const cudnnHandle_t h = cuda::cudnn_handle(cuda::current_stream());
  // All three candidate lists are asked for under the math type the descriptors were created with (the
  // forward's choice changes only the forward's descriptor).
  ConvAlgos out;
  out.fwd = choose<ForwardPass>(h, d, pol, fp32_no_tf32);
  out.bwd_data = choose<BackwardDataPass>(h, d, pol, fp32_no_tf32);
  out.bwd_filter = choose<BackwardFilterPass>(h, d, pol, fp32_no_tf32);
  std::lock_guard<std::mutex> lock(g_algos_mu);
  g_algos.emplace(key, out);
  return out;
}

}  // namespace fastnn::ops
