// The oneDNN plumbing the *_dnnl.cpp kernels share (built only with FASTNN_HAVE_DNNL).
//
// Threads: Debian's libdnnl runs its primitives on OpenMP (libgomp), fastnn's other CPU kernels and the
// input pipeline on oneTBB. A primitive is executed from the graph's thread with as many OpenMP threads
// as oneTBB's arena allows (`--threads`, or every core), so the two pools take turns on the same cores:
// while a convolution runs, the graph's thread waits in it and oneTBB's workers idle.
// Memory: primitives use a user scratchpad carved from the kernel's workspace, so nothing allocates
// per step; weights in oneDNN's blocked formats are reordered into the workspace too.
#pragma once

#ifdef FASTNN_HAVE_DNNL
#include <string>
#include <unordered_map>

#include <oneapi/dnnl/dnnl.hpp>

namespace fastnn::ops {

const dnnl::engine& dnnl_cpu_engine();
// Executes `p` on the calling thread's stream with `args` and waits.
void dnnl_execute(const dnnl::primitive& p, const std::unordered_map<int, dnnl::memory>& args);
// "oneDNN 2.6.3 (avx512_core)": the library and the instruction set its kernels use.
std::string dnnl_description();

// Whether oneDNN's kernels here have bf16 instructions (AVX512_BF16 or AMX), honouring DNNL_MAX_CPU_ISA.
bool dnnl_has_bf16();

// Bytes rounded up to oneDNN's preferred 64-byte alignment, for carving a workspace.
inline size_t dnnl_aligned(size_t bytes) { return (bytes + 63) / 64 * 64; }

}  // namespace fastnn::ops
#endif  // FASTNN_HAVE_DNNL
