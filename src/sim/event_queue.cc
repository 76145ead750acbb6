#include "sim/event_queue.h"

namespace migsched {

void EventQueue::Push(double time_s, EventKind kind, JobId job, uint32_t generation) {
  heap_.push(Event{time_s, next_seq_++, kind, job, generation});
}

}  // namespace migsched
