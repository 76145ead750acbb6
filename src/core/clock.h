// Clock: the one way the core reads time, so that tests and the simulator can
// substitute their own. Used to measure the scheduler's own decision time
// (wall-clock) and, in the daemon, real time: intervals (timeouts, back-off,
// the scheduler's clock) from NowNanos, timestamps (records, expiries that
// must survive a restart) from UnixNanos.
//
// Thread-safety: implementations must be safe to call from several threads.
#ifndef MIGSCHED_CORE_CLOCK_H_
#define MIGSCHED_CORE_CLOCK_H_

#include <atomic>
#include <cstdint>

namespace migsched {

class Clock {
 public:
  virtual ~Clock() = default;
  // Nanoseconds since an arbitrary fixed point (monotonic); only differences matter.
  virtual int64_t NowNanos() const = 0;
  // Nanoseconds since the Unix epoch (the wall clock; may jump).
  virtual int64_t UnixNanos() const = 0;
  // UnixNanos in seconds.
  double UnixSeconds() const { return static_cast<double>(UnixNanos()) / 1e9; }
};

// std::chrono::steady_clock and system_clock. Never null; lives forever.
Clock* SteadyClock();

// A clock that only moves when told to (tests). Both readings start at the
// given points and advance together. Thread-safe.
class ManualClock : public Clock {
 public:
  explicit ManualClock(int64_t unix_start_nanos = 0) : unix_start_(unix_start_nanos) {}
  int64_t NowNanos() const override { return now_.load(); }
  int64_t UnixNanos() const override { return unix_start_ + now_.load(); }
  void Advance(int64_t nanos) { now_ += nanos; }

 private:
  std::atomic<int64_t> now_{0};
  int64_t unix_start_;
};

}  // namespace migsched

#endif  // MIGSCHED_CORE_CLOCK_H_
