// Checks of an op's input specs and helpers for its signature, shared by every device's kernels and by
// each op's device-neutral attribute parsing (<op>.cpp): nothing here runs a kernel.
#pragma once

#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trainer/ops/op.h"

namespace fastnn::ops {

// The dtype of the first floating input; ConfigError if there is none or another floating input
// differs.
DType compute_dtype(std::string_view op, std::span<const TensorSpec> inputs);
// ConfigError unless there are exactly n inputs (or, with n_max > n, between n and n_max).
void expect_inputs(std::string_view op, std::span<const TensorSpec> inputs, size_t n, size_t n_max = 0);
// ConfigError unless input i has one of the ranks, all dims > 0.
void expect_rank(std::string_view op, std::span<const TensorSpec> inputs, size_t i,
                 std::initializer_list<int> ranks);
// ConfigError unless input i is an integer tensor (i32 or i64) of the given shape.
void expect_labels(std::string_view op, std::span<const TensorSpec> inputs, size_t i, const Shape& shape);

// `s` renamed (building a new spec sidesteps a GCC 12 -Wrestrict false positive on string assignment).
inline TensorSpec renamed(const TensorSpec& s, std::string name) {
  return TensorSpec{std::move(name), s.shape, s.dtype, s.init, s.fan_in, s.fan_out, s.weight_decay};
}

// The signature's inputs: the given specs with names attached, all with a gradient unless listed.
std::vector<TensorSpec> named_inputs(std::span<const TensorSpec> inputs, std::initializer_list<const char*> names);

}  // namespace fastnn::ops
