// The explicit list of built-in ops. A new op adds its header and one line here; the generic tests
// pick it up from the registry.
#include "trainer/ops/add.h"
#include "trainer/ops/avg_pool2d.h"
#include "trainer/ops/batch_norm.h"
#include "trainer/ops/channel_pad.h"
#include "trainer/ops/concat.h"
#include "trainer/ops/conv2d.h"
#include "trainer/ops/depthwise_conv2d.h"
#include "trainer/ops/drop_path.h"
#include "trainer/ops/dropout.h"
#include "trainer/ops/fully_connected.h"
#include "trainer/ops/global_avg_pool.h"
#include "trainer/ops/hard_swish.h"
#include "trainer/ops/lrn.h"
#include "trainer/ops/max_pool2d.h"
#include "trainer/ops/op.h"
#include "trainer/ops/relu.h"
#include "trainer/ops/relu6.h"
#include "trainer/ops/scale.h"
#include "trainer/ops/softmax_xent.h"
#include "trainer/ops/spatial_shift.h"
#include "trainer/ops/tanh.h"
#include "trainer/ops/top_k.h"

namespace fastnn::ops {

void register_builtin_ops(OpRegistry& r) {
  register_add(r);
  register_avg_pool2d(r);
  register_batch_norm(r);
  register_channel_pad(r);
  register_concat(r);
  register_conv2d(r);
  register_depthwise_conv2d(r);
  register_drop_path(r);
  register_dropout(r);
  register_fully_connected(r);
  register_global_avg_pool(r);
  register_hard_swish(r);
  register_lrn(r);
  register_max_pool2d(r);
  register_relu(r);
  register_relu6(r);
  register_scale(r);
  register_softmax_xent(r);
  register_spatial_shift(r);
  register_tanh(r);
  register_top_k(r);
}

}  // namespace fastnn::ops
