// Generic tests over every registered op and every one of its test cases:
//   - backward matches central finite differences of forward, in double precision;
//   - every output and gradient element is written (buffers start as NaN);
//   - forward and backward are bitwise deterministic;
//   - the f32 kernel agrees with the f64 kernel on the same inputs.
// Plus the registry and signature-validation contract.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <set>
#include <string>

#include "trainer/graph/net_plan.h"
#include "trainer/ops/op.h"
#include "trainer/ops/op_case.h"

#ifdef FASTNN_HAVE_CUDA
#define FASTNN_CUDA_BUILD true
#else
#define FASTNN_CUDA_BUILD false
#endif

namespace fastnn::ops {
namespace {

struct CaseRef {
  std::string op;
  size_t index;
  OpCase c;
};

void PrintTo(const CaseRef& c, std::ostream* os) { *os << c.op << "/" << c.c.label; }

std::vector<CaseRef> all_cases() {
  std::vector<CaseRef> v;
  for (const OpDef* d : graph::builtin_op_registry().all()) {
    auto cases = d->test_cases();
    for (size_t i = 0; i < cases.size(); ++i) v.push_back({d->name, i, cases[i]});
  }
  return v;
}

std::string case_name(const testing::TestParamInfo<CaseRef>& info) {
  std::string s = info.param.op + "_" + info.param.c.label;
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

constexpr uint64_t kSeed = 1234, kStep = 7;

struct CaseRun {
  std::unique_ptr<OpKernel> kernel;
  KernelTensors t;
};

CaseRun make_run(const CaseRef& cr, DType dt) {
  CaseRun r;
  r.kernel = graph::builtin_op_registry().create(cr.op, Device::kCpu, cr.c.attrs, case_input_specs(cr.c, dt));
  r.t = allocate_kernel_tensors(r.kernel->signature());
  fill_case_tensors(r.t, r.kernel->signature(), cr.c, /*seed=*/42);
  return r;
}

void forward(CaseRun& r, bool training) { r.kernel->forward(r.t.forward_args(training, kSeed, kStep)); }

// sum over floating outputs of d_output * output: the scalar whose gradient backward computes.
double objective(const KernelTensors& t) {
  double j = 0;
  for (size_t o = 0; o < t.outputs.size(); ++o) {
    if (t.outputs[o].dtype() != DType::kF64) continue;
    const double* y = t.outputs[o].data<double>();
    const double* w = t.d_outputs[o].data<double>();
    for (int64_t i = 0; i < t.outputs[o].numel(); ++i) j += w[i] * y[i];
  }
  return j;
}

bool has_nan(const Tensor& t) {
  if (!t.defined() || !is_floating(t.dtype())) return false;
  for (double v : t.to_vector<double>())
    if (std::isnan(v)) return true;
  return false;
}

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  if (a.defined() != b.defined()) return false;
  return !a.defined() || (a.nbytes() == b.nbytes() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0);
}

class OpCaseTest : public testing::TestWithParam<CaseRef> {};

TEST_P(OpCaseTest, BackwardMatchesFiniteDifferencesInDouble) {
  const CaseRef& cr = GetParam();
  CaseRun r = make_run(cr, DType::kF64);
  const OpSignature& sig = r.kernel->signature();
  if (!sig.has_backward) {
    EXPECT_THROW(r.kernel->backward(r.t.backward_args(cr.c.training)), Error);
    return;
  }
  std::vector<Tensor> state0;
  for (const Tensor& s : r.t.state) state0.push_back(s.clone());
  auto restore_state = [&] {
    for (size_t i = 0; i < state0.size(); ++i) std::memcpy(r.t.state[i].raw(), state0[i].raw(), state0[i].nbytes());
  };
  restore_state();
  forward(r, cr.c.training);
  r.kernel->backward(r.t.backward_args(cr.c.training));

  // Every differentiable tensor: float inputs with a gradient, and all params.
  struct Target {
    std::string name;
    Tensor value, grad;
  };
  std::vector<Target> targets;
  for (size_t i = 0; i < r.t.inputs.size(); ++i)
    if (sig.input_has_grad[i]) targets.push_back(Target{"input " + sig.inputs[i].name, r.t.inputs[i], r.t.d_inputs[i]});
  for (size_t i = 0; i < r.t.params.size(); ++i)
    targets.push_back(Target{"param " + sig.params[i].name, r.t.params[i], r.t.d_params[i]});
  ASSERT_FALSE(targets.empty());

  constexpr double h = 1e-5, rtol = 1e-6;
  for (Target& tg : targets) {
    ASSERT_FALSE(has_nan(tg.grad)) << tg.name << ": backward left elements unwritten";
    double* v = tg.value.data<double>();
    const double* g = tg.grad.data<double>();
    double scale = 1e-3;
    for (int64_t i = 0; i < tg.grad.numel(); ++i) scale = std::max(scale, std::fabs(g[i]));
    int failures = 0;
    for (int64_t i = 0; i < tg.value.numel() && failures < 5; ++i) {
      const double v0 = v[i];
      v[i] = v0 + h;
      restore_state();
      forward(r, cr.c.training);
      const double jp = objective(r.t);
      v[i] = v0 - h;
      restore_state();
      forward(r, cr.c.training);
      const double jm = objective(r.t);
      v[i] = v0;
      const double numeric = (jp - jm) / (2 * h);
      const double err = std::fabs(numeric - g[i]);
      if (err > rtol * std::max(std::fabs(numeric), std::fabs(g[i])) + 1e-8 * scale) {
        ADD_FAILURE() << cr.op << "/" << cr.c.label << " " << tg.name << "[" << i << "]: analytic " << g[i]
                      << " numeric " << numeric << " (|diff| " << err << ")";
        ++failures;
      }
    }
  }
}

TEST_P(OpCaseTest, WritesEveryOutputAndIsDeterministic) {
  const CaseRef& cr = GetParam();
  CaseRun a = make_run(cr, DType::kF64), b = make_run(cr, DType::kF64);
  forward(a, cr.c.training);
  forward(b, cr.c.training);
  for (size_t i = 0; i < a.t.outputs.size(); ++i) {
    EXPECT_FALSE(has_nan(a.t.outputs[i])) << "output " << i << " not fully written";
    EXPECT_TRUE(bitwise_equal(a.t.outputs[i], b.t.outputs[i])) << "output " << i;
  }
  for (size_t i = 0; i < a.t.state.size(); ++i) EXPECT_TRUE(bitwise_equal(a.t.state[i], b.t.state[i]));
  if (!a.kernel->signature().has_backward) return;
  a.kernel->backward(a.t.backward_args(cr.c.training));
  b.kernel->backward(b.t.backward_args(cr.c.training));
  for (size_t i = 0; i < a.t.d_inputs.size(); ++i) {
    EXPECT_FALSE(has_nan(a.t.d_inputs[i])) << "d_input " << i;
    EXPECT_TRUE(bitwise_equal(a.t.d_inputs[i], b.t.d_inputs[i])) << "d_input " << i;
  }
  for (size_t i = 0; i < a.t.d_params.size(); ++i) {
    EXPECT_FALSE(has_nan(a.t.d_params[i])) << "d_param " << i;
    EXPECT_TRUE(bitwise_equal(a.t.d_params[i], b.t.d_params[i])) << "d_param " << i;
  }
}

void expect_close(const Tensor& f32, const Tensor& f64, const std::string& what) {
  if (!f32.defined()) return;
  if (!is_floating(f32.dtype())) {
    EXPECT_TRUE(bitwise_equal(f32, f64)) << what;
    return;
  }
  const auto a = f32.to_vector<double>(), b = f64.to_vector<double>();
  double scale = 1;
  for (double v : b) scale = std::max(scale, std::fabs(v));
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_NEAR(a[i], b[i], 1e-4 * std::fabs(b[i]) + 1e-5 * scale) << what << "[" << i << "]";
}

TEST_P(OpCaseTest, Float32AgreesWithFloat64) {
  const CaseRef& cr = GetParam();
  CaseRun s = make_run(cr, DType::kF32), d = make_run(cr, DType::kF64);
  forward(s, cr.c.training);
  forward(d, cr.c.training);
  for (size_t i = 0; i < s.t.outputs.size(); ++i) expect_close(s.t.outputs[i], d.t.outputs[i], "output");
  for (size_t i = 0; i < s.t.state.size(); ++i) expect_close(s.t.state[i], d.t.state[i], "state");
  if (!s.kernel->signature().has_backward) return;
  s.kernel->backward(s.t.backward_args(cr.c.training));
  d.kernel->backward(d.t.backward_args(cr.c.training));
  for (size_t i = 0; i < s.t.d_inputs.size(); ++i) expect_close(s.t.d_inputs[i], d.t.d_inputs[i], "d_input");
  for (size_t i = 0; i < s.t.d_params.size(); ++i) expect_close(s.t.d_params[i], d.t.d_params[i], "d_param");
}

INSTANTIATE_TEST_SUITE_P(AllOps, OpCaseTest, testing::ValuesIn(all_cases()), case_name);

// ---- the registry and the kernel contract ----

// The registry must hold exactly the ops that have a CPU implementation file (one op = a header, a
// `<op>_cpu.cpp`, ...: DESIGN.md), found by listing trainer/ops/ rather than by a list kept here, so a
// new op that is written but not added to register_builtin_ops() fails this test without anyone
// having to remember to update it.
TEST(OpRegistry, ListsEveryBuiltinOpWithCasesAndCpuKernels) {
  std::set<std::string> names;
  for (const OpDef* d : graph::builtin_op_registry().all()) {
    names.insert(d->name);
    EXPECT_FALSE(d->test_cases().empty()) << d->name;
    EXPECT_TRUE(graph::builtin_op_registry().has_kernel(d->name, Device::kCpu)) << d->name;
    EXPECT_FALSE(d->summary.empty()) << d->name;
  }
  std::set<std::string> files;
  const std::string suffix = "_cpu.cpp";
  for (const auto& e : std::filesystem::directory_iterator(std::string(FASTNN_SOURCE_DIR) + "/trainer/ops")) {
    const std::string f = e.path().filename().string();
    if (f.size() > suffix.size() && f.ends_with(suffix)) files.insert(f.substr(0, f.size() - suffix.size()));
  }
  ASSERT_GE(files.size(), 10u) << "trainer/ops not found under " << FASTNN_SOURCE_DIR;
  EXPECT_EQ(names, files) << "registered ops vs trainer/ops/<op>_cpu.cpp files";
}

TEST(OpRegistry, RejectsDuplicatesUnknownNamesAndBadAttributes) {
  OpRegistry r;
  register_builtin_ops(r);
  EXPECT_THROW(register_builtin_ops(r), Error);
  EXPECT_THROW(r.add_kernel("no_such_op", Device::kCuda, nullptr), Error);
  try {
    r.get("convolution");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("conv2d"), std::string::npos) << e.what();
  }
  const std::vector<TensorSpec> x{{.name = "x", .shape = {2, 3, 8, 8}, .dtype = DType::kF32}};
  EXPECT_THROW(r.create("conv2d", Device::kCpu, {{"kernel", 3}}, x), ConfigError);  // no filters
  EXPECT_THROW(r.create("conv2d", Device::kCpu, {{"filters", 4}, {"kernel", 3}, {"strides", 2}}, x), ConfigError);
  EXPECT_THROW(r.create("conv2d", Device::kCpu, {{"filters", 4}, {"kernel", 3}, {"groups", 2}}, x), ConfigError);
  EXPECT_THROW(r.create("conv2d", Device::kCpu, {{"filters", 4}, {"kernel", 9}}, x), ConfigError);
  EXPECT_THROW(r.create("conv2d", Device::kCpu, {{"filters", 4}, {"kernel", 3}, {"padding", "full"}}, x), ConfigError);
  EXPECT_THROW(r.create("conv2d", Device::kCpu, {{"filters", 4}, {"kernel", "3"}}, x), ConfigError);
  // A device without a kernel is a ConfigError. In a CUDA build every op registers its kCuda kernel
  // itself (register_<op> calls register_<op>_cuda), so test on a copy of conv2d with the CPU kernel only.
  EXPECT_EQ(r.has_kernel("conv2d", Device::kCuda), FASTNN_CUDA_BUILD);
  OpDef cpu_only = r.get("conv2d");
  cpu_only.name = "conv2d_cpu_only";
  cpu_only.kernels.erase(Device::kCuda);
  r.add(cpu_only);
  EXPECT_THROW(r.create("conv2d_cpu_only", Device::kCuda, {{"filters", 4}, {"kernel", 3}}, x), ConfigError);
  EXPECT_THROW(r.create("max_pool2d", Device::kCpu, {{"kernel", 2}, {"padding", 2}}, x), ConfigError);
  EXPECT_THROW(r.create("dropout", Device::kCpu, {{"rate", 1.0}}, x), ConfigError);
  const std::vector<TensorSpec> xf16{{.name = "x", .shape = {2, 3, 8, 8}, .dtype = DType::kF16}};
  EXPECT_THROW(r.create("relu", Device::kCpu, {}, xf16), ConfigError);
  EXPECT_NO_THROW(r.create("conv2d", Device::kCpu, {{"filters", 4}, {"kernel", 3}}, x));
}

TEST(OpKernel, ValidatesTensorsAgainstTheSignature) {
  const std::vector<TensorSpec> x{{.name = "x", .shape = {2, 3, 5, 5}, .dtype = DType::kF32}};
  auto k = graph::builtin_op_registry().create("conv2d", Device::kCpu, {{"filters", 4}, {"kernel", 3}}, x);
  const OpSignature& sig = k->signature();
  ASSERT_EQ(sig.params.size(), 2u);
  EXPECT_EQ(sig.params[0].name, "weight");
  EXPECT_EQ(sig.params[0].shape, (Shape{4, 3, 3, 3}));
  EXPECT_TRUE(sig.params[0].weight_decay);
  EXPECT_FALSE(sig.params[1].weight_decay);
  EXPECT_EQ(sig.outputs[0].shape, (Shape{2, 4, 3, 3}));

  KernelTensors t = allocate_kernel_tensors(sig);
  OpCase c{"x", {}, {{{2, 3, 5, 5}}}};
  fill_case_tensors(t, sig, c, 1);
  EXPECT_NO_THROW(k->forward(t.forward_args(true)));

  KernelTensors bad = t;
  bad.outputs[0] = Tensor::empty({2, 4, 3, 4});
  EXPECT_THROW(k->forward(bad.forward_args(true)), Error);
  bad = t;
  bad.params[0] = Tensor::empty({4, 3, 3, 3}, DType::kF64);
  EXPECT_THROW(k->forward(bad.forward_args(true)), Error);
  bad = t;
  bad.params.pop_back();
  EXPECT_THROW(k->forward(bad.forward_args(true)), Error);
  bad = t;
  bad.inputs[0] = t.inputs[0].reshape({2, 3, 5, 5});
  bad.inputs[0].set_layout(Layout::kNHWC);
  EXPECT_THROW(k->forward(bad.forward_args(true)), Error);
  bad = t;
  bad.workspace = Tensor();
  if (sig.workspace_bytes) {
    EXPECT_THROW(k->forward(bad.forward_args(true)), Error);
  }
  // Unwanted gradients may be undefined.
  bad = t;
  bad.d_inputs[0] = Tensor();
  bad.d_params[1] = Tensor();
  EXPECT_NO_THROW(k->backward(bad.backward_args(true)));
}

TEST(OpKernel, IntegerInputsHaveNoGradient) {
  const std::vector<TensorSpec> in{{.name = "z", .shape = {4, 3}, .dtype = DType::kF64},
                                   {.name = "l", .shape = {4}, .dtype = DType::kI32}};
  auto k = graph::builtin_op_registry().create("softmax_xent", Device::kCpu, {}, in);
  KernelTensors t = allocate_kernel_tensors(k->signature());
  OpCase c{"x", {}, {{{4, 3}}, {{4}, DType::kI32, 3}}};
  fill_case_tensors(t, k->signature(), c, 1);
  ASSERT_FALSE(t.d_inputs[1].defined());
  k->forward(t.forward_args(true));
  EXPECT_NO_THROW(k->backward(t.backward_args(true)));
  t.d_inputs[1] = Tensor::empty({4}, DType::kI32);
  EXPECT_THROW(k->backward(t.backward_args(true)), Error);
  const std::vector<TensorSpec> bad_labels{in[0], {.name = "l", .shape = {4}, .dtype = DType::kF64}};
  EXPECT_THROW(graph::builtin_op_registry().create("softmax_xent", Device::kCpu, {}, bad_labels), ConfigError);
}

}  // namespace
}  // namespace fastnn::ops
