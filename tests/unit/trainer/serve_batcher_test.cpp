// serve::Batcher: micro-batches in queue order, never above max_batch, a bounded all-or-none queue,
// a failing batch failing only its items, stop() draining what was queued and cancel() failing it at once.
#include <chrono>
#include <future>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "core/check.h"
#include "trainer/serve/batcher.h"

namespace fastnn::serve {
namespace {

using inference::InputItem;

std::vector<InputItem> items(int n, int first) {
  std::vector<InputItem> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)].path = std::to_string(first + i);
  return v;
}

// Records every batch; the first batch blocks until open() so the test can fill the queue behind it.
struct GatedModel {
  std::mutex mu;
  std::vector<std::vector<std::string>> batches;
  std::promise<void> first_started, gate;
  std::shared_future<void> gate_future = gate.get_future().share();
  bool first = true;

  Batcher::Process process() {
    return [this](std::span<const InputItem* const> in, std::span<Outcome* const> out) {
      bool wait = false;
      {
        std::lock_guard lock(mu);
        batches.emplace_back();
        for (const InputItem* it : in) batches.back().push_back(it->path);
        if (first) {
          first = false;
          wait = true;
        }
      }
      if (wait) {
        first_started.set_value();
        gate_future.wait();
      }
      for (size_t i = 0; i < in.size(); ++i) out[i]->prediction.path = "done " + in[i]->path;
    };
  }
};

TEST(Batcher, BatchesInQueueOrderUpToMaxBatch) {
  GatedModel m;
  Batcher b({.max_batch = 4, .max_delay = std::chrono::microseconds(0), .queue_capacity = 64}, m.process());
  auto first = b.submit(items(1, 0));
  ASSERT_TRUE(first);
  m.first_started.get_future().wait();  // the worker holds batch [0]; everything below queues behind it
  std::vector<std::shared_ptr<Ticket>> t;
  for (int i = 1; i <= 6; ++i) t.push_back(b.submit(items(1, i)));
  EXPECT_EQ(b.queued(), 6u);
  m.gate.set_value();
  for (auto& x : t) {
    ASSERT_TRUE(x);
    const auto& o = x->wait();
    ASSERT_EQ(o.size(), 1u);
    EXPECT_TRUE(o[0].done);
    EXPECT_TRUE(o[0].error.empty());
  }
  EXPECT_EQ(t[5]->wait()[0].prediction.path, "done 6");
  b.stop();
  const std::vector<std::vector<std::string>> want = {{"0"}, {"1", "2", "3", "4"}, {"5", "6"}};
  EXPECT_EQ(m.batches, want);
  const BatchStats s = b.stats();
  EXPECT_EQ(s.batches, 3);
  EXPECT_EQ(s.items, 7);
  EXPECT_EQ(s.largest, 4);
}

TEST(Batcher, ARequestSpansBatchesAndKeepsItsOrder) {
  GatedModel m;
  m.first = false;
  Batcher b({.max_batch = 3, .max_delay = std::chrono::microseconds(0), .queue_capacity = 64}, m.process());
  auto t = b.submit(items(8, 0));
  ASSERT_TRUE(t);
  const auto& o = t->wait();
  ASSERT_EQ(o.size(), 8u);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(o[static_cast<size_t>(i)].prediction.path, "done " + std::to_string(i));
  b.stop();
  for (const auto& batch : m.batches) EXPECT_LE(batch.size(), 3u);
}

TEST(Batcher, AFullBatchDoesNotWaitForTheDelay) {
  GatedModel m;
  m.first = false;
  // With a 60 s delay, only a full batch (2 items) lets the worker go before the test's timeout.
  Batcher b({.max_batch = 2, .max_delay = std::chrono::seconds(60), .queue_capacity = 8}, m.process());
  const auto t0 = std::chrono::steady_clock::now();
  auto t = b.submit(items(2, 0));
  ASSERT_TRUE(t);
  t->wait();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
  b.stop();
  ASSERT_EQ(m.batches.size(), 1u);
  EXPECT_EQ(m.batches[0].size(), 2u);
}

TEST(Batcher, StopDoesNotWaitForTheDelay) {
  GatedModel m;
  m.first = false;
  Batcher b({.max_batch = 8, .max_delay = std::chrono::seconds(60), .queue_capacity = 8}, m.process());
  auto t = b.submit(items(1, 0));
  ASSERT_TRUE(t);
  const auto t0 = std::chrono::steady_clock::now();
  b.stop();  // drains the one item now instead of waiting 60 s for company
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
  EXPECT_EQ(t->wait()[0].prediction.path, "done 0");
}

TEST(Batcher, BoundedQueueIsAllOrNone) {
  GatedModel m;
  Batcher b({.max_batch = 4, .max_delay = std::chrono::microseconds(0), .queue_capacity = 3}, m.process());
  auto first = b.submit(items(1, 0));
  m.first_started.get_future().wait();
  auto a = b.submit(items(2, 1));
  ASSERT_TRUE(a);
  EXPECT_FALSE(b.submit(items(2, 3)));  // 2 + 2 > 3: none of it is queued
  EXPECT_EQ(b.queued(), 2u);
  auto c = b.submit(items(1, 3));
  ASSERT_TRUE(c);
  EXPECT_FALSE(b.submit(items(1, 4)));
  m.gate.set_value();
  EXPECT_EQ(c->wait()[0].prediction.path, "done 3");
  EXPECT_TRUE(b.submit(items(3, 5)));  // room again once drained
  b.stop();
  EXPECT_FALSE(b.submit(items(1, 9)));  // stopped
  EXPECT_TRUE(b.submit({}));            // nothing to do: a done ticket
}

TEST(Batcher, StopDrainsQueuedWork) {
  GatedModel m;
  Batcher b({.max_batch = 2, .max_delay = std::chrono::microseconds(0), .queue_capacity = 16}, m.process());
  auto first = b.submit(items(1, 0));
  m.first_started.get_future().wait();
  auto rest = b.submit(items(5, 1));
  ASSERT_TRUE(rest);
  std::thread stopper([&] { b.stop(); });
  // stop() must not return while work is queued; it returns once the gate opens and the queue drains.
  m.gate.set_value();
  stopper.join();
  const auto& o = rest->wait();
  for (size_t i = 0; i < o.size(); ++i) {
    EXPECT_TRUE(o[i].done);
    EXPECT_EQ(o[i].prediction.path, "done " + std::to_string(i + 1));
  }
  EXPECT_EQ(b.stats().items, 6);
}

TEST(Batcher, CancelFailsTheQueuedItemsAtOnce) {
  GatedModel m;
  Batcher b({.max_batch = 2, .max_delay = std::chrono::microseconds(0), .queue_capacity = 16}, m.process());
  auto running = b.submit(items(1, 0));
  m.first_started.get_future().wait();  // batch [0] is in the model
  auto queued = b.submit(items(3, 1));
  ASSERT_TRUE(queued);
  // cancel() does not wait for the model: the queued items fail while batch [0] still runs.
  b.cancel("the server is stopping");
  const auto& oq = queued->wait();
  for (const Outcome& o : oq) {
    EXPECT_TRUE(o.done);
    EXPECT_TRUE(o.cancelled);
    EXPECT_FALSE(o.failed);
    EXPECT_EQ(o.error, "the server is stopping");
  }
  EXPECT_FALSE(b.submit(items(1, 9)));  // no new work after a cancel
  m.gate.set_value();
  const auto& orun = running->wait();  // the running batch finishes normally
  EXPECT_FALSE(orun[0].cancelled);
  EXPECT_EQ(orun[0].prediction.path, "done 0");
  b.stop();
  EXPECT_EQ(b.stats().items, 1);
}

TEST(Batcher, AThrowingBatchFailsOnlyItsItems) {
  int calls = 0;
  Batcher b({.max_batch = 1, .max_delay = std::chrono::microseconds(0), .queue_capacity = 8},
            [&calls](std::span<const InputItem* const> in, std::span<Outcome* const> out) {
              if (calls++ == 0) throw Error("device lost");
              out[0]->prediction.path = in[0]->path;
            });
  auto a = b.submit(items(1, 0));
  const auto& oa = a->wait();
  EXPECT_TRUE(oa[0].failed);
  EXPECT_EQ(oa[0].error, "device lost");
  auto c = b.submit(items(1, 1));
  const auto& oc = c->wait();
  EXPECT_FALSE(oc[0].failed);
  EXPECT_TRUE(oc[0].error.empty());
  EXPECT_EQ(oc[0].prediction.path, "1");
}

TEST(Batcher, RejectsBadOptions) {
  auto nop = [](std::span<const InputItem* const>, std::span<Outcome* const>) {};
  EXPECT_THROW(Batcher({.max_batch = 0}, nop), Error);
  EXPECT_THROW(Batcher({.queue_capacity = 0}, nop), Error);
}

}  // namespace
}  // namespace fastnn::serve
