// Model statistics for `print_model_statistics`: the trainable-parameter table (name, shape, count),
// per-layer FLOPs, totals. Computed from a NetPlan, i.e. by shape inference alone: no tensor memory,
// so counting ResNet-152's 60 M parameters costs microseconds.
//
// FLOPs are per example for a forward pass: 2 x multiply-adds of conv and fully connected layers
// (biases, normalisation, activations and pooling are not counted: the usual convention, e.g. VGG-16
// at 224 x 224 is 2 x 15.47 G).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schemas/net.pb.h"
#include "trainer/graph/net_plan.h"

namespace fastnn::graph {

struct ParamRow {
  std::string name;
  Shape shape;
  int64_t count = 0;
};

struct LayerRow {
  std::string name, type;
  Shape output;  // per example (batch dim dropped)
  int64_t params = 0;  // trainable elements
  int64_t flops = 0;   // per example
};

struct ModelStatistics {
  std::string net_name;
  Shape input;  // [C, H, W]
  std::vector<ParamRow> params;  // trainable, plan order
  std::vector<ParamRow> state;   // moving statistics
  std::vector<LayerRow> layers;  // plan (topological) order
  int64_t trainable_params = 0, state_elements = 0, flops = 0;
};

ModelStatistics model_statistics(const NetPlan& plan);
// Plans `net` at batch 1 on the CPU registry (ConfigError if the net is invalid).
ModelStatistics model_statistics(const NetDef& net);

// Text for the log: a parameter table, a layer table with FLOPs, and totals, e.g.
//   Trainable parameters of resnet_v1_50 (input 3x224x224):
//     name                                           shape             count
//     resnet_v1_50/conv1/weights                     [64,3,7,7]        9,408
//     ...
//     total                                          161 tensors  25,557,032
//   ...
std::string format_model_statistics(const ModelStatistics& stats);

// 25557032 -> "25,557,032".
std::string group_thousands(int64_t n);

}  // namespace fastnn::graph
