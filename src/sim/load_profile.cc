#include "sim/load_profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

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
  p.weeks = std::floor((jobs.back().arrival_s - t0) / kWeekS) + 1;
  const double scale = capacity > 0 ? 1 / (capacity * kWeekS) : 0;
  p.first_weeks.assign(static_cast<size_t>(std::min(p.weeks, static_cast<double>(kShownWeeks))),
                       0.0);
  // The later weeks that have arrivals, by week index (a double: see LoadProfile::weeks).
  std::map<double, double> later;
  double work = 0, long_work = 0;
  for (const WorkloadJob& j : jobs) {
    const double w = ShapeOnFirstModel(models, j).compute_slices * j.duration_s;
    const double k = std::min(p.weeks - 1, std::floor((j.arrival_s - t0) / kWeekS));
    if (k < static_cast<double>(kShownWeeks)) {
      p.first_weeks[static_cast<size_t>(k)] += w * scale;
    } else {
      later[k] += w * scale;
    }
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
  if (!later.empty()) {
    auto [lo, hi] =
        std::minmax_element(later.begin(), later.end(),
                            [](const auto& a, const auto& b) { return a.second < b.second; });
    p.later_max = hi->second;
    // A later week without arrivals offers 0.
    const bool gaps = static_cast<double>(later.size()) < p.weeks - kShownWeeks;
    p.later_min = gaps ? 0 : lo->second;
  }
  p.long_work_share = work > 0 ? long_work / work : 0;
  return p;
}

std::string DescribeLoad(const LoadProfile& p) {
  std::string weeks;
  for (size_t i = 0; i < p.first_weeks.size(); ++i) {
    weeks += fmt::format("{}{:.2f}", i ? ", " : "", p.first_weeks[i]);
  }
  if (p.weeks > static_cast<double>(p.first_weeks.size())) {
    const double more = p.weeks - static_cast<double>(p.first_weeks.size());
    // Whole numbers while a double holds them exactly; beyond, 3 significant digits.
    weeks += fmt::format(
        ", then {} more weeks between {:.2f} and {:.2f}",
        more < 9007199254740992.0 ? fmt::format("{:.0f}", more) : fmt::format("{:.3g}", more),
        p.later_min, p.later_max);
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
