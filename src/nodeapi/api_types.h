// The node API's vocabulary (docs/api.md): the values a node daemon's HTTP
// API shows and takes, in one place below both sides of it. The daemon
// (src/daemon/) serves them; its client (nodeapi/node_client.h) and the
// cluster controllers above it (src/cluster/, src/slurm/, src/k8s/) read
// them, and link only this layer, never the daemon's store, backends or
// NVML code. Jobs and allocations are nodeapi/job_record.h's; the JSON forms
// are nodeapi/request_json.h's.
//
// GPU numbers: the node API names a GPU by its NVML device index (what
// `nvidia-smi -L` lists), everywhere in these types: an NvmlIndex
// (nodeapi/nvml_index.h), never a position in a Cluster.
//
// Thread-safety: plain values.
#ifndef MIGSCHED_NODEAPI_API_TYPES_H_
#define MIGSCHED_NODEAPI_API_TYPES_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "nodeapi/job_record.h"
#include "nodeapi/nvml_index.h"
#include "nodeapi/placement.h"
#include "sched/options.h"

namespace migsched {

// ---- placements and holders ----

// Where an instance is or may be: PlacementRef (nodeapi/placement.h).

// Who holds an instance.
enum class HolderKind {
  kIdle,         // nobody: free space with a reuse bonus (§4)
  kJob,          // a job of the daemon's own queue (`migsched submit`)
  kAllocation,   // an engine's allocation (a Slurm job, a pod): `owner` is its owner key
  kReservation,  // an engine's reservation (held, not yet bound): `owner` is its key
  kPlaceholder,  // the daemon's placeholder (an instance being destroyed, §7)
};
std::string_view HolderKindName(HolderKind k);  // "idle" | "job" | ...
// The kind a HolderKindName names; kInvalidArgument for another word.
StatusOr<HolderKind> ParseHolderKind(std::string_view name);

// ---- GPUs and their instances (GET /v1/gpus, GET /v1/node) ----

// PCIe throughput of one GPU over NVML's 20 ms sample window.
struct PcieThroughput {
  int64_t tx_kbps = 0;  // KB/s (NVML_PCIE_UTIL_TX_BYTES)
  int64_t rx_kbps = 0;  // KB/s (NVML_PCIE_UTIL_RX_BYTES)
};
// PCIe KB/s as NVML reports it → bytes per second (1 KB = 1024 bytes).
inline double PcieBytesPerSecond(int64_t kbps) { return static_cast<double>(kbps) * 1024.0; }

// One MIG instance of a GPU as the API shows it.
struct InstanceView {
  std::string profile;
  int start = 0;         // placement units
  int size = 0;          // placement units
  std::string mig_uuid;  // empty while it is being created
  bool busy = false;
  HolderKind holder = HolderKind::kIdle;  // kIdle exactly when not busy
  int64_t job = 0;                        // a job's or allocation's id (0 otherwise)
  std::string owner;                      // an allocation's or reservation's owner key
  double expires_at = 0;                  // a reservation's expiry (Unix seconds)
  unsigned int gi_id = 0;  // GPU instance id on the backend (0 while it is being created)
  // Its holder can never leave this GPU (§4 step 2): a daemon job that is not migratable or is
  // latency-sensitive, or an allocation or reservation its owner made with `anchors`. A
  // controller registers such holders as anchored jobs (cluster/cluster_view.h).
  bool anchors = false;
};

// One GPU in GET /v1/gpus, GET /v1/node and the metrics.
struct GpuView {
  NvmlIndex index;
  std::string uuid;
  std::string model;        // catalog name, e.g. "A100 40GB"
  int placement_units = 0;  // width of the slot map
  std::vector<InstanceView> instances;
  double utilisation = 0;  // busy compute slices / compute slices, [0, 1]
  double frag_cost = 0;    // FragCost (§2) of the GPU's current state
  bool lazy = false;       // util < threshold (§3)
  bool draining = false;   // no new placements; empty when its jobs end
  // One of its instances' holders can never leave it (InstanceView::anchors; §4 step 2).
  bool anchored = false;
  std::string unreachable;   // why the backend cannot reach it ("" when it can)
  bool needs_reset = false;  // the driver says it needs a reset before MIG works (kNeedsReset)
  std::string refusing;      // why its MIG changes keep failing ("" when they do not)
  std::optional<PcieThroughput> pcie;
  // Per base profile name: how many more instances of it fit in the free
  // placement units now, one after another (idle instances left in place).
  std::map<std::string, int> free_instances;
};

// ---- jobs: listing ----

// GET /v1/jobs and /v1/allocations filters and paging.
struct JobQuery {
  std::optional<JobState> state;
  std::optional<JobKind> kind;
  std::string owner_prefix;  // allocations whose owner key starts with it ("" = any)
  DaemonJobId after = 0;     // ids greater than this
  int limit = 100;           // at most this many (1..1000)
};

struct JobPage {
  std::vector<DaemonJobRecord> jobs;  // ascending id
  DaemonJobId next = 0;               // pass as `after` for the next page; 0: no more
};

// POST /v1/plan: what a hypothetical job would get now; nothing applied.
struct PlanPreview {
  bool fits_now = false;
  std::vector<JobInstance> instances;  // where it would run (empty unless fits_now)
  std::vector<std::string> steps;      // the plan's steps, e.g. "create 2g.10gb@4 on GPU 0"
  std::string reason;                  // why not (never fits / no room now), or what may come first
};

// Submit and Allocate: the record, and whether it existed already (the same
// idempotency key and request: nothing new was made).
struct SubmitResult {
  DaemonJobRecord record;
  bool replayed = false;
};

// ---- reservations (cluster controllers) ----

// The durable record of one reservation (docs/api.md: reservations).
struct ReservationRecord {
  std::string owner;  // the owner key: the reservation's name
  std::vector<PlacementRef> placements;
  double created_at = 0;  // Unix seconds
  double expires_at = 0;  // Unix seconds
  bool anchors = false;   // held for a job that can never leave its GPU (ReservationRequest)
};

// POST /v1/reservations.
struct ReservationRequest {
  std::string owner;                     // the owner key: the reservation's name (required)
  std::vector<PlacementRef> placements;  // exact placements, 1..64
  double ttl_s = 0;                      // seconds; 0: the configured default
  // Held for a job its owner never moves off its GPU: the placements anchor their GPUs
  // (InstanceView::anchors), and so does the allocation that binds them. A renewal may change it.
  bool anchors = false;
};

// A reservation as the API shows it.
struct ReservationView {
  ReservationRecord record;
  std::vector<JobInstance> instances;  // the placements with size and MIG UUID
  std::vector<std::string> gpu_uuids;  // per placement
};

struct ReserveResult {
  ReservationView reservation;
  bool created = false;  // false: an existing reservation was renewed
};

// ---- the node ----

// GET /v1/node: enough for a controller to rebuild the node's Cluster.
struct NodeView {
  std::string name;          // node_name or the host name
  std::string boot_id;       // new at every start of the daemon
  uint64_t generation = 0;   // changes with every change of what is shown here
  double time = 0;           // Unix seconds, when the view was taken
  std::string policy;        // the scheduler's policy
  SchedulerOptions options;  // as it runs with them
  bool paused = false;
  int64_t queue_length = 0;
  Status store;               // OK, or why the job store cannot be written
  std::vector<GpuView> gpus;  // cluster order (= discovery order, ascending NVML index)
  std::vector<ReservationView> reservations;
};

}  // namespace migsched

#endif  // MIGSCHED_NODEAPI_API_TYPES_H_
