// Simulator metrics (§9 of docs/algorithms.md): the Metrics record, how its
// parts are accumulated, and its JSON form.
//
// Definitions (units in the names: _s seconds, _us microseconds):
//   makespan_s        first arrival (rejected jobs included) to the last end of a
//                     job (completed or timed out); 0 when no job completed
//   jct_*_s           completion - arrival, over completed jobs
//   wait_*_s          start - arrival over completed jobs, where start is when
//                     the job began running, i.e. after its reconfigurations
//   duration_mean_s   mean Job::duration_s (run time without contention) of the
//                     completed jobs: the mean JCT of a schedule in which no
//                     job waits (and none is slowed), the floor against which
//                     a JCT gain is measured
//   slowdown_*        JCT / duration_s per completed job: mean and p95
//   bounded_slowdown_*  max(1, JCT / max(duration_s, kBoundedSlowdownFloorS)),
//                     the bounded slowdown of the job-scheduling literature
//                     (Feitelson et al.: a 10 s floor keeps very short jobs
//                     from dominating the mean): mean and p95
//   utilization       time-integral of busy compute slices / (total compute
//                     slices × makespan). An instance is busy from the decision
//                     that placed the job (it is reserved while being created)
//                     to the job's completion.
//   frag_mean/_peak   time-weighted mean over the makespan / maximum of the
//                     cluster fragmentation rate (mean FragCost over GPUs, §2)
//   stranded_share_mean  "stranded share": time-weighted mean over the makespan
//                     of the stranded share of the FREE compute slices
//                     (sim/cluster_tracker.h; 0 while the queue is empty).
//                     With backfill (§5) a queue scan leaves no waiting
//                     single-instance job that fits anywhere, so this is close
//                     to the share of time the queue is non-empty
//   stranded_capacity_mean  "stranded capacity": time-integral of stranded free
//                     compute slices / (ALL compute slices × makespan): how
//                     much of the cluster was free but unusable by the
//                     waiting jobs
//   rejected          jobs rejected at arrival (they can never run here) or
//                     after waiting --max-wait
//   rejected_slice_hours  what the rejected jobs would have used: compute slices of
//                     the request (count x the profile's compute slices on the first
//                     GPU model that offers it; 0 when none does) x duration_s, in
//                     slice-hours. Counting jobs alone rewards rejecting large ones
//   accepted          jobs that ran: completed + timed out (admission mode: the
//                     jobs placed at arrival)
//   migrations_per_accepted_job  migrations / accepted (0 when none ran)
//   jobs_timeout      jobs ended at their time limit (Job::time_limit_s) while still
//                     running, as Slurm's TIMEOUT: not in jobs_completed, nor in the
//                     JCT, wait and slowdown figures
//   rejected_reasons  rejected jobs per reason (the reason text of the jobs
//                     CSV, e.g. "no GPU in the cluster (A30 24GB) offers
//                     profile 7g.40gb"); JSON: an object reason -> jobs
//   creates/destroys  MIG create / destroy operations during the run (placement
//                     and release plans); reconfigurations = creates + destroys
//   reuses            instances given to a job without a create step
//   setup_reconfigurations  creates of the policy's setup plan (static layouts),
//                     done before the first arrival, not counted above
//   migrations        §6 moves completed (switch-over done; a move abandoned
//                     because its job ended mid-copy is not counted), of which
//                     migrations_intra within a GPU, migrations_inter between GPUs
//   migration_bytes_gb  state copied by `checkpoint` moves: the source profile's
//                     memory_mib / 1024 per move (GB)
//   migration_pause_s total switch-over pause (switch_s per move), the only time
//                     a moved job does not progress
//   migration_work_lost_s  work (seconds at rate 1) `restart` jobs lost: the
//                     progress since their last checkpoint
//   reconfigurations_saved_by_retention  2 x the instances given to a job that
//                     a previous job had left idle (each saved one destroy at
//                     that job's end and one create), against destroying every
//                     instance when its job ends
//   idle_expirations  idle instances destroyed because --idle-ttl ran out
//   joint_starts      jobs started by joint placement (§12): a job that found
//                     no placement on its own and started with the jobs its
//                     queue scan had placed before it (0 when it is off)
//   evacuations       evacuations begun (§13): sets of moves of running jobs
//                     that open a placement for a waiting job (the moves
//                     themselves are counted in migrations)
//   limit_power       the power the response-ratio order weighed time limits
//                     with among the jobs of one request at the end of the run
//                     (§5, "Limits weighed by what they predict": with
//                     --limit-power learned, what the runs that ended said; 1
//                     = limits as given, and in fill mode)
//   jobs_per_day      completed / (makespan / 86400)
//   energy_kwh        estimated energy over the makespan, kWh (sim/energy.h: idle
//                     power of every GPU plus power per busy compute slice, from
//                     the catalog's `power`); absent (JSON null) when a model
//                     has no power data, and in fill mode
//   jobs_per_kwh      completed / energy_kwh; absent with it or when it is 0
//   arrival_window_s  first to last arrival: the window in which jobs arrive
//   utilization_arrival_window, jobs_per_day_arrival_window, energy_kwh_arrival_window
//                     utilisation, jobs completed per day and energy over the arrival
//                     window only (0 / absent when it is 0): a few very long jobs that
//                     outlast the arrivals set the makespan and dilute the figures over it
//   decision_us_*     wall-clock µs per scheduler placement attempt (every
//                     TryPlace call, successful or not: Scheduler::decision_us())
//   fill_*            fill mode only (§9, FGD): final allocation ratio (busy /
//                     total compute slices), acceptance (placed / arrived) and
//                     fragmentation rate
//   per_profile       per requested profile (sim/request_shape.h key): jobs,
//                     completed, rejected, timeout, rejection_rate (rejected / jobs),
//                     rejected_slice_hours, jct_mean_s, jct_p95_s, wait_mean_s,
//                     wait_p95_s, duration_mean_s, slowdown_mean,
//                     bounded_slowdown_mean (over completed jobs; null in JSON
//                     when none completed)
//
// MetricInfos() below names every numeric key once: the terminal summary,
// `compare`'s legend and the HTML report all label a figure by it, so that a
// figure is called the same wherever it is shown.
//
// Percentiles: linear interpolation between closest ranks (Hyndman & Fan
// type 7, numpy's default): for n sorted values v[0..n-1] and p in [0, 100],
// h = (n - 1) * p / 100 and P = v[floor h] + (h - floor h) * (v[floor h + 1] -
// v[floor h]). P = 0 for no values.
//
// Thread-safety: values.
#ifndef MIGSCHED_SIM_METRICS_H_
#define MIGSCHED_SIM_METRICS_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/plan.h"

namespace migsched {

// Percentile p (in [0, 100]) of `values` by the method above (sorts a copy).
double Percentile(std::vector<double> values, double p);
// Same, for values already sorted ascending.
double PercentileSorted(const std::vector<double>& sorted, double p);

// The floor of the bounded slowdown, seconds (the literature's usual 10 s).
inline constexpr double kBoundedSlowdownFloorS = 10;

// JCT / duration and the bounded slowdown of one job (durations <= 0 count as
// the floor's; a slowdown of a job without a duration is 1).
double Slowdown(double jct_s, double duration_s);
double BoundedSlowdown(double jct_s, double duration_s);

struct ProfileMetrics {
  int64_t jobs = 0;
  int64_t completed = 0;
  int64_t rejected = 0;
  int64_t timeout = 0;              // ended at their time limit
  double rejection_rate = 0;        // rejected / jobs
  double rejected_slice_hours = 0;  // Metrics::rejected_slice_hours of this profile
  double jct_mean_s = 0;
  double jct_p95_s = 0;
  double wait_mean_s = 0;
  double wait_p95_s = 0;
  double duration_mean_s = 0;
  double slowdown_mean = 0;
  double bounded_slowdown_mean = 0;
  bool operator==(const ProfileMetrics&) const = default;
};

struct Metrics {
  std::string mode;     // "online" | "fill"
  std::string policy;   // the placement policy's name
  std::string cluster;  // Cluster::Describe()

  int64_t jobs_total = 0;  // online: jobs in the workload; fill: arrivals processed
  int64_t jobs_completed = 0;
  int64_t rejected = 0;  // online: rejected at arrival; fill: arrivals that found no room
  std::map<std::string, int64_t> rejected_reasons;  // online: reason -> rejected jobs
  double rejected_slice_hours = 0;  // online: compute slices x duration of the rejected jobs, h
  int64_t accepted = 0;             // online: jobs that ran (completed + timed out)
  double migrations_per_accepted_job = 0;  // online: migrations / accepted
  int64_t jobs_timeout = 0;  // online: ended at their time limit (not in jobs_completed)

  double makespan_s = 0;
  double jct_mean_s = 0, jct_p50_s = 0, jct_p95_s = 0, jct_p99_s = 0;
  double wait_mean_s = 0, wait_p95_s = 0;
  double duration_mean_s = 0;  // the zero-wait floor of jct_mean_s
  double slowdown_mean = 0, slowdown_p95 = 0;
  double bounded_slowdown_mean = 0, bounded_slowdown_p95 = 0;
  double utilization = 0;
  double frag_mean = 0, frag_peak = 0;
  double stranded_share_mean = 0;     // of the free compute slices
  double stranded_capacity_mean = 0;  // of all compute slices
  double jobs_per_day = 0;
  std::optional<double> energy_kwh, jobs_per_kwh;
  double arrival_window_s = 0;
  double utilization_arrival_window = 0;
  double jobs_per_day_arrival_window = 0;
  std::optional<double> energy_kwh_arrival_window;

  int64_t creates = 0, destroys = 0, reuses = 0;
  int64_t reconfigurations = 0;  // creates + destroys
  int64_t setup_reconfigurations = 0;
  int64_t migrations = 0;
  int64_t migrations_intra = 0, migrations_inter = 0;
  double migration_bytes_gb = 0;
  double migration_pause_s = 0;
  double migration_work_lost_s = 0;
  int64_t reconfigurations_saved_by_retention = 0;
  int64_t idle_expirations = 0;
  int64_t joint_starts = 0;
  int64_t evacuations = 0;  // §13 evacuations begun (their moves are in migrations)
  double limit_power = 1;   // §5 the power limits were weighed with at the end (in [0, 1])

  int64_t decisions = 0;  // placement attempts timed
  double decision_us_mean = 0, decision_us_p99 = 0;

  double fill_allocation = 0, fill_acceptance = 0, fill_frag = 0;
  int64_t fill_placed = 0;

  std::map<std::string, ProfileMetrics> per_profile;

  bool operator==(const Metrics&) const = default;
};

// Every field above, under its own name; per_profile as an object keyed by
// profile.
nlohmann::json MetricsToJson(const Metrics& m);

// Which direction of a metric is better.
enum class MetricBetter { kLower, kHigher, kNeither };

// What a numeric MetricsToJson key is.
struct MetricInfo {
  std::string_view key;    // e.g. "stranded_capacity_mean"
  std::string_view label;  // what it is, e.g. "stranded capacity (of all compute slices)"
  MetricBetter better;
};
// Every numeric key of MetricsToJson, in its order.
const std::vector<MetricInfo>& MetricInfos();
// The entry of `key`, or nullptr.
const MetricInfo* FindMetricInfo(std::string_view key);

// Order of per-profile keys ("1g.5gb", "2x7g.40gb", "gpu_fraction 0.3", a
// request no model offers): by the profile's size, i.e. compute slices, then
// memory (the "Ng.Mgb" of the name), then the gang size, then the text; keys
// that are not of that form come last, by text. A strict weak order.
bool ProfileKeyLess(std::string_view a, std::string_view b);
// The keys of `per_profile` in that order.
std::vector<std::string> ProfileKeysBySize(
    const std::map<std::string, ProfileMetrics>& per_profile);

// Adds the create/destroy/reuse counts of one applied plan to `m` (a reuse is
// a kStart step with no kCreate of the same GPU and start earlier in the plan).
void CountPlan(const Plan& plan, Metrics* m);

// The cluster quantities integrated over time.
struct ClusterSample {
  double busy_compute_slices = 0;
  double frag_rate = 0;
  double stranded = 0;                 // share of free compute slices
  double stranded_compute_slices = 0;  // free compute slices stranded
};

// Time-weighted integrals of piecewise-constant cluster quantities: the state
// given to Sample(t, ...) holds from t until the next sample.
class TimeIntegrals {
 public:
  // Samples must come in non-decreasing time; a sample at the time of the
  // previous one replaces it.
  void Sample(double time_s, const ClusterSample& state);
  // Closes the last interval at `end_s` (ignored if before the last sample).
  void Finish(double end_s);

  double busy_area() const { return busy_area_; }  // compute-slice-seconds
  double frag_area() const { return frag_area_; }  // seconds
  double stranded_area() const { return stranded_area_; }
  double stranded_slices_area() const { return stranded_slices_area_; }  // slice-seconds
  // Largest frag_rate held for a positive time.
  double frag_peak() const { return frag_peak_; }

 private:
  void Close(double until_s);
  bool started_ = false;
  double t_ = 0;
  ClusterSample state_;
  double busy_area_ = 0, frag_area_ = 0, stranded_area_ = 0, stranded_slices_area_ = 0;
  double frag_peak_ = 0;
};

// Per-job results, grouped by profile key.
class JobStats {
 public:
  // `duration_s`: the job's run time without contention (Job::duration_s).
  void AddCompleted(const std::string& profile_key, double arrival_s, double start_s, double end_s,
                    double duration_s);
  // `reason`: why (Metrics::rejected_reasons); "" counts under "unknown".
  // `slice_hours`: what the job would have used (Metrics::rejected_slice_hours).
  void AddRejected(const std::string& profile_key, const std::string& reason = "",
                   double slice_hours = 0);
  // A job ended at its time limit (Metrics::jobs_timeout).
  void AddTimedOut(const std::string& profile_key);
  // Sets jobs_completed, jobs_timeout, accepted, rejected, rejected_reasons,
  // rejected_slice_hours, jct_*, wait_* and per_profile of `m`, and
  // migrations_per_accepted_job from m->migrations (set it first).
  void Fill(Metrics* m) const;

 private:
  struct Group {
    int64_t rejected = 0, timeout = 0;
    double rejected_slice_hours = 0;
    std::vector<double> jct, wait, duration, slowdown, bounded;
  };
  std::map<std::string, Group> groups_;
  std::map<std::string, int64_t> reasons_;
  std::vector<double> jct_, wait_, duration_, slowdown_, bounded_;
  int64_t rejected_ = 0, timeout_ = 0;
  double rejected_slice_hours_ = 0;
};

// decisions, decision_us_mean and decision_us_p99 from Scheduler::decision_us().
void FillDecisionStats(const std::vector<double>& decision_us, Metrics* m);

}  // namespace migsched

#endif  // MIGSCHED_SIM_METRICS_H_
