// ConfigTable: every valid configuration of one GPU model, with FragCost and
// its terms precomputed, so that lookups during scheduling are O(1) (§1, §2 of
// docs/algorithms.md).
//
// A *configuration* is a set of instances of base profiles on one GPU, encoded
// as a bitset over the model's slots (GpuModel::slots(): every (base profile,
// placement) pair). It is *valid* (§1) when no two instances share a placement
// unit, their compute slices add up to at most the model's, and no profile
// exceeds its max_instances. Media-extension variants occupy the slot of their
// base profile. An A100 40GB has 18 slots and 723 valid configurations.
//
// FragCost (§2) of a configuration B (the busy instances of a GPU):
//   feasible_m(B) = most instances of base profile m creatable together in the
//                   free placement units (valid placements, compute respected);
//   ideal_m(B)    = max of feasible_m over every valid arrangement of the same
//                   multiset of profiles as B;
//   M'(B)         = { m : ideal_m(B) > 0 };
//   FragCost(B)   = 1 - (1/|M'|) * sum_{m in M'} feasible_m(B) / ideal_m(B),
//                   0 when M' is empty.
//
// Build cost: O(configs × slots) time and memory, computed once per model
// (723 × 18 on A100). Thread-safety: immutable after Build; share freely.
#ifndef MIGSCHED_CORE_CONFIG_TABLE_H_
#define MIGSCHED_CORE_CONFIG_TABLE_H_

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "core/gpu_model.h"
#include "core/status.h"

namespace migsched {

// Dense index of a valid configuration in its model's ConfigTable.
using ConfigId = int32_t;
inline constexpr ConfigId kInvalidConfig = -1;
inline constexpr ConfigId kEmptyConfig = 0;  // no instances

class ConfigTable {
 public:
  // Enumerates the valid configurations of `model` and precomputes FragCost.
  // The model must outlive the table.
  static std::shared_ptr<const ConfigTable> Build(const GpuModel& model);

  const GpuModel& model() const { return *model_; }
  int num_configs() const { return static_cast<int>(masks_.size()); }
  int num_slots() const { return num_slots_; }
  // Number of base profiles (|M|); term indices below are positions in
  // GpuModel::base_profiles().
  int num_terms() const { return num_terms_; }

  // The configuration with exactly these slots, or kInvalidConfig.
  ConfigId Find(uint64_t slot_mask) const;
  uint64_t slot_mask(ConfigId c) const { return masks_[c]; }
  uint64_t unit_mask(ConfigId c) const { return units_[c]; }
  int compute_used(ConfigId c) const { return compute_[c]; }

  // c plus an instance in `slot`, or kInvalidConfig if that is not valid.
  ConfigId Add(ConfigId c, int slot) const {
    return add_[static_cast<size_t>(c) * num_slots_ + slot];
  }
  // c without the instance in `slot`, or kInvalidConfig if c has none there.
  ConfigId Remove(ConfigId c, int slot) const {
    return remove_[static_cast<size_t>(c) * num_slots_ + slot];
  }

  double FragCost(ConfigId c) const { return fragcost_[c]; }
  // feasible_m and ideal_m for the base profile at position `term`.
  int Feasible(ConfigId c, int term) const {
    return feasible_[static_cast<size_t>(c) * num_terms_ + term];
  }
  int Ideal(ConfigId c, int term) const {
    return ideal_[static_cast<size_t>(c) * num_terms_ + term];
  }

  // Number of instances of the base profile at `term` in c.
  int Count(ConfigId c, int term) const;

 private:
  ConfigTable() = default;

  const GpuModel* model_ = nullptr;
  int num_slots_ = 0;
  int num_terms_ = 0;
  std::vector<int> term_of_slot_;  // slot -> term
  std::vector<uint64_t> masks_;    // config -> slot mask
  std::vector<uint64_t> units_;    // config -> unit mask
  std::vector<int> compute_;       // config -> compute slices used
  std::vector<ConfigId> add_;      // config × slot
  std::vector<ConfigId> remove_;   // config × slot
  std::vector<double> fragcost_;   // config
  std::vector<int> feasible_;      // config × term
  std::vector<int> ideal_;         // config × term
  std::unordered_map<uint64_t, ConfigId> index_;
};

// Per-model tables, built on first use and cached. Thread-compatible: not
// safe for concurrent Get() calls from several threads.
class ConfigTableCache {
 public:
  const ConfigTable& Get(const GpuModel& model);

 private:
  std::unordered_map<const GpuModel*, std::shared_ptr<const ConfigTable>> tables_;
};

}  // namespace migsched

#endif  // MIGSCHED_CORE_CONFIG_TABLE_H_
