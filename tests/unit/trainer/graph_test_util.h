// Shared helpers of the graph_*, zoo_* and train_step_* tests: NetDefs from text, deterministic
// random tensors, bitwise comparison.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include "schemas/net.pb.h"
#include "trainer/ops/op_case.h"
#include "trainer/tensor.h"

namespace fastnn::testing_util {

// Same shape, type and bytes.
inline bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

inline NetDef net_from_text(const std::string& text) {
  NetDef net;
  if (!google::protobuf::TextFormat::ParseFromString(text, &net)) ADD_FAILURE() << "bad NetDef text:\n" << text;
  return net;
}

// Uniform [lo, hi) values keyed by seed (ops::fill_uniform).
inline Tensor random_tensor(const Shape& shape, DType dt, uint64_t seed, double lo = -1, double hi = 1) {
  Tensor t = Tensor::empty(shape, dt);
  ops::fill_uniform(t, lo, hi, seed, 0);
  return t;
}

inline Tensor labels_of(std::initializer_list<int64_t> v) {
  return Tensor::from<int64_t>({static_cast<int64_t>(v.size())}, v);
}

inline bool all_finite(const Tensor& t) {
  for (double v : t.to_vector<double>())
    if (!std::isfinite(v)) return false;
  return true;
}

inline double sum_squares(const Tensor& t) {
  double s = 0;
  for (double v : t.to_vector<double>()) s += v * v;
  return s;
}

}  // namespace fastnn::testing_util
