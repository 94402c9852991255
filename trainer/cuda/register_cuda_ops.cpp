#include "trainer/cuda/ops.h"

namespace fastnn::ops {

void register_cuda_ops(OpRegistry& r) {
  register_add_cuda(r);
  register_avg_pool2d_cuda(r);
  register_batch_norm_cuda(r);
  register_channel_pad_cuda(r);
  register_concat_cuda(r);
  register_conv2d_cuda(r);
  register_dropout_cuda(r);
  register_fully_connected_cuda(r);
  register_global_avg_pool_cuda(r);
  register_lrn_cuda(r);
  register_max_pool2d_cuda(r);
  register_relu_cuda(r);
  register_scale_cuda(r);
  register_softmax_xent_cuda(r);
  register_tanh_cuda(r);
  register_top_k_cuda(r);
}

}  // namespace fastnn::ops
