// Replicas: several runs of one setting that differ only by a seeded
// perturbation of the workload (docs/algorithms.md §9 "Replicas"), and the
// statistics that separate a difference between policies from noise.
//
//  * MeanInterval: the mean of n values and the half-width of its 95%
//    confidence interval, Student's t with n - 1 degrees of freedom:
//    half = t(0.975, n - 1) × sd / sqrt(n), sd the sample standard deviation
//    (n - 1 in the denominator). NaN half-width for n < 2.
//  * ComparePaired: a against ref replica by replica (the same jobs and
//    arrivals for both). diff = mean over replicas of (a_r - ref_r) with its
//    95% interval (the paired t-test); ratio = mean(a) / mean(ref) with the
//    interval ratio ± diff_half / |mean(ref)| (the relative paired difference:
//    mean(ref) taken as known). "Significant" when the interval of diff
//    excludes 0, which is the same as the ratio's excluding 1. Replicas where
//    either value is missing (NaN) are left out of the pairs.
//  * ReplicaMeans / ReplicaHalfWidths / PairedToJson: the same, key by key,
//    over the MetricsToJson form of each replica (per_profile included).
//
// Thread-safety: pure functions.
#ifndef MIGSCHED_SIM_REPLICAS_H_
#define MIGSCHED_SIM_REPLICAS_H_

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/numbers.h"
#include "io/workload_job.h"
#include "sim/metrics.h"

namespace migsched {

// The 97.5% quantile of Student's t distribution with `df` >= 1 degrees of
// freedom (12.706 for 1, 2.262 for 9, 1.960 in the limit), by bisection on
// the CDF (regularized incomplete beta function), |error| < 1e-9.
double StudentT975(int df);

struct Interval {
  double mean = 0;
  double half = 0;  // half-width of the 95% interval; NaN when n < 2
  int n = 0;        // values (non-NaN) it is over; mean NaN when 0
};
// Over the finite values of `values` (NaN ones are left out).
Interval MeanInterval(const std::vector<double>& values);

struct PairedChange {
  int n = 0;             // pairs used
  double diff = 0;       // mean of a - ref
  double diff_half = 0;  // 95% half-width (NaN when n < 2)
  double ratio = 0;      // mean(a) / mean(ref); NaN when mean(ref) is 0
  double ratio_half = 0;
  bool significant = false;
};
// REQUIRES: a.size() == ref.size() (replica r of each at index r).
PairedChange ComparePaired(const std::vector<double>& a, const std::vector<double>& ref);

// MetricsToJson of the mean replica: strings from the first replica, each
// numeric key (per_profile fields too, rejected_reasons' counts) the mean over
// the replicas that have it (null when none has). REQUIRES: non-empty.
nlohmann::json ReplicaMeans(const std::vector<Metrics>& replicas);
// {key: half-width, ..., "per_profile": {profile: {field: half-width}}}; null
// where fewer than two replicas have a value.
nlohmann::json ReplicaHalfWidths(const std::vector<Metrics>& replicas);
// {key: {"ratio", "ratio_ci95", "diff", "diff_ci95", "significant", "n"}, ...,
// "per_profile": {profile: {field: {...}}}} of `a` against `ref`, replica by
// replica. REQUIRES: a.size() == ref.size().
nlohmann::json PairedToJson(const std::vector<Metrics>& a, const std::vector<Metrics>& ref);

// The value of `key` (a MetricsToJson key, or "per_profile/PROFILE/FIELD")
// in each replica; NaN where missing.
std::vector<double> ValuesOf(const std::vector<Metrics>& replicas, const std::string& key);

// Whether a run's ratios to a reference run mean something: the one rule of
// `compare`'s terminal tables (one run or replicas), of its --json
// (`comparable_to_reference`, and `ratio_to_reference`'s nulls) and of the
// HTML report (its uncoloured ratios, its "Not compared" line, the runs its
// summary ranks); docs/algorithms.md §9 "Replicas".
//
// A run compares with the reference when, replica by replica (replica r of
// both ran the same jobs and arrivals), both had the same number of jobs in
// the workload (jobs_total), completed the same number (jobs_completed) and,
// online, rejected the same number (rejected). Otherwise its times (over its
// completed jobs), utilisation, rates and energy are over other jobs than the
// reference's, and a ratio would credit it for doing less. Every replica, not
// the means (119 and 121 jobs completed average to 120, as 120 and 120 do)
// nor replica 0 alone. In fill mode the arrivals that found no room
// (`rejected`) are the outcome measured, so they are not compared there. A
// count unknown in either run (NaN: absent from a saved output) is not
// compared. Runs with different numbers of replicas (saved outputs given to
// `report --from` together) do not pair: their mean counts are compared.
struct JobCounts {
  bool fill = false;        // fill mode: `rejected` is not compared
  double total = kNaN;      // jobs_total
  double completed = kNaN;  // jobs_completed
  double rejected = kNaN;   // rejected
};
// The counts of each replica of a run (replica r at index r).
std::vector<JobCounts> JobCountsOf(const std::vector<Metrics>& replicas);
// The counts of a run in JSON form: one per element of its "replica_results"
// (cli/replica_output.h ReplicaRunJson), else one of the object itself
// (MetricsToJson; a saved run without its replicas' results: its means).
std::vector<JobCounts> JobCountsOfJson(const nlohmann::json& run);

// Where a run first differs from the reference under the rule above: in
// replica order, then jobs_total, jobs_completed, rejected.
struct JobCountsMismatch {
  // `replica` of runs with different numbers of replicas: their means differ.
  static constexpr size_t kMeans = static_cast<size_t>(-1);
  // "" when the run compares; else "jobs_total", "jobs_completed" or "rejected".
  std::string key;
  size_t replica = 0;    // the replica where they differ, or kMeans
  double value = 0;      // the run's count (a mean for kMeans)
  double reference = 0;  // the reference's
  bool comparable() const { return key.empty(); }
};
JobCountsMismatch CompareJobCounts(const std::vector<JobCounts>& run,
                                   const std::vector<JobCounts>& reference);
// CompareJobCounts(JobCountsOf(run), JobCountsOf(reference)).comparable().
bool ComparableToReference(const std::vector<Metrics>& run, const std::vector<Metrics>& reference);

// The seed of replica `r` (0-based) of a run seeded `seed`: seed + r, modulo
// 2^64. Replica 0 is the run `--seed seed` makes without replicas.
uint64_t ReplicaSeed(uint64_t seed, int r);

// The jitter of workloads whose arrival times are not drawn from the seed (a
// trace with its own arrival times, trace-order arrivals): in trace order,
// every gap between consecutive arrivals and every duration is multiplied by
// an independent factor drawn uniformly from [1 - fraction, 1 + fraction]
// (core/rng.h stream seeded by `seed`: one draw per gap, then one per
// duration); the first arrival keeps its time, the order of arrivals is kept
// (a gap of 0, jobs arriving together, stays 0). REQUIRES: fraction in
// [0, 1); jobs sorted by arrival. Deterministic.
void JitterWorkload(std::vector<WorkloadJob>* jobs, double fraction, uint64_t seed);
// The default jitter, a share of each gap and duration (5%).
inline constexpr double kDefaultJitter = 0.05;

}  // namespace migsched

#endif  // MIGSCHED_SIM_REPLICAS_H_
