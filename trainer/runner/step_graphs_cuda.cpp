#include "trainer/runner/step_graphs_cuda.h"

#include <exception>
#include <string>

#include "core/check.h"
#include "core/logging.h"

namespace fastnn::runner {

StepGraphs::Captured::~Captured() {
  if (exec) cudaGraphExecDestroy(exec);
}

void StepGraphs::note_batch(const Tensor& x, const Tensor& y) {
  std::pair<Shape, DType> batch{x.shape(), y.dtype()};
  if (batch == batch_) return;
  drop();
  batch_ = std::move(batch);
}

bool StepGraphs::replay(const Tensor& x, const Tensor& y, uint64_t step, float lr, int slot, const Record& record) {
  if (failed_) return false;
  note_batch(x, y);
  if (eager_steps_ < 2) return false;
  cudaStream_t s = cuda::current_stream();
  if (!args_.defined())
    args_ = Tensor::empty({static_cast<int64_t>(sizeof(cuda_step::StepArgs))}, DType::kU8, Device::kCuda);
  cuda_step::write_step_args(args(), step, lr, s);
  Captured* g = nullptr;
  for (const auto& c : graphs_)
    if (c->images == x.raw() && c->labels == y.raw() && c->slot == slot) g = c.get();
  if (!g) {
    // Device batches handed in from elsewhere (each at a new address) would capture without end.
    if (graphs_.size() >= kMaxGraphs) return false;
    if (!(g = capture(x, y, slot, record))) return false;
  }
  CUDA_CHECK(cudaGraphLaunch(g->exec, s));
  g->checks->requeue();  // its label checks are raised with this step's results
  ++replays_;
  return true;
}

StepGraphs::Captured* StepGraphs::capture(const Tensor& x, const Tensor& y, int slot, const Record& record) {
  cudaStream_t s = cuda::current_stream();
  auto checks = std::make_unique<cuda::LabelCheckCapture>();
  std::string failure;
  CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  try {
    record(args());
  } catch (const std::exception& e) {
    failure = e.what();
  }
  checks->stop();
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(s, &graph);
  if (failure.empty() && ended != cudaSuccess) failure = cudaGetErrorString(ended);
  cudaGraphExec_t exec = nullptr;
  if (failure.empty()) {
    const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
    if (made != cudaSuccess) failure = cudaGetErrorString(made);
  }
  if (graph) cudaGraphDestroy(graph);
  if (!failure.empty()) {
    cudaGetLastError();  // the failed capture's error is not the next call's
    failed_ = true;
    log_warn("cuda_graph: capturing the training step failed (", failure, "); training goes on with eager steps");
    return nullptr;
  }
  auto c = std::make_unique<Captured>();
  c->exec = exec;
  c->checks = std::move(checks);
  c->images = x.raw();
  c->labels = y.raw();
  c->slot = slot;
  graphs_.push_back(std::move(c));
  return graphs_.back().get();
}

void StepGraphs::drop() {
  eager_steps_ = 0;
  if (graphs_.empty()) return;
  CUDA_CHECK(cudaStreamSynchronize(cuda::current_stream()));  // no replay still running
  for (auto& c : graphs_) retired_checks_.push_back(std::move(c->checks));
  graphs_.clear();
}

void StepGraphs::release_retired() {
  cuda::forget_label_checks();
  retired_checks_.clear();
}

}  // namespace fastnn::runner
