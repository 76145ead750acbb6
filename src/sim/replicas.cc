#include "sim/replicas.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "core/numbers.h"
#include "core/rng.h"

namespace migsched {
namespace {

// Continued fraction of the incomplete beta function (Lentz's method, as in
// Press et al., Numerical Recipes, "betacf").
double BetaContinuedFraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300;
  const double qab = a + b, qap = a + 1, qam = a - 1;
  double c = 1, d = 1 - qab * x / qap;
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 300; ++m) {
    const int m2 = 2 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1) < 1e-15) break;
  }
  return h;
}

// The regularized incomplete beta function I_x(a, b).
double RegularizedBeta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) +
                                a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1) / (a + b + 2)) return front * BetaContinuedFraction(a, b, x) / a;
  return 1 - front * BetaContinuedFraction(b, a, 1 - x) / b;
}

// P(T <= t) for t >= 0, Student's t with df degrees of freedom.
double StudentCdf(double t, double df) {
  return 1 - 0.5 * RegularizedBeta(df / 2, 0.5, df / (df + t * t));
}

double SampleSd(const std::vector<double>& v, double mean) {
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return std::sqrt(ss / static_cast<double>(v.size() - 1));
}

double MeanOrNaN(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? kNaN : s / static_cast<double>(v.size());
}

nlohmann::json NumberOrNull(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json();
}

double Number(const nlohmann::json& j) { return j.is_number() ? j.get<double>() : kNaN; }

// Every numeric path of a replica's JSON: top-level keys and
// per_profile/PROFILE/FIELD, in a stable order (union over the replicas).
struct Paths {
  std::vector<std::string> top;
  std::map<std::string, std::vector<std::string>> profile_fields;  // profile -> fields
};

Paths NumericPaths(const std::vector<nlohmann::json>& js) {
  Paths p;
  std::set<std::string> seen;
  for (const nlohmann::json& j : js) {
    for (const auto& [k, v] : j.items()) {
      if (k == "per_profile" || k == "rejected_reasons" || v.is_string()) continue;
      if (seen.insert(k).second) p.top.push_back(k);
    }
    if (j.contains("per_profile")) {
      for (const auto& [profile, fields] : j["per_profile"].items()) {
        std::vector<std::string>& f = p.profile_fields[profile];
        for (const auto& [field, v] : fields.items()) {
          if (std::find(f.begin(), f.end(), field) == f.end()) f.push_back(field);
        }
      }
    }
  }
  return p;
}

std::vector<double> Column(const std::vector<nlohmann::json>& js, const std::string& profile,
                           const std::string& key) {
  std::vector<double> out;
  for (const nlohmann::json& j : js) {
    if (profile.empty()) {
      out.push_back(j.contains(key) ? Number(j[key]) : kNaN);
    } else {
      const bool has = j.contains("per_profile") && j["per_profile"].contains(profile) &&
                       j["per_profile"][profile].contains(key);
      out.push_back(has ? Number(j["per_profile"][profile][key]) : kNaN);
    }
  }
  return out;
}

std::vector<nlohmann::json> ToJson(const std::vector<Metrics>& runs) {
  std::vector<nlohmann::json> out;
  for (const Metrics& m : runs) out.push_back(MetricsToJson(m));
  return out;
}

nlohmann::json PairedJson(const PairedChange& c) {
  return {{"ratio", NumberOrNull(c.ratio)}, {"ratio_ci95", NumberOrNull(c.ratio_half)},
          {"diff", NumberOrNull(c.diff)},   {"diff_ci95", NumberOrNull(c.diff_half)},
          {"significant", c.significant},   {"n", c.n}};
}

}  // namespace

double StudentT975(int df) {
  if (df < 1) return kNaN;
  double lo = 0, hi = 700;  // P(T <= 700) > 0.975 for every df >= 1
  for (int i = 0; i < 200 && hi - lo > 1e-12; ++i) {
    const double mid = (lo + hi) / 2;
    (StudentCdf(mid, df) < 0.975 ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

Interval MeanInterval(const std::vector<double>& values) {
  std::vector<double> v;
  for (double x : values) {
    if (std::isfinite(x)) v.push_back(x);
  }
  Interval out;
  out.n = static_cast<int>(v.size());
  out.mean = MeanOrNaN(v);
  out.half = out.n >= 2 ? StudentT975(out.n - 1) * SampleSd(v, out.mean) / std::sqrt(out.n) : kNaN;
  return out;
}

PairedChange ComparePaired(const std::vector<double>& a, const std::vector<double>& ref) {
  std::vector<double> d, va, vr;
  for (size_t i = 0; i < a.size() && i < ref.size(); ++i) {
    if (!std::isfinite(a[i]) || !std::isfinite(ref[i])) continue;
    d.push_back(a[i] - ref[i]);
    va.push_back(a[i]);
    vr.push_back(ref[i]);
  }
  PairedChange c;
  const Interval di = MeanInterval(d);
  c.n = di.n;
  c.diff = di.mean;
  c.diff_half = di.half;
  const double ma = MeanOrNaN(va), mr = MeanOrNaN(vr);
  c.ratio = c.n > 0 && mr != 0 ? ma / mr : kNaN;
  c.ratio_half = c.n > 0 && mr != 0 ? di.half / std::fabs(mr) : kNaN;
  c.significant = std::isfinite(di.half) && std::fabs(di.mean) > di.half;
  return c;
}

nlohmann::json ReplicaMeans(const std::vector<Metrics>& replicas) {
  const std::vector<nlohmann::json> js = ToJson(replicas);
  nlohmann::json out = js.front();
  const Paths paths = NumericPaths(js);
  for (const std::string& k : paths.top)
    out[k] = NumberOrNull(MeanInterval(Column(js, "", k)).mean);
  nlohmann::json reasons = nlohmann::json::object();
  std::set<std::string> names;
  for (const nlohmann::json& j : js) {
    for (const auto& [reason, n] : j["rejected_reasons"].items()) names.insert(reason);
  }
  for (const std::string& r : names) {
    double sum = 0;
    for (const nlohmann::json& j : js) {
      if (j["rejected_reasons"].contains(r)) sum += Number(j["rejected_reasons"][r]);
    }
    reasons[r] = sum / static_cast<double>(js.size());
  }
  out["rejected_reasons"] = reasons;
  nlohmann::json pp = nlohmann::json::object();
  for (const auto& [profile, fields] : paths.profile_fields) {
    for (const std::string& f : fields) {
      pp[profile][f] = NumberOrNull(MeanInterval(Column(js, profile, f)).mean);
    }
  }
  out["per_profile"] = pp;
  return out;
}

nlohmann::json ReplicaHalfWidths(const std::vector<Metrics>& replicas) {
  const std::vector<nlohmann::json> js = ToJson(replicas);
  const Paths paths = NumericPaths(js);
  nlohmann::json out = nlohmann::json::object();
  for (const std::string& k : paths.top)
    out[k] = NumberOrNull(MeanInterval(Column(js, "", k)).half);
  nlohmann::json pp = nlohmann::json::object();
  for (const auto& [profile, fields] : paths.profile_fields) {
    for (const std::string& f : fields) {
      pp[profile][f] = NumberOrNull(MeanInterval(Column(js, profile, f)).half);
    }
  }
  out["per_profile"] = pp;
  return out;
}

nlohmann::json PairedToJson(const std::vector<Metrics>& a, const std::vector<Metrics>& ref) {
  const std::vector<nlohmann::json> ja = ToJson(a), jr = ToJson(ref);
  std::vector<nlohmann::json> both = ja;
  both.insert(both.end(), jr.begin(), jr.end());
  const Paths paths = NumericPaths(both);
  nlohmann::json out = nlohmann::json::object();
  for (const std::string& k : paths.top) {
    out[k] = PairedJson(ComparePaired(Column(ja, "", k), Column(jr, "", k)));
  }
  nlohmann::json pp = nlohmann::json::object();
  for (const auto& [profile, fields] : paths.profile_fields) {
    for (const std::string& f : fields) {
      pp[profile][f] = PairedJson(ComparePaired(Column(ja, profile, f), Column(jr, profile, f)));
    }
  }
  out["per_profile"] = pp;
  return out;
}

std::vector<double> ValuesOf(const std::vector<Metrics>& replicas, const std::string& key) {
  const std::vector<nlohmann::json> js = ToJson(replicas);
  if (key.rfind("per_profile/", 0) == 0) {
    const std::string rest = key.substr(12);
    const size_t slash = rest.rfind('/');
    if (slash == std::string::npos) return std::vector<double>(js.size(), kNaN);
    return Column(js, rest.substr(0, slash), rest.substr(slash + 1));
  }
  return Column(js, "", key);
}

std::vector<JobCounts> JobCountsOf(const std::vector<Metrics>& replicas) {
  std::vector<JobCounts> out;
  for (const Metrics& m : replicas) {
    out.push_back({m.mode == "fill", static_cast<double>(m.jobs_total),
                   static_cast<double>(m.jobs_completed), static_cast<double>(m.rejected)});
  }
  return out;
}

std::vector<JobCounts> JobCountsOfJson(const nlohmann::json& run) {
  auto counts = [](const nlohmann::json& m) {
    JobCounts c;
    if (!m.is_object()) return c;
    auto mode = m.find("mode");
    c.fill = mode != m.end() && mode->is_string() && mode->get<std::string>() == "fill";
    c.total = m.contains("jobs_total") ? Number(m["jobs_total"]) : kNaN;
    c.completed = m.contains("jobs_completed") ? Number(m["jobs_completed"]) : kNaN;
    c.rejected = m.contains("rejected") ? Number(m["rejected"]) : kNaN;
    return c;
  };
  std::vector<JobCounts> out;
  auto it = run.is_object() ? run.find("replica_results") : run.end();
  if (it != run.end() && it->is_array()) {
    for (const nlohmann::json& r : *it) out.push_back(counts(r));
  } else {
    out.push_back(counts(run));
  }
  return out;
}

JobCountsMismatch CompareJobCounts(const std::vector<JobCounts>& run,
                                   const std::vector<JobCounts>& reference) {
  // Unknown (NaN) in either: not compared.
  auto differ = [](double a, double b) { return !std::isnan(a) && !std::isnan(b) && a != b; };
  auto first_difference = [&](const JobCounts& a, const JobCounts& b,
                              size_t r) -> JobCountsMismatch {
    if (differ(a.total, b.total)) return {"jobs_total", r, a.total, b.total};
    if (differ(a.completed, b.completed)) return {"jobs_completed", r, a.completed, b.completed};
    if (!a.fill && !b.fill && differ(a.rejected, b.rejected)) {
      return {"rejected", r, a.rejected, b.rejected};
    }
    return {};
  };
  if (run.size() != reference.size()) {
    // Nothing pairs: the mean counts (of the replicas that have each).
    auto means = [](const std::vector<JobCounts>& v) {
      JobCounts m;
      auto mean = [&](double JobCounts::*field) {
        std::vector<double> x;
        for (const JobCounts& c : v) x.push_back(c.*field);
        return MeanInterval(x).mean;
      };
      m.total = mean(&JobCounts::total);
      m.completed = mean(&JobCounts::completed);
      m.rejected = mean(&JobCounts::rejected);
      for (const JobCounts& c : v) m.fill = m.fill || c.fill;
      return m;
    };
    return first_difference(means(run), means(reference), JobCountsMismatch::kMeans);
  }
  for (size_t r = 0; r < run.size(); ++r) {
    JobCountsMismatch m = first_difference(run[r], reference[r], r);
    if (!m.comparable()) return m;
  }
  return {};
}

bool ComparableToReference(const std::vector<Metrics>& run, const std::vector<Metrics>& reference) {
  return CompareJobCounts(JobCountsOf(run), JobCountsOf(reference)).comparable();
}

uint64_t ReplicaSeed(uint64_t seed, int r) { return seed + static_cast<uint64_t>(r); }

void JitterWorkload(std::vector<WorkloadJob>* jobs, double fraction, uint64_t seed) {
  if (jobs->empty() || !(fraction > 0)) return;
  Rng rng(Rng::DeriveSeed(seed, 3));
  auto factor = [&] { return 1 - fraction + 2 * fraction * rng.Uniform01(); };
  std::vector<WorkloadJob>& j = *jobs;
  double prev_old = j.front().arrival_s, prev_new = prev_old;
  for (size_t i = 1; i < j.size(); ++i) {
    const double gap = j[i].arrival_s - prev_old;
    prev_old = j[i].arrival_s;
    prev_new += gap * factor();
    j[i].arrival_s = prev_new;
  }
  for (WorkloadJob& job : j) job.duration_s *= factor();
}

}  // namespace migsched
