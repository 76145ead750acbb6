#include "sim/user_estimates.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/rng.h"

namespace migsched {

Status UserEstimateOptions::Validate() const {
  auto share = [](double v) { return std::isfinite(v) && v >= 0 && v <= 1; };
  if (!share(at_limit_share)) {
    return InvalidArgumentError(
        fmt::format("user estimates: at_limit_share must be in [0, 1], got {}", at_limit_share));
  }
  if (!share(site_max_share) || at_limit_share + site_max_share > 1) {
    return InvalidArgumentError(
        fmt::format("user estimates: site_max_share must be in [0, 1 - at_limit_share], got {}",
                    site_max_share));
  }
  if (!std::isfinite(site_max_s) || !(site_max_s > 0)) {
    return InvalidArgumentError(
        fmt::format("user estimates: site_max_s must be finite and > 0, got {}", site_max_s));
  }
  if (!std::isfinite(max_factor) || !(max_factor >= 1)) {
    return InvalidArgumentError(
        fmt::format("user estimates: max_factor must be finite and >= 1, got {}", max_factor));
  }
  return Status();
}

const std::vector<double>& PopularLimits() {
  constexpr double kMin = 60, kHour = 3600, kDay = 86400;
  static const std::vector<double> kValues = {
      1 * kMin,   5 * kMin,  10 * kMin,  15 * kMin, 20 * kMin, 30 * kMin,  1 * kHour,
      2 * kHour,  3 * kHour, 4 * kHour,  6 * kHour, 8 * kHour, 10 * kHour, 12 * kHour,
      18 * kHour, 1 * kDay,  1.5 * kDay, 2 * kDay,  3 * kDay,  7 * kDay};
  return kValues;
}

double PopularLimitAtLeast(double s) {
  const std::vector<double>& v = PopularLimits();
  auto it = std::lower_bound(v.begin(), v.end(), s);
  if (it != v.end()) return *it;
  constexpr double kWeek = 7 * 86400.0;
  return std::ceil(s / kWeek) * kWeek;
}

StatusOr<int64_t> AssignUserEstimates(std::vector<WorkloadJob>* jobs, uint64_t seed,
                                      const UserEstimateOptions& o) {
  RETURN_IF_ERROR(o.Validate());
  Rng rng(Rng::DeriveSeed(seed, /*stream=*/0x7573657265737431));  // "userest1"
  int64_t assigned = 0;
  for (WorkloadJob& j : *jobs) {
    if (j.time_limit_s > 0) continue;
    if (!std::isfinite(j.duration_s) || !(j.duration_s > 0)) {
      return InvalidArgumentError(
          fmt::format("user estimates: job '{}' has duration_s {}; it must be finite and > 0",
                      j.name, j.duration_s));
    }
    const double u = rng.Uniform01();
    const double cap = std::max(o.site_max_s, PopularLimitAtLeast(j.duration_s));
    if (u < o.at_limit_share) {
      j.time_limit_s = j.duration_s;
    } else if (u < o.at_limit_share + o.site_max_share) {
      j.time_limit_s = cap;
    } else {
      const double factor = std::pow(o.max_factor, rng.Uniform01());
      j.time_limit_s = std::min(cap, PopularLimitAtLeast(j.duration_s * factor));
    }
    ++assigned;
  }
  return assigned;
}

}  // namespace migsched
