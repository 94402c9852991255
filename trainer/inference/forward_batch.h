// How many images an inference forward on the CPU takes at a time.
//
// A batch's activations stream through memory layer by layer. Where the network does few multiply-adds
// per byte of activation it reads and writes (MobileNet, NASNet-mobile: 1-9 per byte), a large batch
// spills each layer's output out of the L3 cache before the next layer reads it, and the forward waits
// on memory; where it does many (ResNet-50 about 20, Inception and VGG more), the large batch's bigger
// matrix products pay more than the cache costs. So a batch of such a network is forwarded in slices of
// as many images as keep its largest layer (input and output) within L3, and any other network's whole.
// Measured on a 2-vCPU AMD EPYC (Zen 4, 32 MB L3), `fastnn predict` of 320 photos at --batch_size 32:
// MobileNet v2 forwarded 4 at a time 1.03-1.27x (median 1.11) the whole batch's images/s, 8 at a time
// no better, 3 at a time (this rule's choice) 1.27-1.49x; MobileNet v1 5 at a time (the rule's) 1.07-1.19x;
// NASNet-mobile 8 at a time (the rule's) 1.04-1.16x; ResNet-50 8 at a time 0.90-0.99x, 4 at a time
// 0.84-0.95x. The threshold is cautious: Inception v1 (18 per byte, whole batch) ran 1.01-1.24x 5 at a time.
#pragma once

#include <cstdint>

namespace fastnn::graph {
class NetPlan;
}

namespace fastnn::inference {

struct ForwardBatch {
  int64_t images = 1;                 // per forward: batch itself or the slice size
  double macs_per_byte = 0;           // the network's multiply-adds over the bytes its layers read and write
  int64_t largest_layer_bytes = 0;    // one image's input plus output of its largest layer (f32)
};

// Networks with fewer multiply-adds per activation byte than this are forwarded in slices.
inline constexpr double kSliceBelowMacsPerByte = 10;

// `plan`: the network at batch 1 (any layout). `batch`: the images a forward is given. `l3_bytes`: the
// cache the slices must fit (0: unknown, the whole batch). As few forwards as fit, each of the same
// size but the last: 32 images where 5 fit go 5 at a time (the seventh forward 2), where 20 fit 16 at
// a time; 1 at a time where none fits.
ForwardBatch cpu_forward_batch(const graph::NetPlan& plan, int64_t batch, uint64_t l3_bytes);

}  // namespace fastnn::inference
