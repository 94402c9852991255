// Allreduce bandwidth of the MPI communicator (CPU buffers), beside a same-run ceiling: a memcpy of the
// same size (allreduce over shared memory cannot beat a copy of its buffer).
//   mpirun -np N build/bin/mpi_allreduce_bench [max_mib=64] [resnet50=1]
// Prints JSON lines from rank 0: per size, seconds per allreduce_average, algbw = bytes/s, busbw =
// algbw * 2(N-1)/N (NCCL's convention: what each rank's link carries in a ring); then, unless resnet50=0,
// the time of one BucketedAllreduce::average over ResNet-50's 25.6 M fp32 gradients in 25 MiB buckets.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "trainer/comm/bucketed_allreduce.h"
#include "trainer/comm/communicator.h"

namespace {
double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
}  // namespace

int main(int argc, char** argv) {
  const size_t max_bytes = (argc > 1 ? std::stoul(argv[1]) : 64) << 20;
  const bool resnet = argc > 2 ? std::string(argv[2]) != "0" : true;
  fastnn::CommOptions opt;
  opt.backend = "auto";
  auto comm = fastnn::make_communicator(opt);
  const int w = comm->world_size(), r = comm->rank();
  for (size_t bytes = 4096; bytes <= max_bytes; bytes *= 4) {
    std::vector<float> buf(bytes / 4, 1.0f), dst(bytes / 4);
    const int iters = static_cast<int>(std::clamp<size_t>((size_t{256} << 20) / bytes, 3, 200));
    comm->allreduce_average(std::span<float>(buf));  // warm-up
    comm->barrier();
    double t0 = now();
    for (int i = 0; i < iters; ++i) comm->allreduce_average(std::span<float>(buf));
    comm->barrier();
    const double sec = (now() - t0) / iters;
    t0 = now();
    for (int i = 0; i < iters; ++i) {
      std::memcpy(dst.data(), buf.data(), bytes);
      buf[i % buf.size()] = dst[(i * 7) % dst.size()];  // keep the copy observable
    }
    const double copy_sec = (now() - t0) / iters;
    if (r == 0)
      std::printf("{\"bench\":\"mpi_allreduce_average\",\"backend\":\"%s\",\"ranks\":%d,\"bytes\":%zu,"
                  "\"seconds\":%.3e,\"algbw_GBps\":%.3f,\"busbw_GBps\":%.3f,\"memcpy_GBps\":%.3f}\n",
                  comm->name().c_str(), w, bytes, sec, bytes / sec / 1e9, bytes / sec / 1e9 * 2.0 * (w - 1) / w,
                  bytes / copy_sec / 1e9);
  }
  if (resnet) {
    // ResNet-50 v1 has 25,557,032 parameters; one buffer per layer would not change the bucket traffic.
    std::vector<float> grads(25557032, 0.5f);
    fastnn::BucketedAllreduce reducer(*comm, {fastnn::GradBuffer{"resnet50", grads.data(), grads.size()}});
    reducer.average();
    comm->barrier();
    const double t0 = now();
    const int iters = 3;
    for (int i = 0; i < iters; ++i) reducer.average();
    comm->barrier();
    const double sec = (now() - t0) / iters;
    if (r == 0)
      std::printf("{\"bench\":\"resnet50_grad_average\",\"ranks\":%d,\"buckets\":%zu,\"bytes\":%zu,\"seconds\":%.4f}\n",
                  w, reducer.buckets().size(), grads.size() * 4, sec);
  }
  std::fflush(stdout);
  return 0;
}
