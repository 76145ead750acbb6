// NodeModel: the daemon's model of its node, the scheduler core's view of
// it: the managed GPUs (discovery order = cluster index; each with its NVML
// index, UUID and catalog model), the Cluster of their MIG instances, the
// Scheduler with the configured policy, and why each GPU is drained.
//
// Drains (Cluster::SetDrained: no new placement on the GPU, whatever runs
// there goes on) have two independent reasons, and a GPU is drained while
// either holds:
//   operator     `migsched drain` / POST /v1/gpus/{i}/drain, kept in the job
//                store across restarts, ended by undrain;
//   unreachable  the backend could not reach the GPU (fallen off the bus,
//                driver gone); ended when a later look at it succeeds.
//
// The generation counts every change of what GET /v1/node shows (instances,
// their holders, drains, reservations): with the boot id (new at every start)
// a controller tells a stale view from a current one.
//
// Thread-safety: none of its own; the daemon's state lock guards it.
#ifndef MIGSCHED_DAEMON_NODE_MODEL_H_
#define MIGSCHED_DAEMON_NODE_MODEL_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/cluster.h"
#include "core/config_table.h"
#include "daemon/discovery.h"
#include "nodeapi/job_record.h"
#include "sched/scheduler.h"

namespace migsched {

// How long a job whose decision hit an internal error in the scheduler core waits before it is
// tried again (seconds; Scheduler::SetContainInternalErrors).
inline constexpr double kInternalErrorRetryS = 60;

class NodeModel {
 public:
  // The model of `inventory` (instances not adopted yet: see
  // InstanceSync) with policy `policy` configured by `options` (already
  // completed with the policy's defaults). kNotFound / kInvalidArgument from
  // the policy registry.
  static StatusOr<std::unique_ptr<NodeModel>> Create(NodeInventory inventory,
                                                     const std::string& policy,
                                                     const SchedulerOptions& options, Clock* clock);

  int size() const { return cluster_->size(); }
  Cluster& cluster() { return *cluster_; }
  const Cluster& cluster() const { return *cluster_; }
  Scheduler& scheduler() { return *scheduler_; }
  const Scheduler& scheduler() const { return *scheduler_; }
  const NodeInventory& inventory() const { return inventory_; }
  const std::string& policy_name() const { return policy_; }
  const SchedulerOptions& options() const { return scheduler_->options(); }

  // The daemon's two GPU numbers meet here alone: cluster index (a position
  // in cluster(), what the scheduler core plans with) → NVML index (what the
  // node API and the backends speak), and back (-1 if not managed).
  NvmlIndex nvml(int gpu) const { return NvmlIndex::Of(inventory_.gpus[gpu].gpu.index); }
  int ClusterIndex(NvmlIndex nvml_index) const;
  const std::string& uuid(int gpu) const { return inventory_.gpus[gpu].gpu.uuid; }

  // The cluster's placement of `spec` (NVML index, profile name, start):
  // kNotFound for an unmanaged GPU, kInvalidArgument for a profile the GPU
  // does not offer (the message lists its profiles).
  StatusOr<InstanceRef> Resolve(NvmlIndex nvml_index, const std::string& profile, int start) const;
  // The profile index on `gpu` of a request's profile name, or -1.
  int ProfileIndex(int gpu, const std::string& profile) const;
  // The base profiles offered by any GPU, comma-separated (for messages).
  std::string OfferedProfiles() const;
  // OK when some GPU of the node offers a profile for `job` (its profile, or
  // one large enough for its gpu_fraction); kInvalidArgument naming the
  // profiles offered otherwise.
  Status CheckOffered(const Job& job) const;

  // ---- Drains ----
  enum class DrainReason { kOperator, kUnreachable };
  // `why`: for kUnreachable, the backend's answer (its message and reason).
  void SetDrain(int gpu, DrainReason reason, bool on, const Status& why = Status());
  bool drained_by_operator(int gpu) const;
  // Why the backend cannot reach `gpu` ("" when it can).
  std::string unreachable(int gpu) const;
  // Whether the backend cannot reach `gpu` because the GPU needs a reset
  // (StatusReason::kNeedsReset).
  bool needs_reset(int gpu) const;
  // UUIDs of the operator-drained GPUs (what the job store keeps).
  std::vector<std::string> OperatorDrainedUuids() const;

  // ---- What /v1/node shows ----
  uint64_t generation() const;
  // A change not seen by the cluster's journal (a reservation's expiry, a holder's record).
  void Touch() { ++touches_; }
  const std::string& boot_id() const { return boot_id_; }

 private:
  NodeModel() = default;

  NodeInventory inventory_;
  std::string policy_;
  ConfigTableCache tables_;
  std::unique_ptr<Cluster> cluster_;
  std::unique_ptr<Scheduler> scheduler_;
  std::map<int, bool> operator_drained_;  // cluster GPU -> drained
  std::map<int, Status> unreachable_;     // cluster GPU -> the backend's answer
  uint64_t touches_ = 0;
  std::string boot_id_;
};

}  // namespace migsched

#endif  // MIGSCHED_DAEMON_NODE_MODEL_H_
