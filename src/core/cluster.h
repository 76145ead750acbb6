// Cluster: an ordered set of GPUs (index 0..n-1), each a model and a GpuState.
//
// Cluster specs are written "4xA100-40GB,8xH100-80GB" (a count, 'x', any name
// the catalog knows); GPUs are numbered in the order written.
//
// Thread-safety: thread-compatible.
#ifndef MIGSCHED_CORE_CLUSTER_H_
#define MIGSCHED_CORE_CLUSTER_H_

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/catalog.h"
#include "core/config_table.h"
#include "core/gpu_state.h"
#include "core/status.h"

namespace migsched {

// Parses "4xA100-40GB,8xH100-80GB" into one model pointer per GPU.
// Errors (kInvalidArgument / kNotFound) quote the offending part.
StatusOr<std::vector<const GpuModel*>> ParseClusterSpec(std::string_view spec,
                                                        const Catalog& catalog);

class Cluster {
 public:
  // `tables` must outlive the cluster; models must outlive it too.
  Cluster(const std::vector<const GpuModel*>& models, ConfigTableCache* tables);

  int size() const { return static_cast<int>(gpus_.size()); }
  const GpuState& gpu(int i) const { return gpus_[i]; }
  // Replaces GPU i's state (only ApplyPlan calls this) and updates the state
  // groups. REQUIRES: the same model as before.
  void SetGpu(int i, GpuState state);

  // State groups (the performance goal of §4): GPUs with the same model and the
  // same instances (profile, start, busy or idle, migration role; job ids
  // aside) and the same reservation flag behave
  // identically for every policy, so a policy whose ties go to the lower GPU
  // index only needs to look at the lowest-index GPU of each group. These are
  // those GPUs, ascending; O(distinct states) to iterate, O(log GPUs) to keep
  // up to date per changed GPU.
  // With grouping off (the naive O(GPUs) reference of tests and benchmarks)
  // every GPU is listed.
  const std::set<int>& representatives() const { return grouping_ ? representatives_ : all_; }
  void set_grouping(bool on) { grouping_ = on; }
  bool grouping() const { return grouping_; }
  // Number of distinct states.
  int num_groups() const { return static_cast<int>(groups_.size()); }
  // How many GPUs the representative `gpu` stands for (1 with grouping off).
  // REQUIRES: `gpu` is in representatives().
  int represented(int gpu) const {
    return grouping_ ? static_cast<int>(groups_.at(keys_[gpu]).size()) : 1;
  }
  // Calls `f(member)` for the GPUs of `gpu`'s state group in ascending index
  // (just `gpu` with grouping off) until `f` returns false. Every member has
  // the same model, busy/all/settled configuration (§6) and reservation flag.
  // `f` must not change the cluster. O(members visited).
  template <typename F>
  void ForEachInGroup(int gpu, F f) const {
    if (!grouping_) {
      f(gpu);
      return;
    }
    for (int member : groups_.at(keys_[gpu])) {
      if (!f(member)) return;
    }
  }

  // The key of `gpu`'s state group (opaque bytes; equal keys, same group) and
  // the members of the group with key `key`, ascending, or nullptr when no
  // GPU has that state now. The pointer is valid until the cluster changes.
  // Meaningful with grouping on or off (groups are always kept).
  const std::string& group_key(int gpu) const { return keys_[gpu]; }
  const std::set<int>* FindGroup(const std::string& key) const {
    auto it = groups_.find(key);
    return it == groups_.end() ? nullptr : &it->second;
  }

  // Reservation for a waiting job (§5 starvation guard): a reserved GPU offers
  // no placement candidates (sched/candidates.h) to other jobs, and forms a
  // state group of its own. Scheduling state, not MIG state: ApplyPlan
  // neither reads nor changes it. O(log GPUs).
  bool reserved(int gpu) const { return reserved_[gpu] != 0; }
  void SetReserved(int gpu, bool reserved);

  // Cluster fragmentation rate: mean FragCost over all GPUs (§2).
  double FragmentationRate() const;
  // Busy compute slices over all compute slices, in [0, 1]. O(1): the busy
  // count is kept up to date by SetGpu.
  double Utilization() const;
  int total_compute_slices() const { return total_compute_slices_; }
  int busy_compute_slices() const { return busy_compute_slices_; }

  // Distinct models, in order of first appearance (cached).
  const std::vector<const GpuModel*>& models() const { return models_; }
  // "4xA100 40GB" style summary.
  std::string Describe() const;

 private:
  // The group key of a GPU state: model and instances (profile, start, busy,
  // migration role), job ids and peers left out.
  static std::string GroupKey(const GpuState& g);
  void Join(int gpu);   // adds gpu to its group (keys_[gpu] set)
  void Leave(int gpu);  // removes gpu from its group
  void Rekey(int gpu);  // moves gpu to the group of its state and reservation

  std::vector<GpuState> gpus_;
  std::vector<const GpuModel*> models_;
  std::vector<char> reserved_;
  int total_compute_slices_ = 0;
  int busy_compute_slices_ = 0;
  std::vector<std::string> keys_;                // per GPU
  std::map<std::string, std::set<int>> groups_;  // key -> GPUs
  std::set<int> representatives_;                // lowest GPU of every group
  std::set<int> all_;                            // every GPU (grouping off)
  bool grouping_ = true;
};

}  // namespace migsched

#endif  // MIGSCHED_CORE_CLUSTER_H_
