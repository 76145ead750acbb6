#include "daemon/store_writer.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <utility>

namespace migsched {
namespace {

constexpr size_t kMaxBatch = 512;  // units per transaction
constexpr double kFirstBackoffS = 0.05;
constexpr double kMaxBackoffS = 5.0;

}  // namespace

StoreWriter::StoreWriter(JobStore* store) : store_(store) {}

StoreWriter::~StoreWriter() { Stop(); }

void StoreWriter::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] { Run(); });
}

void StoreWriter::Stop(double flush_timeout_s) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!thread_.joinable()) return;
    stopping_ = true;
    flush_timeout_s_ = flush_timeout_s;
  }
  cv_.notify_all();
  thread_.join();
  // What the thread could not write in time.
  std::deque<Unit> left;
  {
    std::lock_guard<std::mutex> lock(mu_);
    left.swap(queue_);
  }
  if (!left.empty()) {
    spdlog::error("job store: {} write(s) could not be committed before the daemon stopped ({})",
                  left.size(), health().message());
  }
  for (Unit& u : left) {
    if (u.done) u.done(UnavailableError("the daemon stopped before the write was committed"));
  }
}

void StoreWriter::Write(std::vector<StoreOp> ops, bool retry, Callback done) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(Unit{std::move(ops), retry, std::move(done)});
  }
  cv_.notify_one();
}

Status StoreWriter::WriteAndWait(std::vector<StoreOp> ops) {
  auto promise = std::make_shared<std::promise<Status>>();
  std::future<Status> result = promise->get_future();
  Write(std::move(ops), /*retry=*/false, [promise](const Status& st) { promise->set_value(st); });
  return result.get();
}

Status StoreWriter::health() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!damaged_.ok()) return damaged_;
  return health_;
}

void StoreWriter::NoteDamage() {
  Status damage = store_->damage();
  if (damage.ok()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!damaged_.ok()) return;
  damaged_ = UnavailableError(fmt::format(
      "the job store is damaged ({}); changes are refused; stop the daemon and restore the "
      "database from a backup or repair it (docs/daemon.md: durability)",
      damage.message()));
  spdlog::error("job store: {}", damaged_.message());
}

size_t StoreWriter::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size() + in_flight_;
}

int64_t StoreWriter::commits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return commits_;
}

void StoreWriter::SetFailureForTesting(Status failure) {
  std::lock_guard<std::mutex> lock(mu_);
  failure_for_testing_ = std::move(failure);
}

Status StoreWriter::TryCommit(const std::vector<Unit>& units) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!failure_for_testing_.ok()) return failure_for_testing_;
  }
  std::vector<StoreOp> ops;
  for (const Unit& u : units) ops.insert(ops.end(), u.ops.begin(), u.ops.end());
  return store_->Commit(ops);
}

std::vector<StoreWriter::Unit> StoreWriter::CommitBatch(std::vector<Unit> batch) {
  Status st = TryCommit(batch);
  if (!st.ok()) NoteDamage();
  std::vector<Unit> again;
  if (st.ok()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++commits_;
    }
    for (Unit& u : batch) {
      if (u.done) u.done(Status());
    }
    return again;
  }
  if (st.code() != StatusCode::kUnavailable && batch.size() > 1) {
    // Not the disk: find the unit at fault by committing them one by one.
    for (Unit& u : batch) {
      std::vector<Unit> one;
      one.push_back(std::move(u));
      std::vector<Unit> left = CommitBatch(std::move(one));
      for (Unit& l : left) again.push_back(std::move(l));
    }
    return again;
  }
  for (Unit& u : batch) {
    if (u.retry && st.code() == StatusCode::kUnavailable) {
      again.push_back(std::move(u));
      continue;
    }
    if (u.retry) {
      spdlog::error("job store: a write was dropped: {}", st.message());
    }
    if (u.done) u.done(st);
  }
  if (!again.empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    if (health_.ok()) {
      spdlog::error("job store: cannot write ({}); new submissions are refused until it can",
                    st.message());
    }
    health_ = st;
  }
  return again;
}

void StoreWriter::Run() {
  std::vector<Unit> retry;  // units that failed and wait for the back-off
  double backoff = kFirstBackoffS;
  std::unique_lock<std::mutex> lock(mu_);
  const auto stop_deadline = [this] {
    return std::chrono::steady_clock::now() +
           std::chrono::duration_cast<std::chrono::steady_clock::duration>(
               std::chrono::duration<double>(flush_timeout_s_));
  };
  std::chrono::steady_clock::time_point deadline{};
  while (true) {
    if (retry.empty()) {
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_ && queue_.empty()) break;
    } else {
      // Wait out the back-off (a stop shortens it to the flush deadline).
      cv_.wait_for(lock, std::chrono::duration<double>(backoff), [this] { return stopping_; });
      if (stopping_) {
        if (deadline == std::chrono::steady_clock::time_point{}) deadline = stop_deadline();
        if (std::chrono::steady_clock::now() >= deadline) {
          for (auto it = retry.rbegin(); it != retry.rend(); ++it) {
            queue_.push_front(std::move(*it));
          }
          break;
        }
      }
    }
    // Retried units first (their order is older), then new ones.
    std::vector<Unit> batch = std::move(retry);
    retry.clear();
    while (!queue_.empty() && batch.size() < kMaxBatch) {
      batch.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    in_flight_ = batch.size();
    lock.unlock();
    std::vector<Unit> left = CommitBatch(std::move(batch));
    lock.lock();
    in_flight_ = left.size();
    if (left.empty()) {
      if (!health_.ok()) spdlog::info("job store: writable again; pending writes caught up");
      health_ = Status();
      backoff = kFirstBackoffS;
    } else {
      backoff = std::min(kMaxBackoffS, backoff * 2);
    }
    retry = std::move(left);
  }
  in_flight_ = 0;
}

}  // namespace migsched
