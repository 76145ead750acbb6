#include "sim/metrics.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <utility>

namespace migsched {
namespace {

double Mean(const std::vector<double>& v) {
  return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

}  // namespace

double PercentileSorted(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  p = std::clamp(p, 0.0, 100.0);
  const double h = (static_cast<double>(sorted.size()) - 1) * p / 100;
  const size_t lo = static_cast<size_t>(std::floor(h));
  if (lo + 1 >= sorted.size()) return sorted.back();
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[lo + 1] - sorted[lo]);
}

double Percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  return PercentileSorted(values, p);
}

nlohmann::json MetricsToJson(const Metrics& m) {
  nlohmann::json j;
  j["mode"] = m.mode;
  j["policy"] = m.policy;
  j["cluster"] = m.cluster;
  j["jobs_total"] = m.jobs_total;
  j["jobs_completed"] = m.jobs_completed;
  j["rejected"] = m.rejected;
  j["makespan_s"] = m.makespan_s;
  j["jct_mean_s"] = m.jct_mean_s;
  j["jct_p50_s"] = m.jct_p50_s;
  j["jct_p95_s"] = m.jct_p95_s;
  j["jct_p99_s"] = m.jct_p99_s;
  j["wait_mean_s"] = m.wait_mean_s;
  j["wait_p95_s"] = m.wait_p95_s;
  j["utilization"] = m.utilization;
  j["frag_mean"] = m.frag_mean;
  j["frag_peak"] = m.frag_peak;
  j["stranded_mean"] = m.stranded_mean;
  j["stranded_capacity_mean"] = m.stranded_capacity_mean;
  j["jobs_per_day"] = m.jobs_per_day;
  j["energy_kwh"] = m.energy_kwh ? nlohmann::json(*m.energy_kwh) : nlohmann::json();
  j["jobs_per_kwh"] = m.jobs_per_kwh ? nlohmann::json(*m.jobs_per_kwh) : nlohmann::json();
  j["creates"] = m.creates;
  j["destroys"] = m.destroys;
  j["reuses"] = m.reuses;
  j["reconfigurations"] = m.reconfigurations;
  j["setup_reconfigurations"] = m.setup_reconfigurations;
  j["migrations"] = m.migrations;
  j["migrations_intra"] = m.migrations_intra;
  j["migrations_inter"] = m.migrations_inter;
  j["migration_bytes_gb"] = m.migration_bytes_gb;
  j["migration_pause_s"] = m.migration_pause_s;
  j["migration_work_lost_s"] = m.migration_work_lost_s;
  j["reconfigurations_saved_by_retention"] = m.reconfigurations_saved_by_retention;
  j["idle_expirations"] = m.idle_expirations;
  j["joint_starts"] = m.joint_starts;
  j["decisions"] = m.decisions;
  j["decision_us_mean"] = m.decision_us_mean;
  j["decision_us_p99"] = m.decision_us_p99;
  j["fill_allocation"] = m.fill_allocation;
  j["fill_acceptance"] = m.fill_acceptance;
  j["fill_frag"] = m.fill_frag;
  j["fill_placed"] = m.fill_placed;
  nlohmann::json pp = nlohmann::json::object();
  for (const auto& [key, p] : m.per_profile) {
    pp[key] = {{"jobs", p.jobs},
               {"completed", p.completed},
               {"rejected", p.rejected},
               {"jct_mean_s", p.jct_mean_s},
               {"wait_mean_s", p.wait_mean_s},
               {"wait_p95_s", p.wait_p95_s}};
  }
  j["per_profile"] = std::move(pp);
  return j;
}

void CountPlan(const Plan& plan, Metrics* m) {
  std::set<std::pair<int, int>> created;  // (gpu, start)
  for (const Step& s : plan.steps) {
    switch (s.kind) {
      case StepKind::kCreate:
        ++m->creates;
        created.insert({s.gpu, s.start});
        break;
      case StepKind::kDestroy:
        ++m->destroys;
        break;
      case StepKind::kStart:
      case StepKind::kMigrateBegin:
        if (!created.count({s.gpu, s.start})) ++m->reuses;
        break;
      case StepKind::kRelease:
      case StepKind::kMigrateEnd:
      case StepKind::kMigrateAbort:
        break;
    }
  }
  m->reconfigurations = m->creates + m->destroys;
}

void TimeIntegrals::Close(double until_s) {
  const double dt = until_s - t_;
  if (dt <= 0) return;
  busy_area_ += state_.busy_compute_slices * dt;
  frag_area_ += state_.frag_rate * dt;
  stranded_area_ += state_.stranded * dt;
  stranded_slices_area_ += state_.stranded_compute_slices * dt;
  frag_peak_ = std::max(frag_peak_, state_.frag_rate);
}

void TimeIntegrals::Sample(double time_s, const ClusterSample& state) {
  if (started_) Close(time_s);
  started_ = true;
  t_ = time_s;
  state_ = state;
}

void TimeIntegrals::Finish(double end_s) {
  if (!started_) return;
  Close(end_s);
  if (end_s > t_) t_ = end_s;
}

void JobStats::AddCompleted(const std::string& profile_key, double arrival_s, double start_s,
                            double end_s) {
  Group& g = groups_[profile_key];
  g.jct.push_back(end_s - arrival_s);
  g.wait.push_back(start_s - arrival_s);
  jct_.push_back(end_s - arrival_s);
  wait_.push_back(start_s - arrival_s);
}

void JobStats::AddRejected(const std::string& profile_key) {
  ++groups_[profile_key].rejected;
  ++rejected_;
}

void JobStats::Fill(Metrics* m) const {
  m->jobs_completed = static_cast<int64_t>(jct_.size());
  m->rejected = rejected_;
  std::vector<double> jct = jct_, wait = wait_;
  std::sort(jct.begin(), jct.end());
  std::sort(wait.begin(), wait.end());
  m->jct_mean_s = Mean(jct_);
  m->jct_p50_s = PercentileSorted(jct, 50);
  m->jct_p95_s = PercentileSorted(jct, 95);
  m->jct_p99_s = PercentileSorted(jct, 99);
  m->wait_mean_s = Mean(wait_);
  m->wait_p95_s = PercentileSorted(wait, 95);
  m->per_profile.clear();
  for (const auto& [key, g] : groups_) {
    ProfileMetrics p;
    p.completed = static_cast<int64_t>(g.jct.size());
    p.rejected = g.rejected;
    p.jobs = p.completed + p.rejected;
    p.jct_mean_s = Mean(g.jct);
    p.wait_mean_s = Mean(g.wait);
    p.wait_p95_s = Percentile(g.wait, 95);
    m->per_profile[key] = p;
  }
}

void FillDecisionStats(const std::vector<double>& decision_us, Metrics* m) {
  m->decisions = static_cast<int64_t>(decision_us.size());
  m->decision_us_mean = Mean(decision_us);
  m->decision_us_p99 = Percentile(decision_us, 99);
}

}  // namespace migsched
