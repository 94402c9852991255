// data_format=auto on the CPU: which activation layout a net trains and predicts in.
//
// NHWC where the fast CPU kernels cover the net: every layer with a 4-D output that is not element-wise
// has an NHWC CPU kernel of its own (oneDNN's convolutions, batch norm over rows, the pools...), so no
// layer inside the net pays the layout adapter's two transposes (a fully connected layer after a
// flatten, where the net's 4-D part ends, takes its input through the adapter; a fused node counts by
// its parts); otherwise, and with FASTNN_CPU_KERNELS=reference or without oneDNN, NCHW (the reference
// kernels' own layout). Measured: docs/PERFORMANCE.md, CPU kernels.
#pragma once

#include "schemas/net.pb.h"
#include "trainer/tensor.h"

namespace fastnn::runner {

struct StepRunnerOptions;

// The layout for `net` under `o` (o.fuse as the graph will have it), from a plan of its NCHW kernels.
Layout auto_cpu_layout(const NetDef& net, const StepRunnerOptions& o);

}  // namespace fastnn::runner
