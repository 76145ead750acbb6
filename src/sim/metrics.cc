#include "sim/metrics.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <tuple>
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

double Slowdown(double jct_s, double duration_s) {
  return duration_s > 0 ? jct_s / duration_s : 1.0;
}

double BoundedSlowdown(double jct_s, double duration_s) {
  return std::max(1.0, jct_s / std::max(duration_s, kBoundedSlowdownFloorS));
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
  j["rejected_reasons"] = m.rejected_reasons;
  j["rejected_slice_hours"] = m.rejected_slice_hours;
  j["accepted"] = m.accepted;
  j["migrations_per_accepted_job"] = m.migrations_per_accepted_job;
  j["jobs_timeout"] = m.jobs_timeout;
  j["makespan_s"] = m.makespan_s;
  j["jct_mean_s"] = m.jct_mean_s;
  j["jct_p50_s"] = m.jct_p50_s;
  j["jct_p95_s"] = m.jct_p95_s;
  j["jct_p99_s"] = m.jct_p99_s;
  j["wait_mean_s"] = m.wait_mean_s;
  j["wait_p95_s"] = m.wait_p95_s;
  j["duration_mean_s"] = m.duration_mean_s;
  j["slowdown_mean"] = m.slowdown_mean;
  j["slowdown_p95"] = m.slowdown_p95;
  j["bounded_slowdown_mean"] = m.bounded_slowdown_mean;
  j["bounded_slowdown_p95"] = m.bounded_slowdown_p95;
  j["utilization"] = m.utilization;
  j["frag_mean"] = m.frag_mean;
  j["frag_peak"] = m.frag_peak;
  j["stranded_share_mean"] = m.stranded_share_mean;
  j["stranded_capacity_mean"] = m.stranded_capacity_mean;
  j["jobs_per_day"] = m.jobs_per_day;
  j["energy_kwh"] = m.energy_kwh ? nlohmann::json(*m.energy_kwh) : nlohmann::json();
  j["jobs_per_kwh"] = m.jobs_per_kwh ? nlohmann::json(*m.jobs_per_kwh) : nlohmann::json();
  j["arrival_window_s"] = m.arrival_window_s;
  j["utilization_arrival_window"] = m.utilization_arrival_window;
  j["jobs_per_day_arrival_window"] = m.jobs_per_day_arrival_window;
  j["energy_kwh_arrival_window"] =
      m.energy_kwh_arrival_window ? nlohmann::json(*m.energy_kwh_arrival_window) : nlohmann::json();
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
  j["evacuations"] = m.evacuations;
  j["limit_power"] = m.limit_power;
  j["decisions"] = m.decisions;
  j["decision_us_mean"] = m.decision_us_mean;
  j["decision_us_p99"] = m.decision_us_p99;
  j["fill_allocation"] = m.fill_allocation;
  j["fill_acceptance"] = m.fill_acceptance;
  j["fill_frag"] = m.fill_frag;
  j["fill_placed"] = m.fill_placed;
  nlohmann::json pp = nlohmann::json::object();
  for (const auto& [key, p] : m.per_profile) {
    // Times are over completed jobs: none completed, no time (not 0 s).
    auto time = [completed = p.completed](double s) {
      return completed > 0 ? nlohmann::json(s) : nlohmann::json();
    };
    pp[key] = {{"jobs", p.jobs},
               {"completed", p.completed},
               {"rejected", p.rejected},
               {"timeout", p.timeout},
               {"rejection_rate", p.rejection_rate},
               {"rejected_slice_hours", p.rejected_slice_hours},
               {"jct_mean_s", time(p.jct_mean_s)},
               {"jct_p95_s", time(p.jct_p95_s)},
               {"wait_mean_s", time(p.wait_mean_s)},
               {"wait_p95_s", time(p.wait_p95_s)},
               {"duration_mean_s", time(p.duration_mean_s)},
               {"slowdown_mean", time(p.slowdown_mean)},
               {"bounded_slowdown_mean", time(p.bounded_slowdown_mean)}};
  }
  j["per_profile"] = std::move(pp);
  return j;
}

const std::vector<MetricInfo>& MetricInfos() {
  using B = MetricBetter;
  static const std::vector<MetricInfo> k = {
      {"jobs_total", "jobs in the workload", B::kNeither},
      {"jobs_completed", "jobs completed", B::kHigher},
      {"rejected", "jobs rejected", B::kLower},
      {"rejected_slice_hours", "rejected slice-hours (compute slices x duration)", B::kLower},
      {"accepted", "jobs accepted (ran: completed or timed out)", B::kHigher},
      {"migrations_per_accepted_job", "migrations per accepted job", B::kLower},
      {"jobs_timeout", "jobs ended at their time limit", B::kNeither},
      {"makespan_s", "makespan", B::kLower},
      {"jct_mean_s", "JCT mean", B::kLower},
      {"jct_p50_s", "JCT p50", B::kLower},
      {"jct_p95_s", "JCT p95", B::kLower},
      {"jct_p99_s", "JCT p99", B::kLower},
      {"wait_mean_s", "wait mean", B::kLower},
      {"wait_p95_s", "wait p95", B::kLower},
      {"duration_mean_s", "zero-wait JCT floor (mean duration)", B::kNeither},
      {"slowdown_mean", "slowdown mean (JCT / duration)", B::kLower},
      {"slowdown_p95", "slowdown p95", B::kLower},
      {"bounded_slowdown_mean", "bounded slowdown mean (10 s floor)", B::kLower},
      {"bounded_slowdown_p95", "bounded slowdown p95", B::kLower},
      {"utilization", "utilisation (busy compute slices, time mean)", B::kHigher},
      {"frag_mean", "fragmentation rate mean (FragCost over GPUs)", B::kLower},
      {"frag_peak", "fragmentation rate peak", B::kLower},
      {"stranded_share_mean", "stranded share (of the free compute slices, time mean)", B::kLower},
      {"stranded_capacity_mean", "stranded capacity (of all compute slices, time mean)", B::kLower},
      {"jobs_per_day", "jobs completed per day", B::kHigher},
      {"energy_kwh", "energy (kWh, estimate)", B::kLower},
      {"jobs_per_kwh", "jobs completed per kWh", B::kHigher},
      {"arrival_window_s", "arrival window (first to last arrival)", B::kNeither},
      {"utilization_arrival_window", "utilisation over the arrival window", B::kHigher},
      {"jobs_per_day_arrival_window", "jobs completed per day over the arrival window", B::kHigher},
      {"energy_kwh_arrival_window", "energy over the arrival window (kWh, estimate)", B::kLower},
      {"creates", "MIG creates", B::kLower},
      {"destroys", "MIG destroys", B::kLower},
      {"reuses", "reuses of an idle instance", B::kHigher},
      {"reconfigurations", "reconfigurations (creates + destroys)", B::kLower},
      {"setup_reconfigurations", "setup reconfigurations (before the first arrival)", B::kNeither},
      {"migrations", "migrations", B::kLower},
      {"migrations_intra", "migrations within a GPU", B::kLower},
      {"migrations_inter", "migrations between GPUs", B::kLower},
      {"migration_bytes_gb", "migration state copied (GB)", B::kLower},
      {"migration_pause_s", "migration pause (total)", B::kLower},
      {"migration_work_lost_s", "work lost by restarts", B::kLower},
      {"reconfigurations_saved_by_retention", "reconfigurations saved by idle retention",
       B::kHigher},
      {"idle_expirations", "idle instances expired (--idle-ttl)", B::kNeither},
      {"joint_starts", "jobs started by joint placement (§12)", B::kNeither},
      {"evacuations", "evacuations begun (§13)", B::kNeither},
      {"limit_power", "limit power at the end (§5; 1 = limits as given)", B::kNeither},
      {"decisions", "placement attempts", B::kNeither},
      {"decision_us_mean", "decision time mean (µs, wall clock)", B::kLower},
      {"decision_us_p99", "decision time p99 (µs, wall clock)", B::kLower},
      {"fill_allocation", "allocation at the end (busy compute slices)", B::kHigher},
      {"fill_acceptance", "acceptance (placed / arrived)", B::kHigher},
      {"fill_frag", "fragmentation rate at the end", B::kLower},
      {"fill_placed", "arrivals placed", B::kHigher},
  };
  return k;
}

const MetricInfo* FindMetricInfo(std::string_view key) {
  for (const MetricInfo& i : MetricInfos()) {
    if (i.key == key) return &i;
  }
  return nullptr;
}

namespace {

// Reads the leading decimal digits of `s` into `*n`; false if there are none.
bool TakeNumber(std::string_view* s, int64_t* n) {
  size_t i = 0;
  *n = 0;
  while (i < s->size() && (*s)[i] >= '0' && (*s)[i] <= '9' && i < 12) {
    *n = *n * 10 + ((*s)[i] - '0');
    ++i;
  }
  if (i == 0) return false;
  s->remove_prefix(i);
  return true;
}

// (compute slices, memory GB, gang size) of "[Kx]Ng.Mgb[...]"; false if the
// key is not of that form.
bool ProfileSize(std::string_view key, std::tuple<int64_t, int64_t, int64_t>* size) {
  int64_t count = 1, compute = 0, memory = 0;
  std::string_view s = key;
  if (const size_t x = s.find('x'); x != std::string_view::npos && x > 0) {
    std::string_view num = s.substr(0, x);
    if (TakeNumber(&num, &count) && num.empty()) s.remove_prefix(x + 1);
  }
  if (!TakeNumber(&s, &compute) || s.substr(0, 2) != "g.") return false;
  s.remove_prefix(2);
  if (!TakeNumber(&s, &memory) || s.substr(0, 2) != "gb") return false;
  *size = {compute, memory, count};
  return true;
}

}  // namespace

bool ProfileKeyLess(std::string_view a, std::string_view b) {
  std::tuple<int64_t, int64_t, int64_t> sa, sb;
  const bool pa = ProfileSize(a, &sa), pb = ProfileSize(b, &sb);
  if (pa != pb) return pa;  // sized keys first
  if (pa && sa != sb) return sa < sb;
  return a < b;
}

std::vector<std::string> ProfileKeysBySize(
    const std::map<std::string, ProfileMetrics>& per_profile) {
  std::vector<std::string> keys;
  for (const auto& [key, p] : per_profile) keys.push_back(key);
  std::sort(keys.begin(), keys.end(),
            [](const std::string& a, const std::string& b) { return ProfileKeyLess(a, b); });
  return keys;
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
                            double end_s, double duration_s) {
  Group& g = groups_[profile_key];
  const double jct = end_s - arrival_s, wait = start_s - arrival_s;
  const double slowdown = Slowdown(jct, duration_s), bounded = BoundedSlowdown(jct, duration_s);
  for (auto [v, all, group] : {std::tuple{jct, &jct_, &g.jct}, std::tuple{wait, &wait_, &g.wait},
                               std::tuple{duration_s, &duration_, &g.duration},
                               std::tuple{slowdown, &slowdown_, &g.slowdown},
                               std::tuple{bounded, &bounded_, &g.bounded}}) {
    all->push_back(v);
    group->push_back(v);
  }
}

void JobStats::AddRejected(const std::string& profile_key, const std::string& reason,
                           double slice_hours) {
  Group& g = groups_[profile_key];
  ++g.rejected;
  g.rejected_slice_hours += slice_hours;
  ++reasons_[reason.empty() ? "unknown" : reason];
  ++rejected_;
  rejected_slice_hours_ += slice_hours;
}

void JobStats::AddTimedOut(const std::string& profile_key) {
  ++groups_[profile_key].timeout;
  ++timeout_;
}

void JobStats::Fill(Metrics* m) const {
  m->jobs_completed = static_cast<int64_t>(jct_.size());
  m->rejected = rejected_;
  m->rejected_reasons = reasons_;
  m->rejected_slice_hours = rejected_slice_hours_;
  m->jobs_timeout = timeout_;
  m->accepted = m->jobs_completed + timeout_;
  m->migrations_per_accepted_job =
      m->accepted > 0 ? static_cast<double>(m->migrations) / static_cast<double>(m->accepted) : 0;
  std::vector<double> jct = jct_, wait = wait_;
  std::sort(jct.begin(), jct.end());
  std::sort(wait.begin(), wait.end());
  m->jct_mean_s = Mean(jct_);
  m->jct_p50_s = PercentileSorted(jct, 50);
  m->jct_p95_s = PercentileSorted(jct, 95);
  m->jct_p99_s = PercentileSorted(jct, 99);
  m->wait_mean_s = Mean(wait_);
  m->wait_p95_s = PercentileSorted(wait, 95);
  m->duration_mean_s = Mean(duration_);
  m->slowdown_mean = Mean(slowdown_);
  m->slowdown_p95 = Percentile(slowdown_, 95);
  m->bounded_slowdown_mean = Mean(bounded_);
  m->bounded_slowdown_p95 = Percentile(bounded_, 95);
  m->per_profile.clear();
  for (const auto& [key, g] : groups_) {
    ProfileMetrics p;
    p.completed = static_cast<int64_t>(g.jct.size());
    p.rejected = g.rejected;
    p.timeout = g.timeout;
    p.jobs = p.completed + p.rejected + p.timeout;
    p.rejection_rate = static_cast<double>(p.rejected) / static_cast<double>(p.jobs);
    p.rejected_slice_hours = g.rejected_slice_hours;
    p.jct_mean_s = Mean(g.jct);
    p.jct_p95_s = Percentile(g.jct, 95);
    p.wait_mean_s = Mean(g.wait);
    p.wait_p95_s = Percentile(g.wait, 95);
    p.duration_mean_s = Mean(g.duration);
    p.slowdown_mean = Mean(g.slowdown);
    p.bounded_slowdown_mean = Mean(g.bounded);
    m->per_profile[key] = p;
  }
}

void FillDecisionStats(const std::vector<double>& decision_us, Metrics* m) {
  m->decisions = static_cast<int64_t>(decision_us.size());
  m->decision_us_mean = Mean(decision_us);
  m->decision_us_p99 = Percentile(decision_us, 99);
}

}  // namespace migsched
