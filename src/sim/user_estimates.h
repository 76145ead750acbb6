// A seeded model of user runtime estimates (time limits) for workloads that
// give none, after Tsafrir, Etsion and Feitelson, "Modeling User Runtime
// Estimates", JSSPP 2005 (LNCS 3834). Their findings on production logs that
// the model reproduces: users pick a few popular round values (5 min, 1 h,
// 1 day, ...); estimates are mostly large overestimates; the site's maximum
// limit is one of the most popular values; and a share of jobs run until
// their limit kills them. The parameters below are ours (the paper fits
// per-site distributions); docs/formats/trace.md states them.
//
// For each job without a limit (Job::time_limit_s == 0), in workload order,
// with one Rng stream derived from `seed`: one Uniform01() draw u picks
//   u < at_limit_share                      limit = duration_s (the job ran to its
//                                           limit: any slowdown makes it time out)
//   u < at_limit_share + site_max_share     limit = max(site_max_s,
//                                           PopularLimitAtLeast(duration_s))
//   otherwise                               a second draw v: factor f =
//                                           max_factor^v (log-uniform in [1, max_factor]),
//                                           limit = PopularLimitAtLeast(duration_s * f),
//                                           at most max(site_max_s,
//                                           PopularLimitAtLeast(duration_s)).
// Jobs that have a limit keep it and draw nothing.
//
// Thread-safety: pure functions.
#ifndef MIGSCHED_SIM_USER_ESTIMATES_H_
#define MIGSCHED_SIM_USER_ESTIMATES_H_

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "io/workload_job.h"

namespace migsched {

struct UserEstimateOptions {
  double at_limit_share = 0.1;  // in [0, 1]: jobs whose limit is their run time
  double site_max_share = 0.2;  // in [0, 1], with at_limit_share at most 1: the site's maximum
  double site_max_s = 86400;    // > 0: the site's maximum limit (24 h)
  double max_factor = 20;       // >= 1: the largest overestimate factor
  Status Validate() const;      // kInvalidArgument naming the field
};

// The popular round values, seconds, ascending: 1, 5, 10, 15, 20, 30 min;
// 1, 2, 3, 4, 6, 8, 10, 12, 18 h; 1, 1.5, 2, 3, 7 days.
const std::vector<double>& PopularLimits();

// The smallest popular value >= s; past the last one, the smallest whole
// number of weeks >= s. REQUIRES: s finite.
double PopularLimitAtLeast(double s);

// Gives every job of `jobs` without a time limit one drawn as above (its
// duration_s must be > 0). Deterministic for a seed. Returns how many jobs got one.
StatusOr<int64_t> AssignUserEstimates(std::vector<WorkloadJob>* jobs, uint64_t seed,
                                      const UserEstimateOptions& options = {});

}  // namespace migsched

#endif  // MIGSCHED_SIM_USER_ESTIMATES_H_
