// Clock: the one way the core reads time, so that tests and the simulator can
// substitute their own. Used to measure the scheduler's own decision time
// (wall-clock) and, in the daemon, real time.
//
// Thread-safety: implementations must be safe to call from several threads.
#ifndef MIGSCHED_CORE_CLOCK_H_
#define MIGSCHED_CORE_CLOCK_H_

#include <cstdint>

namespace migsched {

class Clock {
 public:
  virtual ~Clock() = default;
  // Nanoseconds since an arbitrary fixed point; only differences matter.
  virtual int64_t NowNanos() const = 0;
};

// std::chrono::steady_clock. Never null; lives forever.
Clock* SteadyClock();

// A clock that only moves when told to (tests).
class ManualClock : public Clock {
 public:
  int64_t NowNanos() const override { return now_; }
  void Advance(int64_t nanos) { now_ += nanos; }

 private:
  int64_t now_ = 0;
};

}  // namespace migsched

#endif  // MIGSCHED_CORE_CLOCK_H_
