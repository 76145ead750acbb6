// ClusterView: one `Cluster` of every GPU of every node (core/cluster.h),
// built from the nodes' views (the node API's NodeView, nodeapi/api_types.h, read through
// nodeapi/node_view.h), so that the scheduler
// core plans placements over the whole cluster at once (docs/algorithms-cluster.md §14.1).
//
// GPUs are numbered node by node in the order the nodes are given, and within
// a node in NVML index order (the node API's GPU numbers): with one node per GPU group this is
// the order `migsched simulate --cluster` numbers the same GPUs.
//
// What each instance becomes in the Cluster:
//   * busy with a daemon job, an allocation or a placeholder: a busy instance
//     held by an *occupant* (a job id of the view, see OccupantOf);
//   * an idle instance: an idle instance (free, reusable);
//   * a reserved placement (ReservationRecord): a busy instance of the
//     reserved profile held by an occupant of kind kReservation, whether or
//     not an instance exists there yet; idle instances overlapping it are
//     left out (the space is taken).
// A GPU that takes no new placements (draining, or its backend cannot reach
// it: TakesPlacements) is marked reserved in the Cluster (Cluster::SetReserved):
// it offers no placement to any policy. An occupant whose daemon says it can
// never leave its GPU (InstanceView::anchors: a daemon job that is not migratable
// or is latency-sensitive, an allocation or reservation made with `anchors`) is
// registered as anchored (Cluster::SetJobAnchored, §4 step 2): what a controller
// knows of other engines' jobs, and of its own after a restart.
//
// A node that could not be reached, or whose state is inconsistent (a GPU
// model the catalog does not know, an instance the model cannot have, two
// instances overlapping), contributes no GPUs and is listed with the reason.
//
// Thread-safety: thread-compatible.
#ifndef MIGSCHED_CLUSTER_CLUSTER_VIEW_H_
#define MIGSCHED_CLUSTER_CLUSTER_VIEW_H_

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/catalog.h"
#include "core/cluster.h"
#include "core/config_table.h"
#include "core/job.h"
#include "core/status.h"
#include "nodeapi/node_view.h"

namespace migsched {

// One node as the controller sees it: its view (GET /v1/node), or why it has none.
struct NodeInput {
  std::string name;
  std::optional<NodeView> state;  // nullopt: unreachable
  std::string error;              // why there is no state (e.g. "connection refused")
};

// Job ids of the view's occupants start here; ids below are free for the
// planner's own jobs.
inline constexpr JobId kFirstOccupantId = 1 << 30;

class ClusterView {
 public:
  struct Node {
    std::string name;
    bool usable = false;  // reachable and consistent: its GPUs are in the cluster
    std::string error;    // why not usable
    int first_gpu = 0;    // its GPUs are [first_gpu, first_gpu + num_gpus) of cluster()
    int num_gpus = 0;
    std::vector<NvmlIndex> nvml_index;  // per local GPU: its NVML index (NvmlIndexOf)
    uint64_t generation = 0;
  };
  // Who holds a busy instance of the cluster that no planned job holds.
  struct Occupant {
    HolderKind kind = HolderKind::kJob;
    int node = -1;
    std::string owner;     // allocation owner key, reservation key, daemon job id
    bool anchors = false;  // it can never leave its GPU (InstanceView::anchors)
  };

  // `catalog` and `tables` must outlive the view. Never fails: a node that
  // cannot be represented is marked not usable with the reason.
  static std::unique_ptr<ClusterView> Build(const std::vector<NodeInput>& nodes,
                                            const Catalog& catalog, ConfigTableCache* tables);

  const Cluster& cluster() const { return cluster_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  // Index of the node named `name`, or -1.
  int FindNode(std::string_view name) const;
  // The node of global GPU `gpu`.
  int NodeOf(int gpu) const { return node_of_[gpu]; }
  // The two GPU numbers of the controllers meet here, and only here: a global GPU (a position in
  // cluster(), what the scheduler core plans with) and the NVML index of that GPU on its node
  // (what the node API, its placements and users' messages name).
  // The global GPU of the node's GPU with NVML index `nvml_index`, or -1.
  int GlobalGpu(int node, NvmlIndex nvml_index) const;
  // The NVML index of global GPU `gpu` on its node.
  NvmlIndex NvmlIndexOf(int gpu) const;
  // (NVML index, profile name, start) of a global placement.
  PlacementRef ToRef(int gpu, int profile, int start) const;
  // The global (gpu, profile index) of `ref` on `node`; nullopt if the node
  // has no such GPU or its model no such profile.
  std::optional<std::pair<int, int>> FromRef(int node, const PlacementRef& ref) const;
  // The occupant holding job id `id`, or nullptr (not an occupant).
  const Occupant* OccupantOf(JobId id) const;
  // Occupant ids of kind kAllocation with owner `owner` (empty if none).
  std::vector<JobId> AllocationsOf(std::string_view owner) const;
  // Whether GPU `gpu` is drained on its node.
  bool drained(int gpu) const { return drained_[gpu] != 0; }
  // The models of a node's GPUs (local order), usable nodes only.
  std::vector<const GpuModel*> NodeModels(int node) const;
  const Catalog& catalog() const { return *catalog_; }
  ConfigTableCache* tables() const { return tables_; }

 private:
  ClusterView(const std::vector<const GpuModel*>& models, const Catalog* catalog,
              ConfigTableCache* tables)
      : cluster_(models, tables), catalog_(catalog), tables_(tables) {}

  Cluster cluster_;
  const Catalog* catalog_;
  ConfigTableCache* tables_;
  std::vector<Node> nodes_;
  std::vector<int> node_of_;
  std::vector<char> drained_;
  std::unordered_map<JobId, Occupant> occupants_;
  std::unordered_map<std::string, int> node_index_;
};

// Calls `f(gpu, id, occupant)` for every busy instance of GPU `gpu` of `cluster` (the view's
// cluster or a copy of it) held by an occupant of the view (`id` its job id in the cluster), in
// GPU order. `f` must not change the cluster's instances. O(instances).
template <typename F>
void ForEachOccupied(const ClusterView& view, const Cluster& cluster, F f) {
  for (int g = 0; g < cluster.size(); ++g) {
    for (const Instance& in : cluster.gpu(g).instances()) {
      const ClusterView::Occupant* o = in.busy() ? view.OccupantOf(in.job) : nullptr;
      if (o != nullptr) f(g, in.job, *o);
    }
  }
}

// §4 step 2 anchored together: registers in `cluster` (the view's cluster or a copy of it) the
// allocation and reservation occupants whose owner key is in `owners` (an engine's jobs that can
// never leave their GPU: running, or bound and not yet started) as anchored jobs, re-grouping the
// GPUs they hold (Cluster::SetJobAnchored). O(instances).
void AnchorAllocations(const ClusterView& view, const std::set<std::string>& owners,
                       Cluster* cluster);

}  // namespace migsched

#endif  // MIGSCHED_CLUSTER_CLUSTER_VIEW_H_
