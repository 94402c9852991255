// conv2d's legacy cuDNN calls (conv2d_cuda.cpp, when conv_api is not graph): the descriptors of one
// convolution and the algorithm each of its three passes runs.
//
// The choice (choose_conv_algos): cuDNN's heuristics (cudnnGet*_v7) by default, its timed search
// (cudnnFind*) with Policy::conv_search = kExhaustive; of the candidates, best first, the first whose
// workspace fits Policy::max_conv_workspace, that is deterministic when Policy::deterministic is set, and
// that does not use tensor cores on f32 data when TF32 is not allowed. Each pass's workspace is then
// asked again for the chosen algorithm under the math type it runs with (the candidates' sizes are
// estimates). Choices are kept process-wide by the caller's key, so identical layers search once.
#pragma once

#include <cudnn.h>

#include <cstddef>
#include <string>

#include "trainer/cuda/runtime.h"

namespace fastnn::ops {

// Owning wrappers for cuDNN's three legacy descriptor kinds.
struct CudnnTensorDesc {
  cudnnTensorDescriptor_t d = nullptr;
  CudnnTensorDesc();
  ~CudnnTensorDesc();
  CudnnTensorDesc(const CudnnTensorDesc&) = delete;
  CudnnTensorDesc& operator=(const CudnnTensorDesc&) = delete;
};
struct CudnnFilterDesc {
  cudnnFilterDescriptor_t d = nullptr;
  CudnnFilterDesc();
  ~CudnnFilterDesc();
  CudnnFilterDesc(const CudnnFilterDesc&) = delete;
  CudnnFilterDesc& operator=(const CudnnFilterDesc&) = delete;
};
struct CudnnConvDesc {
  cudnnConvolutionDescriptor_t d = nullptr;
  CudnnConvDesc();
  ~CudnnConvDesc();
  CudnnConvDesc(const CudnnConvDesc&) = delete;
  CudnnConvDesc& operator=(const CudnnConvDesc&) = delete;
};

// One convolution as the legacy calls see it: x, y and w, and a convolution descriptor per pass (each
// pass's chosen math type goes on its own).
struct ConvCallDescs {
  CudnnTensorDesc x, y;
  CudnnFilterDesc w;
  CudnnConvDesc fwd, bwd_data, bwd_filter;
};

struct ConvAlgo {
  int algo = 0;  // the pass's cudnnConvolution*Algo_t
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  size_t bytes = 0;  // its workspace
};
struct ConvAlgos {
  ConvAlgo fwd, bwd_data, bwd_filter;
};

// The three passes' algorithms for `d` under `pol` (the file comment); the math type each pass runs with
// is left on its descriptor. `key` names the problem and the policy (identical keys: identical choices).
// Throws ConfigError naming the pass and every candidate when none is usable.
ConvAlgos choose_conv_algos(ConvCallDescs& d, const std::string& key, const cuda::Policy& pol,
                            bool fp32_no_tf32);

}  // namespace fastnn::ops
