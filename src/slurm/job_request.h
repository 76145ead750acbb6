// What a Slurm job asks of migsched: its MIG GRES per node (tres_per_node
// "gres:mig:3g.20gb:1"), its node count and node lists, and the migration
// marker in its --comment.
//
// The marker (docs/slurm.md "Migration"): whitespace-, comma- or
// semicolon-separated words of --comment; migsched reads
//   migratable=restart   the job may be requeued and started again elsewhere
//                        to open room for a waiting job (needs --requeue)
//   migratable=none      the default: never moved
//   latency-sensitive    never moved, even with migratable=restart
// and ignores every other word. A word starting with "migratable" that is
// not one of these (migratable=yes, migratable:restart, migratable=checkpoint)
// is a malformed marker: the job is not moved and the reason says why.
//
// Thread-safety: pure functions.
#ifndef MIGSCHED_SLURM_JOB_REQUEST_H_
#define MIGSCHED_SLURM_JOB_REQUEST_H_

#include <optional>
#include <string>
#include <string_view>

#include "cluster/planner.h"
#include "core/job.h"
#include "core/status.h"
#include "slurm/slurm_output.h"

namespace migsched::slurm {

struct Marker {
  Migratable migratable = Migratable::kNone;
  bool latency_sensitive = false;
  std::string error;  // non-empty: a malformed marker, what is wrong
};
Marker ParseMarker(std::string_view comment);
// How the controller takes a job's marker: migratable as marked only with --requeue (Slurm cannot
// requeue the job otherwise, so it never moves). The one rule of ToJobRequest and the prolog.
inline Migratable MigratableOf(const Marker& m, bool requeue) {
  return requeue ? m.migratable : Migratable::kNone;
}

// "slurm:1234": the owner key of a Slurm job's allocations; JobIdOfKey is its inverse
// (nullopt for any other key).
std::string JobKey(int64_t job_id);
std::optional<int64_t> JobIdOfKey(std::string_view key);

// The key prefix of the controller's reservations ("rooms"), and the key of
// the room at a placement: "slurm-room:<gpu>:<profile>:<start>".
inline constexpr std::string_view kRoomPrefix = "slurm-room:";
std::string RoomKey(const PlacementRef& p);

struct JobRequest {
  ClusterJob job;            // key, per-node request, nodes, marker
  std::string marker_error;  // from ParseMarker
};

// The MIG instances a GRES request asks for per node: every entry of `gres` named `gres_name`, as
// (profile, count), in the order listed; empty for a request without such an entry.
// kInvalidArgument, in the user's terms (--gres=...), for an entry without a profile
// ("--gres=mig:2"), with the nodes' padding type, with a count below 1, or for a profile listed
// twice (Slurm counts it once). The one rule of the controller (ToJobRequest) and the prologs
// (hooks.h).
StatusOr<std::vector<ProfileCount>> MigProfilesOf(const std::vector<GresCount>& gres,
                                                  std::string_view gres_name);

// The job's MIG request, or nullopt for a job without GRES `gres_name`.
// kInvalidArgument (the job can never be placed; the message is for its
// AdminComment) for a MIG GRES without a profile ("--gres=mig:2") or with a
// count of 0, or a profile listed twice. A job may move
// only with --requeue and migratable=restart.
StatusOr<std::optional<JobRequest>> ToJobRequest(const SlurmJob& job, std::string_view gres_name);

}  // namespace migsched::slurm

#endif  // MIGSCHED_SLURM_JOB_REQUEST_H_
