#include "sched/limit_model.h"

#include <algorithm>
#include <cmath>

namespace migsched {

void LimitModel::Started(uint64_t id, double now_s) { started_.emplace(id, now_s); }

void LimitModel::Ended(uint64_t id, double limit_s, double now_s) {
  auto it = started_.find(id);
  if (it == started_.end()) return;
  const double run_s = now_s - it->second;
  started_.erase(it);
  Add(limit_s, run_s);
}

void LimitModel::Add(double limit_s, double run_s) {
  if (!(limit_s > 0) || !std::isfinite(limit_s) || !std::isfinite(run_s)) return;
  samples_.push_back({std::log(limit_s), std::log(std::max(run_s, kLimitModelMinRunS))});
  if (samples_.size() > kLimitModelWindow) samples_.pop_front();
  power_ = FitPower(samples_);
}

double LimitModel::FitPower(const std::deque<Sample>& samples) {
  if (samples.size() < kLimitModelMinJobs) return 1;
  const double n = static_cast<double>(samples.size());
  double mx = 0, my = 0;
  for (const Sample& s : samples) {
    mx += s.log_limit;
    my += s.log_run;
  }
  mx /= n;
  my /= n;
  double sxx = 0, sxy = 0;
  for (const Sample& s : samples) {
    sxx += (s.log_limit - mx) * (s.log_limit - mx);
    sxy += (s.log_limit - mx) * (s.log_run - my);
  }
  if (sxx / n < 1e-6) return 1;
  return std::clamp(sxy / sxx, 0.0, 1.0);
}

}  // namespace migsched
