#include "core/job.h"

#include <fmt/format.h>

#include <algorithm>

namespace migsched {

std::string_view MigratableName(Migratable m) {
  switch (m) {
    case Migratable::kNone:
      return "none";
    case Migratable::kRestart:
      return "restart";
    case Migratable::kCheckpoint:
      return "checkpoint";
  }
  return "none";
}

StatusOr<Migratable> ParseMigratable(std::string_view s) {
  if (s == "none") return Migratable::kNone;
  if (s == "restart") return Migratable::kRestart;
  if (s == "checkpoint") return Migratable::kCheckpoint;
  return InvalidArgumentError(fmt::format("'{}' is not one of none, restart, checkpoint", s));
}

std::string_view HolderName(Holder h) {
  switch (h) {
    case Holder::kJob:
      return "job";
    case Holder::kReservation:
      return "reservation";
    case Holder::kPlaceholder:
      return "placeholder";
  }
  return "job";
}

std::string_view FractionRuleName(FractionRule r) {
  return r == FractionRule::kMemory ? "memory" : "compute";
}

StatusOr<FractionRule> ParseFractionRule(std::string_view s) {
  if (s == "compute") return FractionRule::kCompute;
  if (s == "memory") return FractionRule::kMemory;
  return InvalidArgumentError(fmt::format("'{}' is not one of compute, memory", s));
}

std::string Job::RequestString() const {
  std::string what = profile.empty() ? fmt::format("gpu_fraction {}", gpu_fraction) : profile;
  if (count > 1) return fmt::format("{}x{}", count, what);
  return what;
}

NamedRequest NameRequest(const std::vector<const GpuModel*>& models, const Job& job) {
  if (!job.profile.empty()) return {job.RequestString(), ""};
  std::vector<std::string> names;
  for (const GpuModel* m : models) {
    const int p = ResolveProfile(*m, job);
    if (p < 0) continue;
    const std::string& name = m->profile(p).name;
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  if (names.empty()) return {job.RequestString(), ""};
  std::string what;
  for (const std::string& n : names) what += (what.empty() ? "" : " or ") + n;
  // "2x(4g.20gb or 2g.12gb)": the count is the gang's whatever the model (regression:
  // gang_count_read_as_one_alternatives: "2x4g.20gb or 2g.12gb").
  if (job.count > 1) {
    what = names.size() > 1 ? fmt::format("{}x({})", job.count, what)
                            : fmt::format("{}x{}", job.count, what);
  }
  return {what, fmt::format(" (gpu_fraction {})", job.gpu_fraction)};
}

RequestKey RequestKeyOf(const Job& job) {
  return {job.profile, job.gpu_fraction, static_cast<int>(job.fraction_rule), job.count};
}

int ResolveProfile(const GpuModel& model, const Job& job) {
  if (!job.profile.empty()) return model.FindProfile(job.profile);
  // Base profiles are ordered by compute then memory slices, so the first that
  // satisfies the rule is the smallest.
  constexpr double kEps = 1e-9;
  int best = -1;
  for (int b : model.base_profiles()) {
    const Profile& p = model.profile(b);
    double frac = job.fraction_rule == FractionRule::kCompute
                      ? static_cast<double>(p.compute_slices) / model.compute_slices()
                      : static_cast<double>(p.memory_slices) / model.memory_slices();
    if (frac + kEps >= job.gpu_fraction) {
      if (best < 0) {
        best = b;
        continue;
      }
      // Smallest by the rule's own measure first, then by the other one.
      const Profile& q = model.profile(best);
      auto key = [&](const Profile& x) {
        return job.fraction_rule == FractionRule::kCompute
                   ? std::pair(x.compute_slices, x.memory_slices)
                   : std::pair(x.memory_slices, x.compute_slices);
      };
      if (key(p) < key(q)) best = b;
    }
  }
  return best;
}

}  // namespace migsched
