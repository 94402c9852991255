// The table from fastnn ops (trainer/ops/) to ONNX opset-17 nodes, evaluation mode. One layer becomes:
//
//   conv2d            Conv (pads = the layer's exact [top, left, bottom, right]: TF "same" becomes its
//                     asymmetric explicit pads, the odd pixel bottom / right), bias as Conv's B
//   depthwise_conv2d  Conv with group = C (weight [C*M, 1, R, S] is already grouped conv layout)
//   batch_norm        BatchNormalization (inference form: moving mean / variance, epsilon); a disabled
//                     gamma / beta becomes the constant ones / zeros
//   relu / relu6      Relu / Clip(min 0, max 6)
//   hard_swish        HardSwish (opset 14's; the same formula)
//   tanh              [Mul inner] Tanh [Mul outer] (a factor of 1 is left out)
//   max_pool2d        MaxPool (explicit pads; padding never wins a max, as in TF)
//   avg_pool2d        AveragePool, count_include_pad as the layer's (0 = TF's divisor)
//   global_avg_pool   GlobalAveragePool, Flatten (the layer's output is [N, C])
//   fully_connected   [Flatten(axis 1) when the input is not 2-D] Gemm(transB = 1)
//   dropout           nothing: the identity in evaluation (its output is its input's tensor)
//   drop_path         nothing, as dropout
//   spatial_shift     Pad (constant 0) with pads [0, 0, -dy, -dx, 0, 0, dy, dx]: a negative pad crops
//   add               Add (2 inputs) or Sum
//   concat            Concat(axis 1)
//   scale             Mul by a scalar
//   channel_pad       Pad (constant 0) along dim 1
//   lrn               LRN(size = 2r + 1, alpha = alpha_tf * size, beta, bias): ONNX divides alpha by
//                     the window size, TensorFlow does not
//   A+B (fused, graph/net_plan.h PlanOptions::fuse): A's nodes, then B's.
// The loss and metric ops (softmax_xent, top_k) are not layers and have no mapping.
//
// Shapes come from the plan (batch dim included). A layer's output tensor and main node are named after
// the layer; helper nodes and tensors "<layer>/<OnnxOp>" (a fused tail: "<layer>/Relu").
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "trainer/export/onnx_builder.h"
#include "trainer/graph/net_plan.h"

namespace fastnn::onnx_export {

struct LayerTensors {
  std::vector<std::string> inputs;  // ONNX names of the layer's inputs, in order
  std::vector<Shape> input_shapes;  // their plan shapes
  std::string output;               // the name wanted for the layer's output
  // The op's param / state tensor by the op's name for it ("weight", "bias", "gamma", "running_mean"...):
  // its full name (the initializer's), shape and f32 values, row-major.
  struct Value {
    std::string name;
    Shape shape;
    std::vector<float> values;
  };
  std::function<Value(const std::string& op_name)> value;
};

// Emits `node`'s ONNX nodes; returns the name of the tensor holding its output (t.output, or an input's
// name for an identity such as dropout). ConfigError for an op without a mapping.
std::string emit_layer(OnnxBuilder& b, const graph::PlanNode& node, const LayerTensors& t);

// The fastnn op names emit_layer maps (fused names excluded), sorted.
std::vector<std::string> exportable_ops();

}  // namespace fastnn::onnx_export
