// Mixup (Zhang et al., 2018) and CutMix (Yun et al., 2019) on training batches, as timm's Mixup does
// them: sample i mixed with sample n-1-i (timm's x.flip(0)), and the labels mixed in the loss with the
// same weight. timm's three modes (MixOptions::mode): batch (the default) draws once for the whole batch;
// pair once per pair (i, n-1-i), both getting the same draw; elem once per sample, each sample mixed with
// its partner's original image by its own draw (so a pair's two images differ in weight, or one gets
// CutMix and the other mixup).
//
//   std::vector<MixDraw> d = draw_mixes(options, height, width, n, seed, epoch, batch_index);
//   mix_samples(options.mode, d, spec, n, data);   // images mixed in place
//   std::vector<double> w = own_label_weights(options.mode, d, n);
//   // loss = mean_i of w_i * CE(y_i) + (1 - w_i) * CE(y_{n-1-i})  (the trainer's TrainStep)
//
// Each draw (timm's Mixup._params_per_batch / _params_per_elem and cutmix_bbox_and_lam with correct_lam): with probability
// `prob` the batch is mixed; when both alphas are > 0, CutMix is chosen with probability switch_prob;
// lambda ~ Beta(alpha, alpha) of the chosen method. CutMix cuts a box of sides h = int(H * sqrt(1 - lambda))
// and w = int(W * sqrt(1 - lambda)) around a uniform centre (cy, cx): rows cy - h/2 to cy + (h+1)/2 (timm
// 1.0's rand_bbox), clipped to the image; pastes the partner's box there, and then sets lambda to the
// share of the image left unpasted. Mixup blends every element:
// x_i * lambda + x_{n-1-i} * (1 - lambda) in float32 (a uint8 batch rounds it half to even, as timm's
// FastCollateMixup; a float16 batch blends the float values and rounds back).
//
// Every draw comes from the batch's own counter-based stream (rng.h, RngStream::kMix, keyed by the
// batch's epoch and its index in that epoch; a pair's or sample's draws follow each other in it): a
// resumed run mixes its batches exactly as the uninterrupted run, on any thread count. The random
// numbers are fastnn's, not NumPy's: the same seed does not give timm's draws.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "pipeline/batch.h"

namespace fastnn::pipeline {

enum class MixMode { kBatch, kPair, kElem };
// timm's names: "batch", "pair", "elem"; ConfigError naming them for anything else.
MixMode mix_mode_from_name(std::string_view name);

struct MixOptions {
  double mixup_alpha = 0;   // timm --mixup: Beta(alpha, alpha) of the blend; 0: no mixup
  double cutmix_alpha = 0;  // timm --cutmix: Beta(alpha, alpha) of the box; 0: no cutmix
  double prob = 1;          // timm --mixup-prob: probability that a batch is mixed at all
  double switch_prob = 0.5; // timm --mixup-switch-prob: CutMix's share when both alphas are > 0
  int64_t off_epoch = 0;    // timm --mixup-off-epoch: epochs from this one (0-based) are not mixed; 0: never off
  MixMode mode = MixMode::kBatch;  // timm --mixup-mode

  bool enabled() const { return mixup_alpha > 0 || cutmix_alpha > 0; }
};

// Throws ConfigError naming the field that is out of range (alphas >= 0, probabilities in [0, 1],
// off_epoch >= 0).
void check_mix_options(const MixOptions& options);

struct MixDraw {
  double lambda = 1;  // the weight of each sample's own image and label; 1: the batch is not mixed
  bool cutmix = false;
  int top = 0, left = 0, height = 0, width = 0;  // CutMix's box (rows top..top+height-1)
};

// The draw for the batch at `batch_index` of `epoch`, images height x width.
MixDraw draw_mix(const MixOptions& options, int height, int width, uint64_t seed, int64_t epoch, uint64_t batch_index);

// The box timm's rand_bbox cuts for `lambda` around centre (cy, cx), and lambda corrected to the share
// of the image outside it (what draw_mix does with its uniform centre).
MixDraw cutmix_box(double lambda, int height, int width, int cy, int cx);

// Mixes the first n samples of a batch of `spec` in place (pairs i and n-1-i; an odd batch's middle sample
// is blended with itself). Does nothing when d.lambda is 1.
void mix_batch(const MixDraw& d, const BatchSpec& spec, int n, void* data);

// The draws of a batch of n samples in `options.mode`: batch mode one (draw_mix's), pair mode one per pair
// (i, n-1-i) for i < (n+1)/2, elem mode one per sample. All lambda 1 when mixing is off for `epoch`.
std::vector<MixDraw> draw_mixes(const MixOptions& options, int height, int width, int n, uint64_t seed, int64_t epoch,
                                uint64_t batch_index);
// Mixes the first n samples in place with draw_mixes' draws: sample i gets its draw's share of sample
// n-1-i as it was before mixing (the middle sample of an odd batch mixes with itself).
void mix_samples(MixMode mode, const std::vector<MixDraw>& draws, const BatchSpec& spec, int n, void* data);
// Each sample's weight of its own label (1 - that of its partner's), n of them.
std::vector<double> own_label_weights(MixMode mode, const std::vector<MixDraw>& draws, int n);

// A Beta(a, a) draw from two Gamma(a) draws (Marsaglia and Tsang), the stream's next numbers.
class SampleRng;
double beta_draw(SampleRng& rng, double a);

}  // namespace fastnn::pipeline
