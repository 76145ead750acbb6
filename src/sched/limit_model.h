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
// Run times learned per request (§5; ours): the same limit may mean minutes for one request and
// hours for another (a partition's default limit on every job: a 1g test and a full-GPU training
// job both ask for 8 h). RequestFactor(key) is how much longer than the jobs in the window a job
// of that request (RequestKeyOf: profile or fraction and rule, and count) runs for its limit:
// exp(m_key - m), m the mean of log(run / limit) over the window, m_key that mean over the last
// kRequestRunWindow runs of the request, shrunk toward m as if kRequestRunPrior runs at m were
// added ((sum + prior * m) / (n + prior)). 1 for a request with no run in the model, and for
// every request until kLimitModelMinJobs runs are in the window. The response-ratio order then
// counts a job's expected run time as limit x factor: only the factors' ratios between requests
// change the order (a factor common to all cancels), so where every request overestimates alike
// the order is the limits' own.
//
// Deterministic. Thread-safety: thread-compatible; owned by one Scheduler and used under its
// caller's lock (the daemon's kStateLock). The samples live in memory only: the daemon gives them
// back at a restart from the runs its store holds (Add, in the order they ended).

#ifndef MIGSCHED_SCHED_LIMIT_MODEL_H_
#define MIGSCHED_SCHED_LIMIT_MODEL_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <unordered_map>

#include "core/job.h"

namespace migsched {

inline constexpr size_t kLimitModelWindow = 500;
inline constexpr size_t kLimitModelMinJobs = 20;
// Run times below this count as this, seconds: in logs a run of a few ms would weigh as much as
// one of days, so one job that exits at once could swing the slope.
inline constexpr double kLimitModelMinRunS = 1;
// Run times learned per request: the runs of one request kept, and the weight of the window's
// mean in a request's own (in runs). Chosen with the feature on the tuning set (docs/results.md,
// "Run times learned per request"), not tuned.
inline constexpr size_t kRequestRunWindow = 50;
inline constexpr double kRequestRunPrior = 5;

class LimitModel {
 public:
  // Job `id` began running at `now_s` (seconds, the driver's clock). A second call for the same
  // id (a move's relaunch) keeps the first start: the run time counts from there.
  void Started(uint64_t id, double now_s);
  // Job `id` ended at `now_s`; `limit_s` is its time limit (<= 0 or not finite: none, not
  // counted); `key` its request. A job never Started here (adopted after a restart) is not
  // counted either. A run time below kLimitModelMinRunS counts as that.
  void Ended(uint64_t id, double limit_s, double now_s, const RequestKey& key);
  // Forgets job `id`'s start, so that its end is not counted as a run (a driver that tells runs
  // itself, through Add).
  void Forget(uint64_t id) { started_.erase(id); }
  // One run that ended, told directly: `limit_s` its limit (<= 0 or not finite: not counted),
  // `run_s` end - first start (below kLimitModelMinRunS: that), `key` its request. Ended() calls
  // it; the daemon calls it for each run its records count, as it ends and at a restart (in the
  // order they ended).
  void Add(double limit_s, double run_s, const RequestKey& key);

  // The learned power p in [0, 1] (1 until enough jobs ended, see above).
  double Power() const { return power_; }
  // Jobs with a limit that ended and are in the window now.
  size_t samples() const { return samples_.size(); }
  // The request's factor (above): > 0, 1 without runs of it or before kLimitModelMinJobs runs.
  double RequestFactor(const RequestKey& key) const;

  // The least-squares slope of y on x over `samples`, clamped to [0, 1]; 1 when there are fewer
  // than kLimitModelMinJobs or the x hardly vary. Exposed for tests.
  struct Sample {
    double log_limit;
    double log_run;
  };
  static double FitPower(const std::deque<Sample>& samples);

 private:
  std::unordered_map<uint64_t, double> started_;
  std::deque<Sample> samples_;  // log_run - log_limit summed in window_sum_
  double window_sum_ = 0;
  double power_ = 1;
  struct RequestRuns {
    std::deque<double> log_shares;  // log(run / limit), the last kRequestRunWindow
    double sum = 0;
  };
  std::map<RequestKey, RequestRuns> requests_;
};

}  // namespace migsched

#endif  // MIGSCHED_SCHED_LIMIT_MODEL_H_
