#include "sim/arrivals.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/rng.h"

namespace migsched {

std::string_view ArrivalModeName(ArrivalMode mode) {
  return mode == ArrivalMode::kTraceOrder ? "trace-order" : "poisson";
}

StatusOr<ArrivalMode> ParseArrivalMode(std::string_view s) {
  if (s == "poisson") return ArrivalMode::kPoisson;
  if (s == "trace-order") return ArrivalMode::kTraceOrder;
  return InvalidArgumentError(fmt::format("'{}' is not one of poisson, trace-order", s));
}

StatusOr<double> MeanGapForLoad(const std::vector<WorkloadJob>& jobs,
                                const ArrivalOptions& options) {
  if (jobs.empty()) return InvalidArgumentError("arrivals: the workload has no jobs");
  if (!std::isfinite(options.load) || !(options.load > 0)) {
    return InvalidArgumentError(
        fmt::format("arrivals: load must be a number > 0, got {}", options.load));
  }
  if (options.num_gpus < 1) {
    return InvalidArgumentError(
        fmt::format("arrivals: num_gpus must be >= 1, got {}", options.num_gpus));
  }
  if (!options.demand) return InvalidArgumentError("arrivals: no demand function given");
  double work = 0;  // GPU-seconds
  for (const WorkloadJob& j : jobs) {
    const double d = options.demand(j);
    if (!std::isfinite(d) || !(d > 0) || d > 1) {
      return InvalidArgumentError(fmt::format(
          "arrivals: job '{}': GPU demand {} per instance must be in (0, 1] (is its request {} "
          "available on the cluster's GPU model?)",
          j.name, d, j.RequestString()));
    }
    if (!std::isfinite(j.duration_s) || !(j.duration_s > 0)) {
      return InvalidArgumentError(
          fmt::format("arrivals: job '{}': duration_s {} must be > 0", j.name, j.duration_s));
    }
    work += j.count * d * j.duration_s;
  }
  const double mean_work = work / static_cast<double>(jobs.size());
  return mean_work / (options.load * options.num_gpus);
}

Status RegenerateArrivals(std::vector<WorkloadJob>* jobs, const ArrivalOptions& options) {
  if (jobs->empty()) return Status::Ok();
  ASSIGN_OR_RETURN(const double gap, MeanGapForLoad(*jobs, options));
  const size_t n = jobs->size();
  if (options.mode == ArrivalMode::kPoisson) {
    Rng rng(options.seed);
    double t = 0;
    for (size_t i = 0; i < n; ++i) {
      if (i > 0) t += rng.Exponential(gap);
      (*jobs)[i].arrival_s = t;
    }
    return Status::Ok();
  }
  std::vector<WorkloadJob> sorted = *jobs;
  std::stable_sort(sorted.begin(), sorted.end(), [](const WorkloadJob& a, const WorkloadJob& b) {
    return a.arrival_s < b.arrival_s;
  });
  const double t0 = sorted.front().arrival_s;
  const double span = sorted.back().arrival_s - t0;
  if (n == 1) {
    sorted[0].arrival_s = 0;
  } else {
    if (!(span > 0) || !std::isfinite(span)) {
      return FailedPreconditionError(fmt::format(
          "arrivals: trace-order needs at least two distinct arrival times; all {} jobs "
          "arrive at {} s (use poisson)",
          n, t0));
    }
    const double scale = gap * static_cast<double>(n - 1) / span;
    for (WorkloadJob& j : sorted) j.arrival_s = (j.arrival_s - t0) * scale;
  }
  *jobs = std::move(sorted);
  return Status::Ok();
}

}  // namespace migsched
