#include "daemon/job_record.h"

#include <fmt/format.h>

#include <array>
#include <utility>

namespace migsched {
namespace {

constexpr std::array<std::pair<JobState, std::string_view>, 8> kStateNames = {{
    {JobState::kQueued, "queued"},
    {JobState::kStarting, "starting"},
    {JobState::kRunning, "running"},
    {JobState::kMigrating, "migrating"},
    {JobState::kSucceeded, "succeeded"},
    {JobState::kFailed, "failed"},
    {JobState::kCancelled, "cancelled"},
    {JobState::kRejected, "rejected"},
}};

}  // namespace

std::string_view JobStateName(JobState s) {
  for (const auto& [state, name] : kStateNames) {
    if (state == s) return name;
  }
  return "unknown";
}

StatusOr<JobState> ParseJobState(std::string_view s) {
  for (const auto& [state, name] : kStateNames) {
    if (name == s) return state;
  }
  return InvalidArgumentError(fmt::format(
      "'{}' is not a job state (queued, starting, running, migrating, succeeded, failed, "
      "cancelled, rejected)",
      s));
}

bool IsTerminal(JobState s) {
  return s == JobState::kSucceeded || s == JobState::kFailed || s == JobState::kCancelled ||
         s == JobState::kRejected;
}

Job JobRequest::ToJob() const {
  Job job;
  job.name = name;
  job.profile = profile;
  job.gpu_fraction = profile.empty() ? gpu_fraction : 0;
  job.count = count;
  job.duration_s = 0;  // unknown for a real process
  job.latency_sensitive = latency_sensitive;
  job.migratable = migratable;
  return job;
}

}  // namespace migsched
