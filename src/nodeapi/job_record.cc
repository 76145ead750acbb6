#include "nodeapi/job_record.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <utility>

namespace migsched {
namespace {

constexpr std::array<std::pair<JobState, std::string_view>, 10> kStateNames = {{
    {JobState::kQueued, "queued"},
    {JobState::kStarting, "starting"},
    {JobState::kRunning, "running"},
    {JobState::kMigrating, "migrating"},
    {JobState::kSucceeded, "succeeded"},
    {JobState::kFailed, "failed"},
    {JobState::kCancelled, "cancelled"},
    {JobState::kRejected, "rejected"},
    {JobState::kReleased, "released"},
    {JobState::kTimeout, "timeout"},
}};

// The life cycle's edges (job_record.h): from → the states it may go to.
struct Edges {
  JobState from;
  std::vector<JobState> to;
};

const std::vector<Edges>& JobEdges() {
  using S = JobState;
  static const std::vector<Edges> edges = {
      {S::kQueued, {S::kStarting, S::kRejected, S::kCancelled}},
      {S::kStarting,
       {S::kRunning, S::kQueued, S::kSucceeded, S::kFailed, S::kCancelled, S::kTimeout}},
      {S::kRunning, {S::kMigrating, S::kSucceeded, S::kFailed, S::kCancelled, S::kTimeout}},
      {S::kMigrating,
       {S::kRunning, S::kStarting, S::kQueued, S::kSucceeded, S::kFailed, S::kCancelled,
        S::kTimeout}},
  };
  return edges;
}

const std::vector<Edges>& AllocationEdges() {
  using S = JobState;
  static const std::vector<Edges> edges = {
      {S::kStarting, {S::kRunning, S::kFailed}},
      {S::kRunning, {S::kReleased, S::kFailed}},
  };
  return edges;
}

}  // namespace

std::string_view JobKindName(JobKind k) { return k == JobKind::kAllocation ? "allocation" : "job"; }

StatusOr<JobKind> ParseJobKind(std::string_view s) {
  if (s == "job") return JobKind::kJob;
  if (s == "allocation") return JobKind::kAllocation;
  return InvalidArgumentError(fmt::format("'{}' is not a job kind (job, allocation)", s));
}

std::string_view JobStateName(JobState s) {
  for (const auto& [state, name] : kStateNames) {
    if (state == s) return name;
  }
  return "unknown";
}

StatusOr<JobState> ParseJobState(std::string_view s) {
  std::string known;
  for (const auto& [state, name] : kStateNames) {
    if (name == s) return state;
    known += fmt::format("{}{}", known.empty() ? "" : ", ", name);
  }
  return InvalidArgumentError(fmt::format("'{}' is not a job state ({})", s, known));
}

const std::vector<JobState>& AllJobStates() {
  static const std::vector<JobState> all = [] {
    std::vector<JobState> v;
    for (const auto& [state, name] : kStateNames) v.push_back(state);
    return v;
  }();
  return all;
}

bool IsTerminal(JobState s) {
  return s == JobState::kSucceeded || s == JobState::kFailed || s == JobState::kCancelled ||
         s == JobState::kRejected || s == JobState::kReleased || s == JobState::kTimeout;
}

JobState InitialState(JobKind kind) {
  return kind == JobKind::kAllocation ? JobState::kStarting : JobState::kQueued;
}

bool IsLegalTransition(JobKind kind, JobState from, JobState to) {
  for (const Edges& e : kind == JobKind::kAllocation ? AllocationEdges() : JobEdges()) {
    if (e.from == from) return std::find(e.to.begin(), e.to.end(), to) != e.to.end();
  }
  return false;
}

DaemonJobRecord NewJobRecord(DaemonJobId id, JobKind kind, double submitted_at) {
  DaemonJobRecord r;
  r.id = id;
  r.kind = kind;
  r.state = InitialState(kind);
  r.submitted_at = submitted_at;
  return r;
}

Status TransitionJob(DaemonJobRecord& r, JobState to, double now) {
  if (!IsLegalTransition(r.kind, r.state, to)) {
    return InternalError(fmt::format(
        "{} {}: no state change {} → {} in the life cycle of {}s (a bug in migsched); it stays {}",
        JobKindName(r.kind), r.id, JobStateName(r.state), JobStateName(to), JobKindName(r.kind),
        JobStateName(r.state)));
  }
  r.state = to;
  if (to == JobState::kRunning && r.started_at == 0) r.started_at = now;
  if (IsTerminal(to)) r.ended_at = now;
  return Status();
}

bool TimeLimitReached(const DaemonJobRecord& r) {
  return r.cancel_requested && r.reason.starts_with(kTimeLimitReason);
}

JobState StoppedState(const DaemonJobRecord& r) {
  return TimeLimitReached(r) ? JobState::kTimeout : JobState::kCancelled;
}

std::string StoppedReason(const DaemonJobRecord& r, std::string_view cancelled) {
  return TimeLimitReached(r) ? r.reason : std::string(cancelled);
}

Job JobRequest::ToJob() const {
  Job job;
  job.name = name;
  job.profile = profile;
  job.gpu_fraction = profile.empty() ? gpu_fraction : 0;
  job.count = count;
  job.time_limit_s = time_limit_s;  // the expected run time (0: unknown)
  job.latency_sensitive = latency_sensitive;
  job.migratable = migratable;
  return job;
}

}  // namespace migsched
