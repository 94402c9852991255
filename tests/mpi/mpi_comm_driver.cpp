// Test driver for the MPI communicator, run by tests/integration/mpi_*.sh under mpirun:
//   mpi_comm_driver <mode> [collective_timeout_seconds]
// modes:
//   collectives  allreduce (sum/average; float, double, int64), broadcast, allgather, barrier with
//                known values on every rank
//   bucket       bucketed gradient averaging for several bucket sizes equals the average computed
//                locally from every rank's (reproducible) gradients, and is bitwise equal across ranks
//   kill         rank 1 dies by SIGKILL before a collective the others are waiting in
//   stall        rank 1 never joins a collective (sleeps); rank 0's collective timeout must abort the job
//   mismatch     ranks report different epoch lengths to check_world_consistency
//   shards       3 shards over the world (2 ranks) to check_world_consistency
//   consistent   equal epoch lengths and 4 shards: check_world_consistency passes
//   ckpt_save    (args: timeout DIR) save_sharded_checkpoint of step 10 into DIR: a row-partitioned head
//                of 11 rows (weights [11, 3] and an optimizer slot) whose values are a formula of (row, col)
//   ckpt_read    (args: timeout DIR) the latest checkpoint of DIR read back at this world size: each rank
//                its row_range rows, bitwise equal to the formula
// Prints "rank R: OK <mode>" on success; failures print "rank R: FAIL ..." and exit 1; a refused
// configuration prints "rank R: refused: <message>" and exits 3.
#include <unistd.h>

#include <csignal>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/check.h"
#include "trainer/checkpoint/row_shards.h"
#include "trainer/checkpoint/sharded_save.h"
#include "trainer/comm/bucketed_allreduce.h"
#include "trainer/comm/communicator.h"
#include "trainer/comm/world_check.h"

namespace {

using fastnn::Communicator;

int g_rank = -1;
int g_failures = 0;

#define EXPECT(cond, ...)                                                                          \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      std::fprintf(stderr, "rank %d: FAIL %s:%d %s %s\n", g_rank, __FILE__, __LINE__, #cond,       \
                   fastnn::str(__VA_ARGS__).c_str());                                             \
      ++g_failures;                                                                                \
    }                                                                                              \
  } while (0)

void run_collectives(Communicator& c) {
  const int r = c.rank(), w = c.world_size();
  EXPECT(w >= 2, "needs at least 2 ranks, got ", w);
  EXPECT(c.local_rank() >= 0 && c.local_rank() < c.local_size(), "local rank ", c.local_rank());
  // Floats: element i on rank r is (r + 1) * (i + 1) * 0.5; sum = (i + 1) * 0.5 * w(w+1)/2.
  std::vector<float> f(1000);
  for (size_t i = 0; i < f.size(); ++i) f[i] = static_cast<float>((r + 1) * (i + 1)) * 0.5f;
  std::vector<float> favg = f;
  c.allreduce_sum(std::span<float>(f));
  c.allreduce_average(std::span<float>(favg));
  const double tri = w * (w + 1) / 2.0;
  for (size_t i = 0; i < f.size(); ++i) {
    EXPECT(f[i] == static_cast<float>((i + 1) * 0.5 * tri), "float sum at ", i, ": ", f[i]);
    EXPECT(std::fabs(favg[i] - (i + 1) * 0.5 * tri / w) <= 1e-6 * (i + 1), "float average at ", i, ": ", favg[i]);
  }
  std::vector<double> d = {0.25 * r, -1.0, 1e300 / w};
  c.allreduce_average(std::span<double>(d));
  EXPECT(std::fabs(d[0] - 0.25 * (w - 1) / 2.0) < 1e-12, "double average ", d[0]);
  EXPECT(d[1] == -1.0, "double average ", d[1]);
  EXPECT(std::fabs(d[2] / (1e300 / w) - 1.0) < 1e-12, "double average of large values ", d[2]);
  // int64 beyond 32 bits, exact.
  std::vector<int64_t> n = {(int64_t{1} << 40) + r, -int64_t{3} * r, 7};
  c.allreduce_sum(std::span<int64_t>(n));
  EXPECT(n[0] == (int64_t{1} << 40) * w + w * (w - 1) / 2, "int64 sum ", n[0]);
  EXPECT(n[1] == -int64_t{3} * w * (w - 1) / 2, "int64 sum ", n[1]);
  EXPECT(n[2] == 7 * w, "int64 sum ", n[2]);
  std::vector<int64_t> navg = {10 * static_cast<int64_t>(w), 2};
  c.allreduce_average(std::span<int64_t>(navg));
  EXPECT(navg[0] == 10 * w && navg[1] == 2, "int64 average ", navg[0], " ", navg[1]);
  // Broadcast from the last rank.
  const int root = w - 1;
  std::vector<float> b = {static_cast<float>(r), static_cast<float>(r) * 2.0f};
  c.broadcast(std::span<float>(b), root);
  EXPECT(b[0] == root && b[1] == 2.0f * root, "broadcast got ", b[0], ",", b[1]);
  char id[128];  // like an ncclUniqueId
  for (int i = 0; i < 128; ++i) id[i] = static_cast<char>(r == 0 ? i : 0);
  c.broadcast_bytes(id, sizeof(id), 0);
  for (int i = 0; i < 128; ++i) EXPECT(id[i] == static_cast<char>(i), "broadcast_bytes at ", i);
  // Allgather: rank r sends {r, 100 + r}.
  const int64_t mine[2] = {r, 100 + r};
  std::vector<int64_t> all(2 * static_cast<size_t>(w));
  c.allgather(std::span<const int64_t>(mine, 2), std::span<int64_t>(all));
  for (int q = 0; q < w; ++q) EXPECT(all[2 * q] == q && all[2 * q + 1] == 100 + q, "allgather block ", q);
  std::vector<double> dg(static_cast<size_t>(w));
  const double dm = 1.5 * r;
  c.allgather(std::span<const double>(&dm, 1), std::span<double>(dg));
  for (int q = 0; q < w; ++q) EXPECT(dg[q] == 1.5 * q, "double allgather ", q);
  // Max: rank r holds {r, -r, 7 - 2r}; int64 and double too.
  std::vector<float> fm = {static_cast<float>(r), -static_cast<float>(r), 7.0f - 2.0f * r};
  c.allreduce_max(std::span<float>(fm));
  EXPECT(fm[0] == w - 1 && fm[1] == 0 && fm[2] == 7, "float max ", fm[0], " ", fm[1], " ", fm[2]);
  std::vector<int64_t> im = {(int64_t{1} << 40) * r, -r};
  c.allreduce_max(std::span<int64_t>(im));
  EXPECT(im[0] == (int64_t{1} << 40) * (w - 1) && im[1] == 0, "int64 max ", im[0], " ", im[1]);
  std::vector<double> dmx = {-1e300 * (r + 1)};
  c.allreduce_max(std::span<double>(dmx));
  EXPECT(dmx[0] == -1e300, "double max ", dmx[0]);
  // Reduce-scatter: rank q sends block b = {q + 10 b, q * b}; rank r gets the sums of block r.
  std::vector<double> rs_send(2 * static_cast<size_t>(w)), rs_recv(2);
  for (int b = 0; b < w; ++b) {
    rs_send[2 * b] = r + 10.0 * b;
    rs_send[2 * b + 1] = static_cast<double>(r) * b;
  }
  c.reduce_scatter_sum(std::span<const double>(rs_send), std::span<double>(rs_recv));
  const double qsum = w * (w - 1) / 2.0;
  EXPECT(rs_recv[0] == qsum + 10.0 * r * w && rs_recv[1] == static_cast<double>(r) * qsum, "reduce_scatter ",
         rs_recv[0], " ", rs_recv[1]);
  std::vector<float> rsf_send(3 * static_cast<size_t>(w), 0.5f), rsf_recv(3);
  c.reduce_scatter_sum(std::span<const float>(rsf_send), std::span<float>(rsf_recv));
  for (float v : rsf_recv) EXPECT(v == 0.5f * w, "float reduce_scatter ", v);
  c.barrier();
}

// Rank q's gradient for buffer b: reproducible from (q, b) so every rank can compute the reference.
std::vector<float> make_grad(int q, size_t b, size_t count) {
  std::mt19937 rng(static_cast<uint32_t>(1000 * q + b + 1));
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> g(count);
  for (float& v : g) v = dist(rng);
  return g;
}

void run_bucket(Communicator& c) {
  const int r = c.rank(), w = c.world_size();
  const std::vector<size_t> counts = {3 * 3 * 16 * 32, 32, 0, 100000, 10, 4097, 1};
  // Reference: sum over ranks in rank order, in double, then / w.
  std::vector<std::vector<double>> expected(counts.size());
  for (size_t b = 0; b < counts.size(); ++b) {
    expected[b].assign(counts[b], 0.0);
    for (int q = 0; q < w; ++q) {
      const auto g = make_grad(q, b, counts[b]);
      for (size_t i = 0; i < counts[b]; ++i) expected[b][i] += g[i];
    }
    for (double& v : expected[b]) v /= w;
  }
  std::vector<float> first_result;
  for (size_t bucket_bytes : std::vector<size_t>{64, 4096, 100 * 1024, fastnn::kDefaultBucketBytes}) {
    std::vector<std::vector<float>> grads(counts.size());
    std::vector<fastnn::GradBuffer> refs;
    for (size_t b = 0; b < counts.size(); ++b) {
      grads[b] = make_grad(r, b, counts[b]);
      refs.push_back({"param" + std::to_string(b), grads[b].data(), counts[b]});
    }
    fastnn::BucketedAllreduce reducer(c, refs, bucket_bytes);
    reducer.average();
    std::vector<float> flat;
    double max_err = 0.0;
    for (size_t b = 0; b < counts.size(); ++b)
      for (size_t i = 0; i < counts[b]; ++i) {
        flat.push_back(grads[b][i]);
        max_err = std::max(max_err, std::fabs(grads[b][i] - expected[b][i]));
      }
    // Inputs in [-1, 1]: the float sum of w terms is within w ulps of 1.0 of the exact one.
    EXPECT(max_err <= 1e-6 * w, "bucket_bytes=", bucket_bytes, " max error vs local average ", max_err);
    // Every rank holds bitwise the same result.
    std::vector<float> all(flat.size() * static_cast<size_t>(w));
    c.allgather(std::span<const float>(flat), std::span<float>(all));
    for (int q = 0; q < w; ++q)
      EXPECT(std::memcmp(all.data() + q * flat.size(), flat.data(), flat.size() * sizeof(float)) == 0,
             "bucket_bytes=", bucket_bytes, ": rank ", q, " result differs from rank ", r);
    // With two ranks a + b is exact whatever the MPI algorithm: bucket size cannot change a bit.
    if (first_result.empty()) first_result = flat;
    else if (w == 2)
      EXPECT(std::memcmp(first_result.data(), flat.data(), flat.size() * sizeof(float)) == 0,
             "bucket_bytes=", bucket_bytes, " differs bitwise from bucket_bytes=64");
    if (r == 0)
      std::printf("bucket_bytes=%zu buckets=%zu max_err=%.3g\n", bucket_bytes, reducer.buckets().size(), max_err);
  }
}

void run_kill(Communicator& c) {
  std::vector<float> x(16, 1.0f);
  c.allreduce_sum(std::span<float>(x));  // everyone alive: succeeds
  EXPECT(x[0] == static_cast<float>(c.world_size()), "first allreduce ", x[0]);
  if (c.rank() == 1) {
    std::fprintf(stderr, "rank 1: killing myself before the second allreduce\n");
    std::fflush(stderr);
    raise(SIGKILL);
  }
  c.allreduce_sum(std::span<float>(x));  // must never complete on the survivors
  std::fprintf(stderr, "rank %d: FAIL second allreduce completed without rank 1\n", c.rank());
  ++g_failures;
}

void run_stall(Communicator& c) {
  std::vector<float> x(4096, 1.0f);
  c.allreduce_sum(std::span<float>(x));
  if (c.rank() == 1) {
    std::fprintf(stderr, "rank 1: stalling instead of joining the second allreduce\n");
    std::fflush(stderr);
    sleep(600);
  }
  c.allreduce_sum(std::span<float>(x));
  std::fprintf(stderr, "rank %d: FAIL second allreduce completed without rank 1\n", c.rank());
  ++g_failures;
}

}  // namespace

// The sharded head of ckpt_save/ckpt_read: element (row, col) of array k, exact in float.
constexpr int64_t kHeadRows = 11, kHeadCols = 3;
float head_value(int k, int64_t row, int64_t col) { return static_cast<float>(k == 0 ? row * 1000 + col : -(row * 7 + col)) + 0.5f; }

void run_ckpt_save(Communicator& c, const std::string& dir) {
  const fastnn::checkpoint::RowRange rr = fastnn::checkpoint::row_range(kHeadRows, c.rank(), c.world_size());
  std::vector<std::vector<float>> rows(2);
  for (int k = 0; k < 2; ++k)
    for (int64_t r = rr.begin; r < rr.end; ++r)
      for (int64_t j = 0; j < kHeadCols; ++j) rows[static_cast<size_t>(k)].push_back(head_value(k, r, j));
  const std::vector<fastnn::checkpoint::RowShardSlice> slices = {
      {"head/weights", {kHeadRows, kHeadCols}, rr.begin, rr.end, rows[0].data(), rows[0].size(), false},
      {"head/weights/momentum", {kHeadRows, kHeadCols}, rr.begin, rr.end, rows[1].data(), rows[1].size(), true}};
  const std::vector<float> backbone = {1.5f, -2.5f};
  const std::vector<fastnn::checkpoint::ArrayView> weights = {fastnn::checkpoint::f32_view("backbone/w", {2}, backbone.data(), 2)};
  std::unique_ptr<fastnn::checkpoint::CheckpointManager> chief;
  if (c.rank() == 0) chief = std::make_unique<fastnn::checkpoint::CheckpointManager>(dir);
  const auto info = fastnn::checkpoint::save_sharded_checkpoint(c, chief.get(), dir, 10, slices, weights, {},
                                                          fastnn::CheckpointMeta());
  EXPECT(info.step == 10, "step ", info.step);
}

void run_ckpt_read(Communicator& c, const std::string& dir) {
  const auto ck = fastnn::checkpoint::load_checkpoint(dir, {.verify_shards = false});
  EXPECT(ck.meta.step() == 10, "step ", ck.meta.step());
  fastnn::checkpoint::RowShardReader reader(ck);
  const fastnn::checkpoint::RowRange rr = fastnn::checkpoint::row_range(kHeadRows, c.rank(), c.world_size());
  const char* names[] = {"head/weights", "head/weights/momentum"};
  for (int k = 0; k < 2; ++k) {
    const std::vector<float> got = reader.read_rows(names[k], rr.begin, rr.end);
    for (int64_t r = rr.begin; r < rr.end; ++r)
      for (int64_t j = 0; j < kHeadCols; ++j) {
        const float want = head_value(k, r, j), have = got[static_cast<size_t>((r - rr.begin) * kHeadCols + j)];
        EXPECT(std::memcmp(&want, &have, sizeof want) == 0, names[k], " row ", r, " col ", j, ": ", have, " != ", want);
      }
  }
  std::printf("rank %d: read rows %lld..%lld of %d saved shard files\n", c.rank(), static_cast<long long>(rr.begin),
              static_cast<long long>(rr.end), ck.meta.shard_files_size());
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s collectives|bucket|kill|stall|mismatch|shards|consistent [timeout_s] | ckpt_save|ckpt_read timeout_s DIR\n", argv[0]);
    return 2;
  }
  const std::string mode = argv[1];
  fastnn::CommOptions options;
  options.backend = "mpi";
  options.collective_timeout_seconds = argc > 2 ? std::stod(argv[2]) : 20.0;
  int rc = 0;
  try {
    auto comm = fastnn::make_communicator(options);
    g_rank = comm->rank();
    if (mode == "collectives") run_collectives(*comm);
    else if (mode == "bucket") run_bucket(*comm);
    else if (mode == "kill") run_kill(*comm);
    else if (mode == "stall") run_stall(*comm);
    else if (mode == "mismatch") fastnn::check_world_consistency(*comm, 100 - comm->rank(), 4);
    else if (mode == "shards") fastnn::check_world_consistency(*comm, 50, 3);
    else if (mode == "consistent") fastnn::check_world_consistency(*comm, 50, 4);
    else if (mode == "ckpt_save" && argc > 3) run_ckpt_save(*comm, argv[3]);
    else if (mode == "ckpt_read" && argc > 3) run_ckpt_read(*comm, argv[3]);
    else {
      std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
      return 2;
    }
    if (g_failures == 0) std::printf("rank %d: OK %s\n", g_rank, mode.c_str());
    rc = g_failures == 0 ? 0 : 1;
  } catch (const fastnn::ConfigError& e) {
    std::fprintf(stderr, "rank %d: refused: %s\n", g_rank, e.what());
    rc = 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: FAIL exception: %s\n", g_rank, e.what());
    rc = 1;
  }
  std::fflush(stdout);
  return rc;
}
