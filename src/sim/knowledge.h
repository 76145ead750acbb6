// What the scheduler may know of a job, and what only the simulator knows
// (docs/algorithms.md §9, "Run-time knowledge").
//
// A workload's Job holds both the request (profile or fraction, count, flags,
// arrival, the user's time limit) and the run's truth (duration_s, pcie_gbps,
// alpha). The scheduler and its policies are given only SchedulerVisibleJob(),
// built here in one place: its duration_s is what the knowledge mode lets the
// scheduler believe, and the truth it must not see is cleared.
//
// Knowledge modes (`--expected-ends`):
//   limits   (default) the scheduler sees the job's time limit as its duration
//            and start + limit as a running job's expected end; a job without
//            a limit has neither (as the daemon's jobs without time_limit_s).
//   known    an ORACLE, for reference only: the exact duration (capped at the
//            limit) and the exact expected end, which no real scheduler has.
//   unknown  neither duration nor expected end (as Kubernetes).
//
// Thread-safety: pure functions.
#ifndef MIGSCHED_SIM_KNOWLEDGE_H_
#define MIGSCHED_SIM_KNOWLEDGE_H_

#include <string_view>

#include "core/job.h"
#include "core/status.h"

namespace migsched {

enum class Knowledge { kLimits, kKnown, kUnknown };
std::string_view KnowledgeName(Knowledge k);  // "limits" | "known" | "unknown"
// Parses the three names; kInvalidArgument otherwise.
StatusOr<Knowledge> ParseKnowledge(std::string_view s);

// The job as the scheduler may see it under `k`: name, arrival, profile or
// fraction and rule, count, latency_sensitive, migratable as in `job`;
// duration_s: limits -> time_limit_s (0: none), known -> min(duration_s,
// time_limit_s if any), unknown -> 0; time_limit_s as given except under
// unknown (0); pcie_gbps 0 and alpha 1 (the contention model is the
// simulator's). The only function through which the simulator hands a job to
// the scheduler (Scheduler::Enqueue, CheckCanEverRun, ObserveArrival).
Job SchedulerVisibleJob(const Job& job, Knowledge k);

}  // namespace migsched

#endif  // MIGSCHED_SIM_KNOWLEDGE_H_
