#include "trainer/comm/thread_communicator.h"

#include <barrier>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/check.h"

namespace fastnn {
namespace {

// What every rank posts before a rendezvous.
struct Slot {
  const void* in = nullptr;
  void* out = nullptr;
};

struct World {
  explicit World(int n) : size(n), arrive(n), slots(static_cast<size_t>(n)) {}
  int size;
  std::barrier<> arrive;
  std::vector<Slot> slots;
};

template <typename T>
void reduce_into(std::vector<T>& acc, const World& w, size_t offset, size_t count, bool max) {
  acc.assign(static_cast<const T*>(w.slots[0].in) + offset, static_cast<const T*>(w.slots[0].in) + offset + count);
  for (int r = 1; r < w.size; ++r) {
    const T* x = static_cast<const T*>(w.slots[static_cast<size_t>(r)].in) + offset;
    for (size_t i = 0; i < count; ++i) acc[i] = max ? (x[i] > acc[i] ? x[i] : acc[i]) : acc[i] + x[i];
  }
}

class ThreadCommunicator final : public Communicator {
 public:
  ThreadCommunicator(std::shared_ptr<World> world, int rank) : world_(std::move(world)), rank_(rank) {}
  int rank() const override { return rank_; }
  int world_size() const override { return world_->size; }
  int local_rank() const override { return rank_; }
  int local_size() const override { return world_->size; }
  std::string name() const override { return "thread"; }
  void barrier() override { world_->arrive.arrive_and_wait(); }

 protected:
  void allreduce_sum_impl(void* data, size_t count, CommDType type) override { reduce(data, data, 0, count, type, false); }
  void allreduce_max_impl(void* data, size_t count, CommDType type) override { reduce(data, data, 0, count, type, true); }
  void reduce_scatter_impl(const void* send, void* recv, size_t recv_count, CommDType type) override {
    reduce(send, recv, static_cast<size_t>(rank_) * recv_count, recv_count, type, false);
  }
  void broadcast_impl(void* data, size_t count, CommDType type, int root) override {
    post(data, data);
    if (rank_ != root) std::memcpy(data, world_->slots[static_cast<size_t>(root)].in, count * comm_dtype_size(type));
    barrier();
  }
  void allgather_impl(const void* send, size_t count, void* recv, CommDType type) override {
    post(send, recv);
    const size_t bytes = count * comm_dtype_size(type);
    for (int r = 0; r < world_->size; ++r)
      std::memcpy(static_cast<unsigned char*>(recv) + static_cast<size_t>(r) * bytes,
                  world_->slots[static_cast<size_t>(r)].in, bytes);
    barrier();
  }

 private:
  void post(const void* in, void* out) {
    world_->slots[static_cast<size_t>(rank_)] = {in, out};
    barrier();
  }
  // Reads [offset, offset + count) of every rank's input, then (after everyone has read) writes the
  // result to `out`: in-place collectives must not change a buffer another rank still reads.
  void reduce(const void* in, void* out, size_t offset, size_t count, CommDType type, bool max) {
    FASTNN_CHECK(type != CommDType::kByte, "reduction on bytes is not defined");
    post(in, out);
    std::vector<unsigned char> result(count * comm_dtype_size(type));
    switch (type) {
      case CommDType::kFloat32: copy_reduced<float>(result, offset, count, max); break;
      case CommDType::kFloat64: copy_reduced<double>(result, offset, count, max); break;
      case CommDType::kInt64: copy_reduced<int64_t>(result, offset, count, max); break;
      case CommDType::kByte: break;
    }
    barrier();
    std::memcpy(out, result.data(), result.size());
  }
  template <typename T>
  void copy_reduced(std::vector<unsigned char>& result, size_t offset, size_t count, bool max) {
    std::vector<T> acc;
    reduce_into(acc, *world_, offset, count, max);
    std::memcpy(result.data(), acc.data(), count * sizeof(T));
  }

  std::shared_ptr<World> world_;
  int rank_;
};

}  // namespace

std::vector<std::unique_ptr<Communicator>> make_thread_world(int world_size) {
  FASTNN_CHECK(world_size >= 1, "a world needs at least one rank, got ", world_size);
  auto world = std::make_shared<World>(world_size);
  std::vector<std::unique_ptr<Communicator>> ranks;
  for (int r = 0; r < world_size; ++r) ranks.push_back(std::make_unique<ThreadCommunicator>(world, r));
  return ranks;
}

}  // namespace fastnn
