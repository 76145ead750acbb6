#include "sim/load_profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "sim/request_shape.h"

namespace migsched {

LoadProfile ProfileLoad(const std::vector<WorkloadJob>& jobs,
                        const std::vector<const GpuModel*>& gpus, double long_job_s) {
  LoadProfile p;
  p.long_job_s = long_job_s;
  if (jobs.empty()) return p;
  std::vector<const GpuModel*> models;
  double capacity = 0;  // compute slices of the cluster
  for (const GpuModel* g : gpus) {
    capacity += g->compute_slices();
    if (std::find(models.begin(), models.end(), g) == models.end()) models.push_back(g);
  }
  const double t0 = jobs.front().arrival_s;
  const size_t weeks = static_cast<size_t>(std::floor((jobs.back().arrival_s - t0) / kWeekS)) + 1;
  p.offered_load_per_week.assign(weeks, 0.0);
  double work = 0, long_work = 0;
  for (const WorkloadJob& j : jobs) {
    const double w = ShapeOnFirstModel(models, j).compute_slices * j.duration_s;
    const size_t k = std::min(weeks - 1, static_cast<size_t>((j.arrival_s - t0) / kWeekS));
    p.offered_load_per_week[k] += w;
    work += w;
    if (j.duration_s >= long_job_s) {
      ++p.long_jobs;
      long_work += w;
    }
    if (j.duration_s > p.longest_duration_s) {
      p.longest_duration_s = j.duration_s;
      p.longest_name = j.name;
    }
  }
  for (double& v : p.offered_load_per_week) v = capacity > 0 ? v / (capacity * kWeekS) : 0;
  p.long_work_share = work > 0 ? long_work / work : 0;
  return p;
}

std::string DescribeLoad(const LoadProfile& p) {
  std::string weeks;
  const size_t n = p.offered_load_per_week.size();
  constexpr size_t kShown = 12;
  for (size_t i = 0; i < n && i < kShown; ++i) {
    weeks += fmt::format("{}{:.2f}", i ? ", " : "", p.offered_load_per_week[i]);
  }
  if (n > kShown) {
    const auto [lo, hi] = std::minmax_element(p.offered_load_per_week.begin() + kShown,
                                              p.offered_load_per_week.end());
    weeks += fmt::format(", then {} more weeks between {:.2f} and {:.2f}", n - kShown, *lo, *hi);
  }
  std::string out = fmt::format(
      "offered load per week (compute slices x duration of the jobs arriving that week / the "
      "cluster's, from the first arrival): {}",
      weeks);
  if (p.long_jobs > 0) {
    out += fmt::format(
        "; {} jobs run {:g} days or more ({:.0f}% of the offered work; the longest, '{}', {:.1f} "
        "d): "
        "they outlast the arrivals and set the makespan, so MAKESPAN, UTIL, JOBS/DAY and KWH "
        "are theirs; read UTIL ARRIVING, JOBS/DAY ARRIVING and KWH ARRIVING (over the arrival "
        "window), or cap durations with --duration-cap",
        p.long_jobs, p.long_job_s / 86400, 100 * p.long_work_share, p.longest_name,
        p.longest_duration_s / 86400);
  }
  return out;
}

int64_t CapDurations(std::vector<WorkloadJob>* jobs, double cap_s) {
  int64_t cut = 0;
  for (WorkloadJob& j : *jobs) {
    if (j.duration_s > cap_s) {
      j.duration_s = cap_s;
      ++cut;
    }
  }
  return cut;
}

}  // namespace migsched
