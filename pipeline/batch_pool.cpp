#include "pipeline/batch_pool.h"

namespace fastnn::pipeline {

BatchPool::~BatchPool() {
  for (auto& e : entries)
    if (e->data_ != nullptr) allocator->deallocate(e->data_, spec.sample_bytes() * batch_size);
}

PoolEntry* BatchPool::acquire() {
  std::unique_lock lock(mu);
  for (;;) {
    if (stopped) return nullptr;
    if (!free_list.empty()) {
      PoolEntry* e = free_list.back();
      free_list.pop_back();
      return e;
    }
    if (entries.size() < capacity) break;
    cv.wait(lock);
  }
  auto e = std::make_unique<PoolEntry>();
  e->spec_ = spec;
  e->capacity_ = batch_size;
  e->labels_.resize(batch_size);
  e->sources_.resize(batch_size);
  e->records.resize(batch_size);
  e->skipped.resize(batch_size);
  e->errors.resize(batch_size);
  e->data_ = allocator->allocate(spec.sample_bytes() * batch_size);
  ++allocated;
  entries.push_back(std::move(e));
  return entries.back().get();
}

void BatchPool::release(PoolEntry* e, bool from_handle) {
  std::lock_guard lock(mu);
  e->error = nullptr;
  free_list.push_back(e);
  if (from_handle) --held;
  cv.notify_all();
}

void BatchPool::stop() {
  std::lock_guard lock(mu);
  stopped = true;
  cv.notify_all();
}

BatchHandle& BatchHandle::operator=(BatchHandle&& o) noexcept {
  if (this != &o) {
    reset();
    pool_ = std::move(o.pool_);
    batch_ = o.batch_;
    o.batch_ = nullptr;
  }
  return *this;
}

void BatchHandle::reset() {
  if (batch_ != nullptr) pool_->release(static_cast<PoolEntry*>(batch_), true);
  batch_ = nullptr;
  pool_.reset();
}

}  // namespace fastnn::pipeline
