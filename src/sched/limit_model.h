// How much a job's time limit says about its run time, learned from the jobs that ended
// (docs/algorithms.md §5, "Limits weighed by what they predict"; ours).
//
// The response-ratio order (§5) needs each waiting job's expected run time. A real scheduler
// knows only the user's limit, which users overestimate by a factor that varies from job to job.
// Where those factors vary more than the run times themselves, the limit says little, and
// ordering by it only makes long-limit jobs wait (most of them no longer than the others).
// This model fits log(run time) = a + p * log(limit) by least squares over the last
// kLimitModelWindow jobs that ended with a limit (their run time being end - start, as the
// scheduler saw them), and gives the slope p clamped to [0, 1]: the share of a limit's spread
// that is also spread of run times. The expected run time of a waiting job is then proportional
// to limit^p (the intercept a does not change the order). p = 1: the limit as given; p = 0: the
// limit says nothing, and the jobs of one request are ordered by wait alone (arrival order).
//
// Until kLimitModelMinJobs such jobs ended, or when their limits (logs) hardly vary
// (variance < 1e-6: the limit orders nothing then either), Power() is 1: the limit as given.
//
// Deterministic. Thread-safety: thread-compatible; owned by one Scheduler and used under its
// caller's lock (the daemon's kStateLock). The samples live in memory only: the daemon gives them
// back at a restart from the runs its store holds (Add, in the order they ended).

#ifndef MIGSCHED_SCHED_LIMIT_MODEL_H_
#define MIGSCHED_SCHED_LIMIT_MODEL_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <unordered_map>

namespace migsched {

inline constexpr size_t kLimitModelWindow = 500;
inline constexpr size_t kLimitModelMinJobs = 20;
// Run times below this count as this, seconds: in logs a run of a few ms would weigh as much as
// one of days, so one job that exits at once could swing the slope.
inline constexpr double kLimitModelMinRunS = 1;

class LimitModel {
 public:
  // Job `id` began running at `now_s` (seconds, the driver's clock). A second call for the same
  // id (a move's relaunch) keeps the first start: the run time counts from there.
  void Started(uint64_t id, double now_s);
  // Job `id` ended at `now_s`; `limit_s` is its time limit (<= 0 or not finite: none, not
  // counted). A job never Started here (adopted after a restart) is not counted either. A run
  // time below kLimitModelMinRunS counts as that.
  void Ended(uint64_t id, double limit_s, double now_s);
  // Forgets job `id`'s start, so that its end is not counted as a run (a driver that tells runs
  // itself, through Add).
  void Forget(uint64_t id) { started_.erase(id); }
  // One run that ended, told directly: `limit_s` its limit (<= 0 or not finite: not counted),
  // `run_s` end - first start (below kLimitModelMinRunS: that). Ended() calls it; the daemon calls
  // it for each run its records count, as it ends and at a restart (in the order they ended).
  void Add(double limit_s, double run_s);

  // The learned power p in [0, 1] (1 until enough jobs ended, see above).
  double Power() const { return power_; }
  // Jobs with a limit that ended and are in the window now.
  size_t samples() const { return samples_.size(); }

  // The least-squares slope of y on x over `samples`, clamped to [0, 1]; 1 when there are fewer
  // than kLimitModelMinJobs or the x hardly vary. Exposed for tests.
  struct Sample {
    double log_limit;
    double log_run;
  };
  static double FitPower(const std::deque<Sample>& samples);

 private:
  std::unordered_map<uint64_t, double> started_;
  std::deque<Sample> samples_;
  double power_ = 1;
};

}  // namespace migsched

#endif  // MIGSCHED_SCHED_LIMIT_MODEL_H_
