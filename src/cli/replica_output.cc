#include "cli/replica_output.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "cli/report.h"

namespace migsched::cli {
namespace {

// How a key's value is written: value × scale with `decimals` and `unit`.
struct Unit {
  double scale = 1;
  int decimals = 0;
  std::string suffix;  // " min", "%", ""
};

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

Unit UnitOf(const std::string& key, double mean, bool averaged) {
  if (EndsWith(key, "_s")) {
    const double a = std::fabs(mean);
    if (a < 120) return {1, 1, " s"};
    if (a < 7200) return {1 / 60.0, 1, " min"};
    if (a < 3 * 86400) return {1 / 3600.0, 2, " h"};
    return {1 / 86400.0, 2, " d"};
  }
  if (key.rfind("utilization", 0) == 0 || key.find("share") != std::string::npos ||
      key.find("rejection_rate") != std::string::npos ||
      key.find("stranded") != std::string::npos || key == "fill_allocation" ||
      key == "fill_acceptance") {
    return {100, 1, "%"};
  }
  if (key.rfind("frag", 0) == 0 || key == "fill_frag") return {1, 3, ""};
  if (key.find("slowdown") != std::string::npos || key.rfind("energy_kwh", 0) == 0 ||
      key == "migrations_per_accepted_job") {
    return {1, 2, ""};
  }
  if (key.rfind("jobs_per_day", 0) == 0 || key == "jobs_per_kwh" ||
      key.find("rejected_slice_hours") != std::string::npos || key.rfind("decision_us", 0) == 0) {
    return {1, 1, ""};
  }
  return {1, averaged ? 1 : 0, ""};  // counts: a mean over replicas has a fraction
}

// First column left-aligned, the others right-aligned, two spaces apart.
void PrintTable(const std::vector<std::vector<std::string>>& rows, std::ostream& out) {
  if (rows.empty()) return;
  std::vector<size_t> width(rows.front().size(), 0);
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size() && i < width.size(); ++i) {
      width[i] = std::max(width[i], r[i].size());
    }
  }
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size(); ++i) {
      out << (i == 0 ? fmt::format("{:<{}}", r[i], width[i])
                     : fmt::format("  {:>{}}", r[i], width[i]));
    }
    out << "\n";
  }
}

// " (replica 2: 119 jobs completed, frag-aware 120)": where a run first
// differs from the reference (labels[0]) under ComparableToReference.
std::string MismatchText(const JobCountsMismatch& m, const std::vector<std::string>& labels) {
  const char* what = m.key == "jobs_total"       ? "jobs in the workload"
                     : m.key == "jobs_completed" ? "jobs completed"
                                                 : "jobs rejected";
  if (m.replica == JobCountsMismatch::kMeans) {  // other numbers of replicas
    return fmt::format(" (means: {:.1f} {}, {} {:.1f})", m.value, what, labels.front(),
                       m.reference);
  }
  return fmt::format(" (replica {}: {:.0f} {}, {} {:.0f})", m.replica, m.value, what,
                     labels.front(), m.reference);
}

int Replicas(const ReplicaRuns& runs) {
  return runs.empty() ? 0 : static_cast<int>(runs.front().size());
}

}  // namespace

std::string MeanCell(const std::string& key, const Interval& i) {
  if (i.n == 0 || !std::isfinite(i.mean)) return "-";
  // Every replica the same whole number (a job count): just the number.
  if (i.half == 0 && i.mean == std::floor(i.mean) && !EndsWith(key, "_s")) {
    return MetricCell(key, i.mean);
  }
  const Unit u = UnitOf(key, i.mean, i.n > 1);
  const std::string mean = fmt::format("{:.{}f}{}", i.mean * u.scale, u.decimals, u.suffix);
  if (!std::isfinite(i.half)) return mean;
  return fmt::format("{} ±{:.{}f}", mean, i.half * u.scale, u.decimals);
}

std::string PairedCell(const PairedChange& c) {
  if (c.n == 0 || !std::isfinite(c.ratio)) return "-";
  if (!std::isfinite(c.ratio_half)) return fmt::format("{:.2f}", c.ratio);
  return fmt::format("{:.2f} ±{:.2f}{}", c.ratio, c.ratio_half, c.significant ? "*" : "");
}

void PrintReplicaSummary(const std::vector<Metrics>& reps, std::ostream& out) {
  if (reps.empty()) return;
  const Metrics& first = reps.front();
  auto cell = [&](const std::string& key) {
    return MeanCell(key, MeanInterval(ValuesOf(reps, key)));
  };
  out << fmt::format("  replicas          {} (mean ± half-width of the 95% confidence interval)\n",
                     reps.size());
  out << fmt::format("  policy            {}\n", first.policy);
  out << fmt::format("  cluster           {}\n", first.cluster);
  if (first.mode == "fill") {
    out << fmt::format("  allocation        {} of compute slices busy at the end\n",
                       cell("fill_allocation"));
    out << fmt::format("  acceptance        {} of arrivals placed\n", cell("fill_acceptance"));
    out << fmt::format("  fragmentation     {} (at the end)\n", cell("fill_frag"));
    out << fmt::format("  reconfigurations  {}\n", cell("reconfigurations"));
    return;
  }
  out << fmt::format("  jobs              {} completed, {} rejected, {} timed out (of {})\n",
                     cell("jobs_completed"), cell("rejected"), cell("jobs_timeout"),
                     cell("jobs_total"));
  out << fmt::format(
      "  admission         {} accepted, {} slice-hours rejected, {} migrations per accepted job\n",
      cell("accepted"), cell("rejected_slice_hours"), cell("migrations_per_accepted_job"));
  out << fmt::format("  makespan          {}\n", cell("makespan_s"));
  out << fmt::format("  JCT               mean {}, p95 {}\n", cell("jct_mean_s"),
                     cell("jct_p95_s"));
  out << fmt::format("  wait              mean {}, p95 {}\n", cell("wait_mean_s"),
                     cell("wait_p95_s"));
  out << fmt::format("  slowdown          mean {}, bounded (10 s) mean {}\n", cell("slowdown_mean"),
                     cell("bounded_slowdown_mean"));
  out << fmt::format("  JCT floor         {} (mean duration: the mean JCT if no job waited)\n",
                     cell("duration_mean_s"));
  out << fmt::format("  utilization       {}\n", cell("utilization"));
  out << fmt::format(
      "  while arriving    {} utilisation, {} jobs per day, {} kWh (arrival window {})\n",
      cell("utilization_arrival_window"), cell("jobs_per_day_arrival_window"),
      cell("energy_kwh_arrival_window"), cell("arrival_window_s"));
  out << fmt::format("  fragmentation     rate mean {}, peak {}\n", cell("frag_mean"),
                     cell("frag_peak"));
  out << fmt::format("  reconfigurations  {}, migrations {}\n", cell("reconfigurations"),
                     cell("migrations"));
  std::set<std::string> keys;
  for (const Metrics& m : reps) {
    for (const auto& [k, p] : m.per_profile) keys.insert(k);
  }
  if (keys.empty()) return;
  std::vector<std::string> sorted(keys.begin(), keys.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const std::string& a, const std::string& b) { return ProfileKeyLess(a, b); });
  std::vector<std::vector<std::string>> rows = {{"  REQUEST", "JOBS", "REJ RATE", "REJ SLICE-H",
                                                 "WAIT MEAN", "WAIT P95", "JCT MEAN", "JCT P95",
                                                 "SLOWDOWN", "BSLD"}};
  for (const std::string& p : sorted) {
    auto pc = [&](const std::string& f) { return cell("per_profile/" + p + "/" + f); };
    rows.push_back({"  " + p, pc("jobs"), pc("rejection_rate"), pc("rejected_slice_hours"),
                    pc("wait_mean_s"), pc("wait_p95_s"), pc("jct_mean_s"), pc("jct_p95_s"),
                    pc("slowdown_mean"), pc("bounded_slowdown_mean")});
  }
  out << "\n";
  PrintTable(rows, out);
}

void PrintReplicaComparison(const std::vector<std::string>& labels, const ReplicaRuns& runs,
                            std::ostream& out) {
  if (runs.empty()) return;
  const auto& cols = ComparedMetrics();
  std::vector<std::vector<std::string>> values = {{"POLICY"}}, paired = {{"POLICY", "GAP CLOSED"}};
  for (const auto& c : cols) {
    values.front().push_back(c.header);
    paired.front().push_back(c.header);
  }
  const std::vector<double> ref_jct = ValuesOf(runs.front(), "jct_mean_s");
  const std::vector<double> ref_floor = ValuesOf(runs.front(), "duration_mean_s");
  const std::vector<JobCounts> ref_counts = JobCountsOf(runs.front());
  std::vector<std::string> not_compared;  // "best-fit (replica 2: 119 jobs completed, ...)"
  for (size_t i = 0; i < runs.size(); ++i) {
    std::vector<std::string> v = {labels[i]}, p = {labels[i]};
    const JobCountsMismatch mismatch = CompareJobCounts(JobCountsOf(runs[i]), ref_counts);
    if (!mismatch.comparable()) not_compared.push_back(labels[i] + MismatchText(mismatch, labels));
    // Gap closed, replica by replica: (ref - this) / (ref - floor), then the mean.
    const std::vector<double> jct = ValuesOf(runs[i], "jct_mean_s");
    std::vector<double> closed;
    for (size_t r = 0; r < jct.size() && r < ref_jct.size(); ++r) {
      const double gap = ref_jct[r] - ref_floor[r];
      closed.push_back(gap > 0 ? (ref_jct[r] - jct[r]) / gap : NAN);
    }
    const Interval g = MeanInterval(closed);
    p.push_back(g.n == 0 || !mismatch.comparable()
                    ? "-"
                    : (std::isfinite(g.half)
                           ? fmt::format("{:+.0f}% ±{:.0f}", 100 * g.mean, 100 * g.half)
                           : fmt::format("{:+.0f}%", 100 * g.mean)));
    for (const auto& c : cols) {
      const std::vector<double> x = ValuesOf(runs[i], c.key);
      v.push_back(MeanCell(c.key, MeanInterval(x)));
      p.push_back(RatioComparable(c.key, mismatch.comparable())
                      ? PairedCell(ComparePaired(x, ValuesOf(runs.front(), c.key)))
                      : "-");
    }
    values.push_back(std::move(v));
    paired.push_back(std::move(p));
  }
  out << fmt::format("Means over {} replicas, ± the half-width of their 95% confidence interval.\n",
                     Replicas(runs));
  PrintTable(values, out);
  out << fmt::format("Zero-wait JCT floor (mean duration): {}\n",
                     MeanCell("duration_mean_s", MeanInterval(ref_floor)));
  std::vector<std::string> lower, higher;
  for (const auto& c : cols) {
    if (c.better == MetricBetter::kLower) lower.push_back(c.header);
    if (c.better == MetricBetter::kHigher) higher.push_back(c.header);
  }
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
    return s;
  };
  out << fmt::format(
      "\nPaired change against {}, replica by replica (the same jobs and arrivals): the ratio of "
      "the means ± the half-width of its 95% interval; * = significant (the paired difference's "
      "interval excludes 0).\n  Lower is better: {}.\n  Higher is better: {}.\n  GAP CLOSED: the "
      "share of {}'s gap between its JCT MEAN and the floor that a policy closes.\n",
      labels.front(), join(lower), join(higher), labels.front());
  if (!not_compared.empty()) {
    out << fmt::format(
        "Runs that completed or rejected another number of jobs than {} in some replica show no "
        "ratio ('-') except REJECTED and REJ SLICE-H: {}.\n",
        labels.front(), fmt::join(not_compared, "; "));
  }
  PrintTable(paired, out);
}

void PrintByProfile(const std::vector<std::string>& labels, const ReplicaRuns& runs,
                    std::ostream& out) {
  if (runs.empty()) return;
  std::set<std::string> keys;
  for (const auto& reps : runs) {
    for (const Metrics& m : reps) {
      for (const auto& [k, p] : m.per_profile) keys.insert(k);
    }
  }
  std::vector<std::string> sorted(keys.begin(), keys.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const std::string& a, const std::string& b) { return ProfileKeyLess(a, b); });
  const bool several = Replicas(runs) > 1;
  out << fmt::format("\nPer requested profile{}; ratios paired against {}{}:\n",
                     several ? " (means over the replicas ± 95% half-width)" : "", labels.front(),
                     several ? " (* significant)" : "");
  for (const std::string& p : sorted) {
    const std::string pre = "per_profile/" + p + "/";
    std::vector<std::vector<std::string>> rows = {{p, "JOBS", "WAIT MEAN", "WAIT P95", "JCT MEAN",
                                                   "JCT P95", "SLOWDOWN", "BSLD", "WAIT P95 RATIO",
                                                   "JCT MEAN RATIO"}};
    for (size_t i = 0; i < runs.size(); ++i) {
      auto cell = [&](const std::string& f) {
        return MeanCell(f, MeanInterval(ValuesOf(runs[i], pre + f)));
      };
      auto ratio = [&](const std::string& f) {
        return PairedCell(ComparePaired(ValuesOf(runs[i], pre + f), ValuesOf(runs[0], pre + f)));
      };
      rows.push_back({"  " + labels[i], cell("jobs"), cell("wait_mean_s"), cell("wait_p95_s"),
                      cell("jct_mean_s"), cell("jct_p95_s"), cell("slowdown_mean"),
                      cell("bounded_slowdown_mean"), ratio("wait_p95_s"), ratio("jct_mean_s")});
    }
    out << "\n";
    PrintTable(rows, out);
  }
}

nlohmann::ordered_json ReplicaRunJson(const std::vector<Metrics>& reps,
                                      const std::vector<uint64_t>& seeds) {
  nlohmann::ordered_json j;
  if (reps.size() == 1) {
    const nlohmann::json m = MetricsToJson(reps.front());  // named: items() refers to it
    for (const auto& [k, v] : m.items()) j[k] = v;
    return j;
  }
  const nlohmann::json means = ReplicaMeans(reps);
  for (const auto& [k, v] : means.items()) j[k] = v;
  j["replicas"] = reps.size();
  j["seeds"] = seeds;
  j["ci95"] = ReplicaHalfWidths(reps);
  j["replica_results"] = nlohmann::ordered_json::array();
  for (const Metrics& m : reps)
    j["replica_results"].push_back(nlohmann::ordered_json(MetricsToJson(m)));
  return j;
}

}  // namespace migsched::cli
