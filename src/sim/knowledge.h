// What the scheduler may know of a job, and what only the simulator knows
// (docs/algorithms.md §9, "Run-time knowledge").
//
// A workload's job (io/workload_job.h) is the request (Job: profile or
// fraction, count, flags, arrival, the user's time limit) plus the run's truth
// (RunTruth: duration_s, pcie_gbps, alpha). The scheduler and its policies take
// only a Job, built here in one place; its time limit is the one run time the
// scheduler knows (its expected run time; a running job's expected end is its
// start + that limit), and what the knowledge mode lets it believe.
//
// Knowledge modes (`--expected-ends`):
//   limits   (default) the scheduler sees the user's time limit, and start +
//            limit as a running job's expected end; a job without a limit has
//            neither (as the daemon's jobs without time_limit_s).
//   known    an ORACLE, for reference only: the limit the scheduler sees is the
//            exact run time (capped at the real limit), as if every user gave a
//            perfect limit, so expected ends are exact; no real scheduler has it.
//   unknown  no limit, so no expected run time or end (as Kubernetes).
//
// Thread-safety: pure functions.
#ifndef MIGSCHED_SIM_KNOWLEDGE_H_
#define MIGSCHED_SIM_KNOWLEDGE_H_

#include <string_view>

#include "core/status.h"
#include "io/workload_job.h"

namespace migsched {

enum class Knowledge { kLimits, kKnown, kUnknown };
std::string_view KnowledgeName(Knowledge k);  // "limits" | "known" | "unknown"
// Parses the three names; kInvalidArgument otherwise.
StatusOr<Knowledge> ParseKnowledge(std::string_view s);

// The request as the scheduler may see it under `k`: name, arrival, profile
// or fraction and rule, count, latency_sensitive, migratable as in `job`;
// time_limit_s: limits -> the job's limit (0: none), known -> min(duration_s,
// the limit if any), unknown -> 0. The only function through which the
// simulator hands a job to the scheduler (Scheduler::Enqueue, CheckCanEverRun,
// ObserveArrival); the simulator enforces the real limit from the workload.
Job SchedulerVisibleJob(const WorkloadJob& job, Knowledge k);

}  // namespace migsched

#endif  // MIGSCHED_SIM_KNOWLEDGE_H_
