#include "slurm/job_request.h"

#include <fmt/format.h>

#include <charconv>

#include "slurm/gres_config.h"

namespace migsched::slurm {

Marker ParseMarker(std::string_view comment) {
  Marker m;
  size_t pos = 0;
  while (pos < comment.size()) {
    const size_t end = comment.find_first_of(" \t\n,;", pos);
    const std::string_view word =
        comment.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    pos = end == std::string_view::npos ? comment.size() : end + 1;
    if (word.empty()) continue;
    if (word == "latency-sensitive" || word == "latency_sensitive") {
      m.latency_sensitive = true;
    } else if (word == "migratable=restart") {
      m.migratable = Migratable::kRestart;
    } else if (word == "migratable=none") {
      m.migratable = Migratable::kNone;
    } else if (word.rfind("migratable", 0) == 0) {
      m.error = word == "migratable=checkpoint"
                    ? "migratable=checkpoint: Slurm jobs can only be restarted elsewhere "
                      "(migratable=restart); the job will not be moved"
                    : fmt::format(
                          "'{}': expected migratable=restart or migratable=none; the job "
                          "will not be moved",
                          word);
      m.migratable = Migratable::kNone;
      return m;
    }
  }
  return m;
}

std::string JobKey(int64_t job_id) { return fmt::format("slurm:{}", job_id); }

std::optional<int64_t> JobIdOfKey(std::string_view key) {
  if (key.rfind("slurm:", 0) != 0) return std::nullopt;
  const std::string_view digits = key.substr(6);
  int64_t id = 0;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), id);
  if (ec != std::errc() || p != digits.data() + digits.size() || digits.empty() || id <= 0) {
    return std::nullopt;
  }
  return id;
}

std::string RoomKey(const PlacementRef& p) {
  return fmt::format("{}{}:{}:{}", kRoomPrefix, p.gpu, p.profile, p.start);
}

StatusOr<std::vector<ProfileCount>> MigProfilesOf(const std::vector<GresCount>& gres,
                                                  std::string_view gres_name) {
  std::vector<ProfileCount> out;
  for (const GresCount& g : gres) {
    if (g.name != gres_name) continue;
    if (g.type.empty()) {
      return InvalidArgumentError(fmt::format(
          "--gres={}:{} names no MIG profile: ask for --gres={}:<profile>:<count>, e.g. "
          "--gres={}:3g.20gb:1",
          gres_name, g.count, gres_name, gres_name));
    }
    if (g.type == kPadType) {
      return InvalidArgumentError(fmt::format(
          "--gres={}:{}: not a MIG profile (it keeps the nodes' GRES totals constant); ask for "
          "--gres={}:<profile>:<count>, e.g. --gres={}:3g.20gb:1",
          gres_name, g.type, gres_name, gres_name));
    }
    if (g.count <= 0) {
      return InvalidArgumentError(
          fmt::format("--gres={}:{}:{}: the count must be at least 1", gres_name, g.type, g.count));
    }
    // Slurm counts a profile listed twice once (its JOB_GRES shows one entry), so instances for
    // both would be more than it accounts for (regression: repeated_profile_got_more_than_slurm
    // _counted).
    for (const ProfileCount& p : out) {
      if (p.profile == g.type) {
        return InvalidArgumentError(fmt::format(
            "--gres names {}:{} twice; Slurm counts it once: ask for the total in one entry, "
            "e.g. --gres={}:{}:{}",
            gres_name, g.type, gres_name, g.type, p.count + g.count));
      }
    }
    out.push_back({g.type, static_cast<int>(g.count)});
  }
  return out;
}

StatusOr<std::optional<JobRequest>> ToJobRequest(const SlurmJob& job, std::string_view gres_name) {
  JobRequest r;
  ASSIGN_OR_RETURN(r.job.per_node, MigProfilesOf(job.tres_per_node, gres_name));
  if (r.job.per_node.empty()) return std::optional<JobRequest>();
  r.job.key = JobKey(job.id);
  r.job.num_nodes = std::max(1, job.node_count);
  r.job.allowed_nodes = job.required_nodes;
  r.job.excluded_nodes = job.excluded_nodes;
  r.job.waiting_since_s = static_cast<double>(job.eligible_time);
  r.job.time_limit_s = job.time_limit_min > 0 ? 60.0 * static_cast<double>(job.time_limit_min) : 0;
  const Marker m = ParseMarker(job.comment);
  r.marker_error = m.error;
  r.job.latency_sensitive = m.latency_sensitive;
  r.job.migratable = MigratableOf(m, job.requeue);
  if (m.migratable == Migratable::kRestart && !job.requeue && r.marker_error.empty()) {
    r.marker_error = "migratable=restart without --requeue: the job will not be moved";
  }
  return std::optional<JobRequest>(std::move(r));
}

}  // namespace migsched::slurm
