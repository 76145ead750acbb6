// StoreWriter: the one thread that writes the daemon's job store. It groups
// the writes of concurrent callers into one transaction (group commit: one
// fsync for every submission that arrived while the previous commit ran), so
// that "a job is acknowledged only after its record is durable" costs one
// disk sync per batch rather than per job.
//
// A unit of work is a list of StoreOps committed together, with a callback
// told the outcome. Units commit in the order they were queued. Two kinds:
//   * fail-fast units (a submission, a reservation, an allocation: the caller
//     waits and answers its client): if their batch fails they are dropped
//     and their callback gets the error, so the client hears 503 and nothing
//     is kept;
//   * retried units (a state change the daemon has already made in memory: a
//     job started, ended, a drain): kept and retried with back-off (50 ms
//     doubling to 5 s) until they commit; meanwhile the writer is *degraded*
//     (health() says why) and the daemon refuses new submissions.
// A store that SQLite reports damaged (JobStore::damage) keeps the writer
// degraded for good: health() says so (logged once) until a restart.
// A batch that fails with a non-transient error (kInternal: a bug, a corrupt
// database) is retried unit by unit so that one bad unit cannot block the
// others; a unit that still fails alone that way is dropped and logged.
//
// The back-off waits are real time (a condition variable's), not the
// daemon's Clock: they pace disk retries, no decision depends on them.
//
// Callbacks run on the writer thread, in queue order, with no lock of the
// writer held: they may take the daemon's state lock (lock order: state lock,
// then the writer's queue lock inside Write; never the reverse).
//
// Thread-safety: Write, health, degraded and pending are thread-safe; Start
// and Stop from the owner's thread.
#ifndef MIGSCHED_DAEMON_STORE_WRITER_H_
#define MIGSCHED_DAEMON_STORE_WRITER_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "core/status.h"
#include "daemon/job_store.h"

namespace migsched {

class StoreWriter {
 public:
  using Callback = std::function<void(const Status&)>;

  // `store` must outlive the writer.
  explicit StoreWriter(JobStore* store);
  ~StoreWriter();  // Stop()s
  StoreWriter(const StoreWriter&) = delete;
  StoreWriter& operator=(const StoreWriter&) = delete;

  void Start();
  // Commits what is queued (one attempt for fail-fast units, up to
  // `flush_timeout_s` of retries for the others), then ends the thread.
  // Units left are reported in the log (their changes are lost: the next
  // start recovers from the store as it is).
  void Stop(double flush_timeout_s = 5);

  // Queues `ops` as one unit; `done` (may be empty) is called once with the
  // outcome. Never blocks on the disk (only on the queue lock).
  void Write(std::vector<StoreOp> ops, bool retry, Callback done = nullptr);
  // Write(ops, /*retry=*/false) and wait for the commit: its status.
  // REQUIRES: not called from a callback (the writer thread).
  Status WriteAndWait(std::vector<StoreOp> ops);

  // OK, or the error of the last failed write while a retried unit is still
  // pending (the store cannot be written: disk full, database locked, ...).
  Status health() const;
  bool degraded() const { return !health().ok(); }
  // Units queued or being committed.
  size_t pending() const;
  // Batches committed so far (for tests and the load benchmark).
  int64_t commits() const;

  // Test hook: while set, every commit attempt fails with this status before
  // it reaches SQLite (as a full disk would). Thread-safe.
  void SetFailureForTesting(Status failure);

 private:
  struct Unit {
    std::vector<StoreOp> ops;
    bool retry = false;
    Callback done;
  };
  void Run();
  // Commits `batch`; returns the units that must be tried again.
  std::vector<Unit> CommitBatch(std::vector<Unit> batch);
  Status TryCommit(const std::vector<Unit>& units);
  void NoteDamage();  // after a failed commit: the store's damage, once

  JobStore* store_;
  mutable std::mutex mu_;  // guards everything below
  std::condition_variable cv_;
  std::deque<Unit> queue_;
  size_t in_flight_ = 0;  // units taken from queue_ and not yet reported
  Status health_;
  Status damaged_;  // set once the store is damaged; never cleared
  Status failure_for_testing_;
  bool stopping_ = false;
  double flush_timeout_s_ = 5;
  int64_t commits_ = 0;
  std::thread thread_;
};

}  // namespace migsched

#endif  // MIGSCHED_DAEMON_STORE_WRITER_H_
