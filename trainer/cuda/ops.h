// Registration of the CUDA kernels of the built-in ops: an explicit list, like register_builtin_ops()
// (no static initialisers). Call after register_builtin_ops(registry); each line adds the kCuda
// factory to an existing op with OpRegistry::add_kernel. Creating a CUDA kernel needs
// cuda::init_backend() (cuDNN algorithm selection talks to the device).
#pragma once

#include "trainer/ops/op.h"

namespace fastnn::ops {

void register_cuda_ops(OpRegistry& registry);

// One per op, defined in ops/<op>_cuda.cpp.
void register_add_cuda(OpRegistry& registry);
void register_avg_pool2d_cuda(OpRegistry& registry);
void register_batch_norm_cuda(OpRegistry& registry);
void register_channel_pad_cuda(OpRegistry& registry);
void register_concat_cuda(OpRegistry& registry);
void register_conv2d_cuda(OpRegistry& registry);
void register_dropout_cuda(OpRegistry& registry);
void register_fully_connected_cuda(OpRegistry& registry);
void register_global_avg_pool_cuda(OpRegistry& registry);
void register_lrn_cuda(OpRegistry& registry);
void register_max_pool2d_cuda(OpRegistry& registry);
void register_relu_cuda(OpRegistry& registry);
void register_scale_cuda(OpRegistry& registry);
void register_softmax_xent_cuda(OpRegistry& registry);
void register_tanh_cuda(OpRegistry& registry);
void register_top_k_cuda(OpRegistry& registry);

}  // namespace fastnn::ops
