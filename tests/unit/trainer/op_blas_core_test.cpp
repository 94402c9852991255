// The OpenBLAS kernel pick (trainer/ops/blas_core.h): the rule, and what this process runs (the fastnn
// command's new start with a better core: tests/integration/blas_core_pick.sh).
#include "trainer/ops/blas_core.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <tuple>
#include <vector>

#include "trainer/ops/cpu_kernel.h"

extern "C" char* openblas_get_corename(void);

namespace fastnn::ops::cpu {
namespace {

constexpr CpuFeatures kSse3{};
constexpr CpuFeatures kAvx2{true, false, false};
constexpr CpuFeatures kAvx512{true, true, false};
constexpr CpuFeatures kAvx512Bf16{true, true, true};

TEST(BlasCore, OnlyOpenBlasFallbackIsReplaced) {
  EXPECT_EQ(better_blas_core("Prescott", kAvx512Bf16, false), "Cooperlake");
  EXPECT_EQ(better_blas_core("Prescott", kAvx512, false), "SkylakeX");
  EXPECT_EQ(better_blas_core("Prescott", kAvx2, false), "Haswell");
  // A real Prescott-class CPU keeps its kernels.
  EXPECT_EQ(better_blas_core("Prescott", kSse3, false), "");
  // A core OpenBLAS recognised is its own choice, even where the flags would allow a wider one.
  EXPECT_EQ(better_blas_core("Zen", kAvx512Bf16, false), "");
  EXPECT_EQ(better_blas_core("Haswell", kAvx512, false), "");
  EXPECT_EQ(better_blas_core("Cooperlake", kAvx512Bf16, false), "");
}

TEST(BlasCore, UserCoretypeIsNeverOverridden) {
  EXPECT_EQ(better_blas_core("Prescott", kAvx512Bf16, true), "");
}

TEST(BlasCore, KernelsInUseAreTheOnesReported) {
  const bool user_set = std::getenv("OPENBLAS_CORETYPE") != nullptr;
  const BlasCore& core = blas_core();
  EXPECT_EQ(core.name, openblas_get_corename());
  EXPECT_EQ(std::getenv("OPENBLAS_CORETYPE") != nullptr, user_set) << "the environment is left as it was";
  EXPECT_EQ(std::getenv("FASTNN_BLAS_CORE_PICKED"), nullptr) << "only the fastnn command starts itself again";
  if (user_set) {
    EXPECT_EQ(core.chosen, "OPENBLAS_CORETYPE");
  } else if (core.chosen == "OpenBLAS") {
    EXPECT_EQ(better_blas_core(core.name, this_cpu_features(), false), "");  // nothing better
  } else {
    // OpenBLAS's fallback on a CPU it does not know: this process keeps it (no switch in a running
    // process), the fastnn command would start again with a better one.
    EXPECT_EQ(core.name, "Prescott") << core.chosen;
    EXPECT_NE(better_blas_core(core.name, this_cpu_features(), false), "") << core.chosen;
    EXPECT_EQ(core.chosen.rfind("OpenBLAS (its generic fallback", 0), 0u) << core.chosen;
  }
  GTEST_LOG_(INFO) << "OpenBLAS core " << core.name << ", chosen by " << core.chosen;
}

// The switched kernels compute: a GEMM with exact small-integer data (every product and partial sum
// exact in f32) equals the naive triple loop bitwise, for shapes that take the kernels' edge paths.
TEST(BlasCore, GemmAfterThePickIsExact) {
  for (const auto& [m, n, k] : std::vector<std::tuple<int, int, int>>{{1, 1, 1}, {17, 33, 65}, {64, 196, 800}}) {
    std::vector<float> a(static_cast<size_t>(m) * k), b(static_cast<size_t>(k) * n), c(static_cast<size_t>(m) * n, 5.0f);
    for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(static_cast<int>(i * 7 % 9) - 4);
    for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(static_cast<int>(i * 5 % 7) - 3);
    gemm(false, true, m, n, k, 1.0f, a.data(), k, std::vector<float>(b).data(), k, 0.0f, c.data(), n);
    // b read as [n, k] (transposed): c[i][j] = sum_p a[i][p] * b[j][p]
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        float want = 0;
        for (int p = 0; p < k; ++p) want += a[static_cast<size_t>(i) * k + p] * b[static_cast<size_t>(j) * k + p];
        ASSERT_EQ(c[static_cast<size_t>(i) * n + j], want) << m << "x" << n << "x" << k << " at " << i << "," << j;
      }
  }
}

TEST(BlasCore, ActiveOpenMpWaitIsWarnedAboutWithOneDnn) {
  EXPECT_EQ(openmp_wait_warning(nullptr), "");
  EXPECT_EQ(openmp_wait_warning("passive"), "");
  EXPECT_EQ(openmp_wait_warning("PASSIVE"), "");
#ifdef FASTNN_HAVE_DNNL
  for (const char* active : {"active", "ACTIVE", "Active"}) {
    const std::string w = openmp_wait_warning(active);
    EXPECT_NE(w.find(std::string("OMP_WAIT_POLICY=") + active), std::string::npos) << w;
    EXPECT_NE(w.find("unset it"), std::string::npos) << w;
  }
#else
  EXPECT_EQ(openmp_wait_warning("active"), "") << "no OpenMP library to warn about";
#endif
}

}  // namespace
}  // namespace fastnn::ops::cpu
