#include "sched/limit_model.h"

#include <algorithm>
#include <cmath>

namespace migsched {

void LimitModel::Started(uint64_t id, double now_s) { started_.emplace(id, now_s); }

void LimitModel::Ended(uint64_t id, double limit_s, double now_s, const RequestKey& key) {
  auto it = started_.find(id);
  if (it == started_.end()) return;
  const double run_s = now_s - it->second;
  started_.erase(it);
  Add(limit_s, run_s, key);
}

void LimitModel::Add(double limit_s, double run_s, const RequestKey& key) {
  if (!(limit_s > 0) || !std::isfinite(limit_s) || !std::isfinite(run_s)) return;
  const Sample s{std::log(limit_s), std::log(std::max(run_s, kLimitModelMinRunS))};
  const double share = s.log_run - s.log_limit;
  samples_.push_back(s);
  window_sum_ += share;
  if (samples_.size() > kLimitModelWindow) {
    window_sum_ -= samples_.front().log_run - samples_.front().log_limit;
    samples_.pop_front();
  }
  RequestRuns& r = requests_[key];
  r.log_shares.push_back(share);
  r.sum += share;
  if (r.log_shares.size() > kRequestRunWindow) {
    r.sum -= r.log_shares.front();
    r.log_shares.pop_front();
  }
  power_ = FitPower(samples_);
}

double LimitModel::RequestFactor(const RequestKey& key) const {
  if (samples_.size() < kLimitModelMinJobs) return 1;
  const auto it = requests_.find(key);
  if (it == requests_.end()) return 1;
  const double m = window_sum_ / static_cast<double>(samples_.size());
  const double n = static_cast<double>(it->second.log_shares.size());
  const double m_key = (it->second.sum + kRequestRunPrior * m) / (n + kRequestRunPrior);
  return std::exp(m_key - m);
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
