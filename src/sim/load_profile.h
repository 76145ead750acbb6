// How a workload's offered load is spread over time, and its very long jobs:
// what a reader needs to judge figures taken over the makespan. A trace whose
// long jobs outlast its arrivals by months (the Alibaba pod list: one pod of
// 145 days) has a makespan set by those jobs, and an offered load far from
// steady even when its arrivals are regenerated at a mean load.
//
// Offered load of arrival week k (weeks counted from the first arrival):
//   sum over the jobs arriving in [t0 + k w, t0 + (k + 1) w) of
//       compute_slices(job) * duration_s
//   / (compute slices of the cluster * w),        w = 7 days,
// where compute_slices(job) is count x the profile's compute slices on the
// first GPU model of the cluster that offers it (sim/request_shape.h; 0 when
// none does). The last week may be partial: its figure is still over a whole
// week. A long job is one whose duration_s is at least `long_job_s`.
//
// Thread-safety: pure functions.
#ifndef MIGSCHED_SIM_LOAD_PROFILE_H_
#define MIGSCHED_SIM_LOAD_PROFILE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/gpu_model.h"
#include "io/workload_job.h"

namespace migsched {

inline constexpr double kWeekS = 7 * 86400.0;
inline constexpr size_t kShownWeeks = 12;  // weeks listed one by one (DescribeLoad)

// The weeks are counted, not stored one by one: a trace may space its arrivals by any valid
// time (up to about 1.8e308 s), and the work of ProfileLoad grows with the jobs, not with the
// weeks they span.
struct LoadProfile {
  // Weeks from the first to the last arrival (>= 1 when there is a job; a double: it may be
  // beyond any integer type).
  double weeks = 0;
  // The offered load of each of the first min(weeks, kShownWeeks) weeks.
  std::vector<double> first_weeks;
  // Over the weeks after those (when weeks > kShownWeeks): the lowest and highest offered
  // load (a week without arrivals counts as 0).
  double later_min = 0, later_max = 0;
  double long_job_s = kWeekS;  // what counts as a long job
  int64_t long_jobs = 0;       // duration_s >= long_job_s
  double long_work_share = 0;  // share of the offered compute-slice-seconds in long jobs
  double longest_duration_s = 0;
  std::string longest_name;  // the longest job's name ("" for no jobs)
};

// `gpus`: the cluster, one entry per GPU (as RunSimulation takes it). `jobs`
// sorted by arrival_s.
LoadProfile ProfileLoad(const std::vector<WorkloadJob>& jobs,
                        const std::vector<const GpuModel*>& gpus, double long_job_s = kWeekS);

// One line for the run's notes, e.g. "offered load per week (from the first arrival): 6.90,
// 0.60, ...; 22 jobs run 7 days or more (61% of the offered work; the longest, 'pod-1', 145.1
// d): they outlast the arrivals and set the makespan, so read UTIL, JOBS/DAY and KWH over the
// arrival window (UTIL ARRIVING, ...), or cap durations with --duration-cap".
std::string DescribeLoad(const LoadProfile& p);

// Cuts every duration_s above `cap_s` (> 0) to cap_s; returns how many were cut.
int64_t CapDurations(std::vector<WorkloadJob>* jobs, double cap_s);

}  // namespace migsched

#endif  // MIGSCHED_SIM_LOAD_PROFILE_H_
