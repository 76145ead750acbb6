#include "core/clock.h"

#include <chrono>

namespace migsched {
namespace {

class SteadyClockImpl : public Clock {
 public:
  int64_t NowNanos() const override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  int64_t UnixNanos() const override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

}  // namespace

Clock* SteadyClock() {
  static SteadyClockImpl* clock = new SteadyClockImpl();
  return clock;
}

}  // namespace migsched
