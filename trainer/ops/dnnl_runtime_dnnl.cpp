#include "trainer/ops/dnnl_runtime.h"

#include <omp.h>

#include <tbb/task_arena.h>

#include "core/check.h"

namespace fastnn::ops {

const dnnl::engine& dnnl_cpu_engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

void dnnl_execute(const dnnl::primitive& p, const std::unordered_map<int, dnnl::memory>& args) {
  // One stream per thread: a server may run several graphs at once.
  thread_local dnnl::stream stream(dnnl_cpu_engine());
  // The OpenMP team as wide as the oneTBB arena this thread is in (set per thread: it is OpenMP's
  // per-thread setting, and `--threads` limits oneTBB's arena).
  omp_set_num_threads(tbb::this_task_arena::max_concurrency());
  p.execute(stream, args);
  stream.wait();
}

bool dnnl_has_bf16() {
  const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
  return isa == dnnl::cpu_isa::avx512_core_bf16 || isa == dnnl::cpu_isa::avx512_core_amx;
}

std::string dnnl_description() {
  const dnnl_version_t* v = dnnl_version();
  std::string isa;
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::avx512_core_amx: isa = "avx512_core_amx"; break;
    case dnnl::cpu_isa::avx512_core_bf16: isa = "avx512_core_bf16"; break;
    case dnnl::cpu_isa::avx512_core_vnni: isa = "avx512_core_vnni"; break;
    case dnnl::cpu_isa::avx512_core: isa = "avx512_core"; break;
    case dnnl::cpu_isa::avx2_vnni: isa = "avx2_vnni"; break;
    case dnnl::cpu_isa::avx2: isa = "avx2"; break;
    case dnnl::cpu_isa::avx: isa = "avx"; break;
    case dnnl::cpu_isa::sse41: isa = "sse41"; break;
    default: isa = "generic"; break;
  }
  return str("oneDNN ", v->major, ".", v->minor, ".", v->patch, " (", isa, ")");
}

}  // namespace fastnn::ops
