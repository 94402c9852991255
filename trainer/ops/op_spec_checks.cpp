#include "trainer/ops/op_spec_checks.h"

#include "core/check.h"

namespace fastnn::ops {

DType compute_dtype(std::string_view op, std::span<const TensorSpec> inputs) {
  const TensorSpec* first = nullptr;
  for (const TensorSpec& t : inputs) {
    if (!is_floating(t.dtype)) continue;
    if (!first) first = &t;
    if (t.dtype != first->dtype)
      throw ConfigError(str(op, ": floating inputs mix ", dtype_name(first->dtype), " and ", dtype_name(t.dtype)));
  }
  if (!first) throw ConfigError(str(op, ": no floating input"));
  return first->dtype;
}

void expect_inputs(std::string_view op, std::span<const TensorSpec> inputs, size_t n, size_t n_max) {
  if (n_max < n) n_max = n;
  if (inputs.size() < n || inputs.size() > n_max)
    throw ConfigError(str(op, ": ", inputs.size(), " inputs, expected ", n == n_max ? str(n) : str(n, "..", n_max)));
}

void expect_rank(std::string_view op, std::span<const TensorSpec> inputs, size_t i,
                 std::initializer_list<int> ranks) {
  const Shape& s = inputs[i].shape;
  bool ok = false;
  for (int r : ranks) ok = ok || static_cast<int>(s.size()) == r;
  for (int64_t d : s) ok = ok && d > 0;
  if (!ok) {
    std::string want;
    for (int r : ranks) want += str(want.empty() ? "" : " or ", r);
    throw ConfigError(str(op, ": input ", i, " has shape ", shape_str(s), ", expected rank ", want,
                          " with positive dims"));
  }
  shape_numel(s);  // bounds the element count
}

void expect_labels(std::string_view op, std::span<const TensorSpec> inputs, size_t i, const Shape& shape) {
  const TensorSpec& t = inputs[i];
  if ((t.dtype != DType::kI32 && t.dtype != DType::kI64) || t.shape != shape)
    throw ConfigError(str(op, ": labels are ", dtype_name(t.dtype), shape_str(t.shape), ", expected i32 or i64 ",
                          shape_str(shape)));
}

std::vector<TensorSpec> named_inputs(std::span<const TensorSpec> inputs, std::initializer_list<const char*> names) {
  std::vector<TensorSpec> v;
  auto it = names.begin();
  for (size_t i = 0; i < inputs.size(); ++i) v.push_back(renamed(inputs[i], it != names.end() ? *it++ : str("x", i)));
  return v;
}

}  // namespace fastnn::ops
