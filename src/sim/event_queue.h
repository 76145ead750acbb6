// EventQueue: the simulator's future events on its virtual clock, in time
// order, ties broken by insertion order (a sequence number), so that a run is
// deterministic whatever the heap does internally.
//
// Completion events are never removed when a job's progress rate changes;
// instead every event carries the job's *generation* at the time it was
// pushed, and the driver drops an event whose generation is stale.
//
// Cost: O(log n) per Push/Pop. Thread-safety: thread-compatible.
#ifndef MIGSCHED_SIM_EVENT_QUEUE_H_
#define MIGSCHED_SIM_EVENT_QUEUE_H_

#include <cstdint>
#include <queue>
#include <vector>

#include "core/job.h"

namespace migsched {

enum class EventKind {
  kStart,            // a placed job's reconfigurations are done: it starts running
  kCompletion,       // a running job's remaining work reaches 0 (if still current)
  kMigrationSwitch,  // §6: a move's copy is done (restart: its target exists): switch-over begins
  kMigrationEnd,     // §6: the switch-over pause is over: the job runs on the target
  kTick,             // §6: the periodic defragmentation pass (job = kNoJob)
  kTimer,            // §5 --max-wait of `job`, or idle-instance retention (job = kNoJob)
  kTimeLimit,        // a running job reaches its time limit (start + Job::time_limit_s)
};

struct Event {
  double time_s = 0;  // virtual seconds
  uint64_t seq = 0;   // insertion order (tie-break)
  EventKind kind = EventKind::kStart;
  JobId job = kNoJob;
  uint32_t generation = 0;  // the job's generation (kMigration*: its move's) when pushed
};

class EventQueue {
 public:
  void Push(double time_s, EventKind kind, JobId job, uint32_t generation);
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  // REQUIRES: !empty(). The earliest event (lowest time, then lowest seq).
  const Event& Top() const { return heap_.top(); }
  void Pop() { heap_.pop(); }

 private:
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      return a.time_s != b.time_s ? a.time_s > b.time_s : a.seq > b.seq;
    }
  };
  std::priority_queue<Event, std::vector<Event>, Later> heap_;
  uint64_t next_seq_ = 0;
};

}  // namespace migsched

#endif  // MIGSCHED_SIM_EVENT_QUEUE_H_
