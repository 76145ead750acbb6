// Jobs: what a workload asks of the cluster (§4, §10 of docs/algorithms.md).
//
// A job requests `count` instances of one MIG profile (a gang when count > 1,
// started together or not at all). The profile is either named exactly
// ("3g.20gb", valid only on models that offer that name) or given as a GPU
// fraction in (0, 1], resolved per GPU model by `fraction_rule`.
//
// `Job` is the request, and only the request: all that a policy, the scheduler
// and the drivers (daemon, Slurm, Kubernetes) ever see. How long a job really
// runs, its PCIe demand and its contention sensitivity are the run's truth,
// which only the simulator knows (io/workload_job.h: WorkloadJob = Job +
// RunTruth); the type has no field for them, so no policy can read them (§9,
// "Run-time knowledge").
//
// Thread-safety: plain values.
#ifndef MIGSCHED_CORE_JOB_H_
#define MIGSCHED_CORE_JOB_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/gpu_model.h"
#include "core/status.h"

namespace migsched {

// A job's id, unique among the jobs of one scheduler: the simulator numbers
// a workload's jobs 0, 1, ... in arrival order; the daemon uses its job
// store's ids (positive, never reused). 64 bits: a long-lived daemon's ids
// never wrap.
using JobId = int64_t;
inline constexpr JobId kNoJob = -1;

// Who holds a busy instance (§1: busy = held, not free for another job).
// Only kJob holders are scheduled jobs (they run, end, may migrate); the
// others are holds that the scheduler never moves or ends by itself:
//   kReservation  a placement held for a cluster controller (docs/api.md:
//                 reservations) until it is bound to a job or released;
//   kPlaceholder  an instance the backend still has although nothing uses it
//                 (its destroy answered "in use"), held until the destroy succeeds.
// A hold's id is its holder's own (a reservation's or placeholder's number);
// ids of different kinds never clash.
enum class Holder : uint8_t { kJob, kReservation, kPlaceholder };
// "job" | "reservation" | "placeholder".
std::string_view HolderName(Holder h);

// How a job may be moved (§6).
enum class Migratable {
  kNone,        // never moved
  kRestart,     // stopped and restarted; loses progress since its last checkpoint
  kCheckpoint,  // state copied make-before-break
};
std::string_view MigratableName(Migratable m);
// Parses "none" | "restart" | "checkpoint".
StatusOr<Migratable> ParseMigratable(std::string_view s);

// How a GPU fraction becomes a profile on a given model (§10).
enum class FractionRule {
  kCompute,  // smallest base profile with compute_slices / model compute_slices >= fraction
  kMemory,   // smallest base profile with memory_slices / model memory_slices >= fraction
};
std::string_view FractionRuleName(FractionRule r);
StatusOr<FractionRule> ParseFractionRule(std::string_view s);

// Whether a job that moves by `migratable` (§6), latency-sensitive or not, can never leave the GPU
// it is placed on: migratable `none`, or latency-sensitive (it moves only within its GPU). Such a
// job *anchors* its GPU (Cluster::SetJobAnchored; the anchored-together rule of §4 step 2). The
// one home of the rule (Job::anchors, ClusterJob::anchors).
inline bool Anchors(Migratable migratable, bool latency_sensitive) {
  return migratable == Migratable::kNone || latency_sensitive;
}

struct Job {
  std::string name;         // the trace's id column
  double arrival_s = 0;     // seconds since the start of the workload
  std::string profile;      // exact profile name; empty when gpu_fraction is used
  double gpu_fraction = 0;  // in (0, 1] when profile is empty
  FractionRule fraction_rule = FractionRule::kCompute;
  int count = 1;  // instances wanted together (gang), >= 1
  // The user's time limit (Slurm's TimeLimit, the daemon's time_limit_s), seconds
  // from the job's start, > 0; 0 = none given. The only run time a scheduler
  // knows: a job's expected run time is its limit, a running job's expected end
  // its start + its limit, and without a limit both are unknown (§9, §13). A job
  // still running at its limit is ended there (Slurm, the daemon; the
  // simulator's outcome `timeout`).
  double time_limit_s = 0;
  // Never moved to another GPU; may still be moved within its GPU (§6).
  bool latency_sensitive = false;
  Migratable migratable = Migratable::kNone;
  // An engine's allocation on a node daemon (a pod, a Slurm job) that its engine may move (evict,
  // requeue) though this scheduler never does (`migratable` kNone here): it does not anchor its
  // GPU (§4 step 2; the allocation's `anchors`, docs/api.md).
  bool moved_by_owner = false;

  // Whether the job can never leave the GPU it is placed on: Anchors below, unless its owner may
  // move it (moved_by_owner).
  bool anchors() const;

  // A readable request, e.g. "3g.20gb", "2x7g.40gb", "gpu_fraction 0.46".
  std::string RequestString() const;
};

inline bool Job::anchors() const {
  return !moved_by_owner && Anchors(migratable, latency_sensitive);
}

// A request as a reason names it, on the GPU models `models`: `what` is the
// profile, or for a gpu_fraction the profiles it resolves to on those models
// (in their order, distinct, joined by " or "), with "Nx" before it for a
// gang (around parentheses where there are several: "2x(4g.20gb or 2g.12gb)");
// `fraction` is " (gpu_fraction F)" for a fraction, else empty. E.g.
// {"4g.20gb", " (gpu_fraction 0.5714285714285714)"}, {"2x3g.40gb", ""}. A
// fraction no model resolves keeps RequestString()'s words.
struct NamedRequest {
  std::string what;
  std::string fraction;
};
NamedRequest NameRequest(const std::vector<const GpuModel*>& models, const Job& job);

// What makes two jobs "the same request" for placement: the same profile
// (or fraction and rule) and count. Jobs with equal keys fit or do not fit
// alike (the scheduler's and the simulator's memos key on it).
using RequestKey = std::tuple<std::string, double, int, int>;
RequestKey RequestKeyOf(const Job& job);

// The profile index on `model` that `job` asks for, or -1 if the model cannot
// offer it (unknown name, or no base profile large enough for the fraction).
// A named variant (e.g. "1g.5gb+me") resolves to itself.
int ResolveProfile(const GpuModel& model, const Job& job);

}  // namespace migsched

#endif  // MIGSCHED_CORE_JOB_H_
