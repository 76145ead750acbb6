// One round of the Slurm controller, the pure part (docs/algorithms-cluster.md
// §14.3-§14.4): which Slurm jobs wait for migsched (in Slurm's priority order)
// and which hold nodes, which rooms those running ones have already taken,
// and the GRES counts to publish per node once the plan is made.
//
// Thread-safety: pure functions.
#ifndef MIGSCHED_SLURM_ROUND_H_
#define MIGSCHED_SLURM_ROUND_H_

#include <map>
#include <string>
#include <vector>

#include "cluster/cluster_view.h"
#include "cluster/planner.h"
#include "slurm/job_request.h"
#include "slurm/slurm_output.h"

namespace migsched::slurm {

struct ClassifiedJob {
  const SlurmJob* slurm = nullptr;
  JobRequest request;
};

struct Classified {
  // PENDING, eligible now (not held, no BeginTime or dependency), in Slurm's
  // order: priority descending, then job id ascending.
  std::vector<ClassifiedJob> waiting;
  // Holding their nodes (RUNNING, CONFIGURING, COMPLETING, SUSPENDED).
  std::vector<ClassifiedJob> active;
  // MIG jobs whose request migsched can never place (message for AdminComment),
  // not yet held by migsched.
  std::vector<std::pair<const SlurmJob*, std::string>> invalid;
  // Requeued for a waiting job that still waits (AdminComment "requeued to
  // open room for ..."), grouped by that job.
  std::vector<InFlightMigration> in_flight;
  // Requeued jobs whose job no longer waits: their BeginTime can go.
  std::vector<const SlurmJob*> release_begin_time;
};

// The MIG jobs of `partition` (every job when empty).
Classified ClassifyJobs(const std::vector<SlurmJob>& jobs, const std::string& partition,
                        const std::string& gres_name, double now_s);

// Slurm's GRES count per (node, profile) of the active jobs, and of those not
// yet bound (no allocation owned by their key on that node in the view).
// A job Slurm shows RUNNING whose AdminComment records a binding on a usable
// node where the view has no allocation of it has *lost* its allocation (a
// node reboot took the instances, an operator released them): it is listed
// in `lost` as (job key, node) and not counted as unbound, so no room is
// claimed for it (its prolog ran already; it never binds again).
struct ActiveCounts {
  std::map<std::pair<std::string, std::string>, int> all;
  std::map<std::pair<std::string, std::string>, int> unbound;
  std::vector<std::pair<std::string, std::string>> lost;
};
ActiveCounts CountActive(const std::vector<ClassifiedJob>& active, const ClusterView& view);

// "n1/slurm-room:0:3g.20gb:4": a room's name across nodes (keys repeat per node).
std::string RoomId(const std::string& node, const std::string& key);

// The view's reservations under kRoomPrefix as the planner's pooled
// reservations; per (node, profile), as many as `counts.unbound` says are
// claimed (taken by a started job the prolog has not bound yet), in key
// order. `first_seen` (RoomId -> when first seen, seconds) decides which are
// timed out (older than `timeout_s` and not claimed).
std::vector<EngineReservation> Rooms(const ClusterView& view, const ActiveCounts& counts,
                                     const std::map<std::string, double>& first_seen, double now_s,
                                     double timeout_s);

// Key prefix of the demand StartedWithoutRoom returns ("slurm-started:n2:7g.40gb").
inline constexpr std::string_view kStartedPrefix = "slurm-started:";

// The demand of jobs Slurm has started that no room covers: per (node,
// profile), what `counts.unbound` asks for beyond the rooms of `rooms` that
// are claimed there. Slurm may start a job where an ended job's count was
// freed before that job's epilog released its instance; the job's prolog
// then binds to free placements of its node. Each (node, profile) with such
// demand becomes one job of the planner, pinned to the node, waiting since
// `now_s` (so that neither the look-ahead reservation nor a minimum wait
// applies to it), keyed kStartedPrefix + "node:profile", in node then
// profile order: planned before every waiting job, it keeps the room it
// needs from being given to one (docs/algorithms-cluster.md §14.4, "Claims").
std::vector<ClusterJob> StartedWithoutRoom(const ActiveCounts& counts,
                                           const std::vector<EngineReservation>& rooms,
                                           const ClusterView& view, double now_s);

// The Gres= list to publish on a node: for each MIG type Slurm lists for it
// (`current`, other GRES kept as they are), the active jobs' count plus the
// rooms held for waiting jobs (`rooms`), at most the node's ceiling (what
// its GPUs hold at once); for a node that is not usable, only its active
// jobs' count (nothing new starts there, and Slurm's own accounting of what
// its running jobs hold is never pushed under zero). The type kPadType
// (gres_config.h), where Slurm lists it, gets what the other MIG types leave
// of the node's current MIG total (never below 0), so that the total Slurm
// knows the node by stays what slurm.conf and gres.conf say: a slurmd
// registering with another total while jobs use the GRES drains the node.
std::vector<GresCount> CountsToPublish(
    const SlurmNode& current, const std::string& gres_name, int view_node, const ClusterView& view,
    const ActiveCounts& active, const std::map<std::pair<std::string, std::string>, int>& rooms);

}  // namespace migsched::slurm

#endif  // MIGSCHED_SLURM_ROUND_H_
