// Cluster: an ordered set of GPUs (index 0..n-1), each a model and a GpuState.
//
// Cluster specs are written "4xA100-40GB,8xH100-80GB" (a count, 'x', any name
// the catalog knows); GPUs are numbered in the order written.
//
// Thread-safety: thread-compatible.
#ifndef MIGSCHED_CORE_CLUSTER_H_
#define MIGSCHED_CORE_CLUSTER_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
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
  // aside), the same reservation flag and the same anchored flag behave
  // identically for every policy, so a policy whose ties go to the lower GPU
  // index only needs to look at the lowest-index GPU of each group. These are
  // those GPUs, ascending; O(distinct states) to iterate, O(log GPUs) to keep
  // up to date per changed GPU.
  // With grouping off (the naive O(GPUs) reference of tests and benchmarks)
  // every GPU is listed.
  // A sorted vector (not a set): the policies and the migration planner walk
  // it once or twice per event, and a contiguous walk is several times
  // cheaper than a tree's; keeping it sorted costs O(groups) memmove per
  // change of representative.
  const std::vector<int>& representatives() const { return grouping_ ? representatives_ : all_; }
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

  // The representatives of the non-reserved state groups of `model`
  // (models()[model_index]) with exactly `free` free compute slices (model
  // compute slices minus busy ones), in no particular order. A placement that
  // needs k compute slices can only land on the groups with free >= k, so an
  // arrival visits those buckets and skips the (typically most) groups that
  // cannot hold it without looking at them. Kept up to date with
  // the groups, O(1) per change of representative. Grouping on only (with
  // grouping off use representatives()). `free` outside 0..compute slices of
  // the model: an empty list.
  const std::vector<int>& RepresentativesWithFree(int model_index, int free) const;
  // Index of `gpu`'s model in models().
  int model_index(int gpu) const { return model_index_[gpu]; }

  // Change journal, for a reader that keeps facts about GPU states across
  // events and wants to update only the GPUs that changed (the migration
  // planner's state scan): every SetGpu and SetDrained records the GPU's index. A cursor
  // names this cluster object and a position in its journal; a copy of a
  // cluster is a different cluster (its cursors do not carry over).
  struct ChangeCursor {
    uint64_t cluster = 0;   // 0: no cluster
    uint64_t position = 0;  // SetGpu calls since construction
  };
  ChangeCursor change_cursor() const { return {serial_.value, journal_base_ + journal_.size()}; }
  // Appends to `*gpus` the GPUs given to SetGpu since `cursor` (in call
  // order, repeats kept) and returns true; returns false, appending nothing,
  // when `cursor` is another cluster's or older than the journal kept (the
  // last max(4096, 4 × GPUs) changes): the reader must then look at every
  // GPU. O(changes returned).
  bool ChangedSince(const ChangeCursor& cursor, std::vector<int>* gpus) const;

  // Reservation for a waiting job (§5 starvation guard): a reserved GPU offers
  // no placement candidates (sched/candidates.h) to other jobs, and forms a
  // state group of its own. Scheduling state, not MIG state: ApplyPlan
  // neither reads nor changes it. O(log GPUs).
  bool reserved(int gpu) const { return (flags_[gpu] & kReservedFlag) != 0; }
  void SetReserved(int gpu, bool reserved);
  // GPUs reserved now. O(1).
  int num_reserved() const { return num_reserved_; }

  // Anchored jobs (§4 step 2, the anchored-together rule): a job that cannot
  // leave its GPU once placed (migratable `none`, or latency-sensitive: it
  // moves only within its GPU, §6). A GPU is *anchored* while one of its busy
  // instances runs a job registered here; an anchored GPU can never be
  // drained by moving its jobs away. Scheduling state like the reservation:
  // ApplyPlan neither reads nor changes the registry, but every GPU state
  // change (SetGpu) recomputes the flag, and the flag is part of the GPU's
  // state group. The scheduler registers a job before its first placement
  // and forgets it after its release; a caller that registers or forgets a
  // job already holding instances names the GPUs that hold it in `holding`
  // (they are re-grouped; naming them again is harmless). O(1) + O(|holding| × instances).
  void SetJobAnchored(JobId job, bool anchored, const std::vector<int>& holding = {});
  bool job_anchored(JobId job) const { return anchored_jobs_.count(job) != 0; }
  // Whether GPU `gpu` runs an anchored job now. O(1).
  bool anchored(int gpu) const { return anchored_[gpu] != 0; }
  // GPUs anchored now. O(1).
  int num_anchored() const { return num_anchored_; }

  // Drain (an operator's or a controller's decision, e.g. `migsched drain`):
  // a drained GPU offers no placement candidates to any job and is never a
  // migration target; what runs on it goes on to its end. Independent of
  // the §5 reservation above (a scan that ends its reservations leaves
  // drains alone). Scheduling state like the reservation; recorded in the
  // change journal (the GPU offers other candidates afterwards). O(log GPUs).
  bool drained(int gpu) const { return (flags_[gpu] & kDrainedFlag) != 0; }
  void SetDrained(int gpu, bool drained);

  // Whether GPU `gpu` may take a new placement now: neither reserved nor
  // drained. Candidate generation (sched/candidates.h) asks this.
  bool accepts_placements(int gpu) const { return flags_[gpu] == 0; }

  // How messages name GPU `gpu`: "GPU <gpu>" unless a driver named it (the
  // daemon: "GPU <NVML index>"; a cluster controller: "<node> GPU <index>").
  std::string GpuName(int gpu) const;
  void SetGpuName(int gpu, std::string name);

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
  void Join(int gpu);     // adds gpu to its group (keys_[gpu] set)
  void Leave(int gpu);    // removes gpu from its group
  void Rekey(int gpu);    // moves gpu to the group of its state and reservation
  void Journal(int gpu);  // records a change of `gpu` for ChangedSince
  // Adds representative `gpu` to its free-slices bucket (not if reserved) /
  // removes it from the bucket it was added to.
  void IndexRepresentative(int gpu);
  void UnindexRepresentative(int gpu);
  void InsertRepresentative(int gpu);  // into the sorted representatives_
  void EraseRepresentative(int gpu);

  std::vector<GpuState> gpus_;
  std::vector<const GpuModel*> models_;
  static constexpr char kReservedFlag = 1;
  static constexpr char kDrainedFlag = 2;
  std::vector<char> flags_;                  // per GPU: kReservedFlag | kDrainedFlag
  std::unordered_set<JobId> anchored_jobs_;  // SetJobAnchored
  std::vector<char> anchored_;               // per GPU: runs an anchored job
  int num_anchored_ = 0;
  std::vector<std::string> names_;  // per GPU, empty: "GPU <index>" (or none set at all)
  int num_reserved_ = 0;
  int total_compute_slices_ = 0;
  int busy_compute_slices_ = 0;
  std::vector<std::string> keys_;                          // per GPU
  std::unordered_map<std::string, std::set<int>> groups_;  // key -> GPUs (node-based: stable)
  std::vector<int> representatives_;                       // lowest GPU of every group, ascending
  std::vector<int> all_;                                   // every GPU (grouping off)
  std::vector<int> model_index_;                           // per GPU: index into models_
  int bucket_stride_ = 1;                                  // max compute slices + 1
  std::vector<std::vector<int>> free_buckets_;  // [model * stride + free] -> representatives
  std::vector<int> bucket_of_;                  // per GPU: its bucket, -1 if none
  std::vector<int> bucket_pos_;                 // per GPU: its position in the bucket
  bool grouping_ = true;
  // A number unique to this object, renewed by a copy (ChangeCursor).
  struct Serial {
    Serial() : value(Next()) {}
    Serial(const Serial&) : value(Next()) {}
    Serial& operator=(const Serial&) {
      value = Next();
      return *this;
    }
    static uint64_t Next();
    uint64_t value;
  };
  Serial serial_;
  std::vector<int> journal_;   // GPUs of the SetGpu calls since journal_base_
  uint64_t journal_base_ = 0;  // position of journal_[0]
};

}  // namespace migsched

#endif  // MIGSCHED_CORE_CLUSTER_H_
