// GPU models, MIG profiles and placements: the hardware facts of §1 of
// docs/algorithms.md, as data.
//
// Units: a *placement unit* is one memory slice in NVML's sense
// (nvmlGpuInstancePlacement_t.start/.size, "index of first occupied memory
// slice"); a *compute slice* is the "Ng" of a profile name. Memory is in MiB.
// Nothing here branches on a model's name: every fact comes from the catalog
// files in data/gpus/ (see docs/formats/catalog.md).
//
// Thread-safety: a finalized GpuModel is immutable and safe to share.
#ifndef MIGSCHED_CORE_GPU_MODEL_H_
#define MIGSCHED_CORE_GPU_MODEL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace migsched {

// A placement (start, size) in placement units, as NVML reports it.
struct Placement {
  int start = 0;
  int size = 0;
  bool operator==(const Placement&) const = default;
};

// One MIG GPU-instance profile of a model, e.g. 3g.20gb on A100 40GB.
struct Profile {
  std::string name;             // as nvidia-smi prints it without "MIG ", e.g. "3g.20gb"
  int id = -1;                  // NVML profile id (nvmlGpuInstanceProfileInfo_t.id), -1 if unknown
  int nvml_profile_index = -1;  // NVML_GPU_INSTANCE_PROFILE_* constant, -1 if unknown
  int compute_slices = 0;       // the "Ng"
  int memory_slices = 0;        // MIG-guide memory slices
  int64_t memory_mib = 0;       // indicative: read memorySizeMB from NVML at run time
  int max_instances = 0;        // "Instances Total" of nvidia-smi mig -lgip
  std::vector<Placement> placements;  // valid placements, ascending start
  // Name of the base profile whose shape this media-extension variant shares
  // (+me, -me, +me.all, +gfx); empty for a base profile (§1).
  std::string variant_of;

  bool is_base() const { return variant_of.empty(); }
  // Size in placement units (every placement of a profile has the same size).
  int size() const { return placements.empty() ? 0 : placements.front().size; }
};

// One (base profile, placement) pair of a model: a bit of the state bitset (§1).
struct Slot {
  int profile = -1;        // index into GpuModel::profiles() (always a base profile)
  int start = 0;           // placement units
  int size = 0;            // placement units
  uint64_t unit_mask = 0;  // bit u set for every placement unit u it occupies
  int compute_slices = 0;
};

// A GPU model: the profiles it offers and its placement grid.
//
// Build one with GpuModel::Create, which validates the facts and derives the
// slot table; after that the model is immutable.
// The most valid configurations (sets of instances that can coexist on one GPU, §1) a model
// may have: the scheduler precomputes each with its transitions (core/config_table.h, about 0.5
// KiB per configuration at 64 slots). An A100 has 723; a made-up model with 32 one-unit slots
// has billions.
inline constexpr int64_t kMaxConfigurations = int64_t{1} << 20;

class GpuModel {
 public:
  struct Spec {
    std::string name;                      // canonical, e.g. "A100 40GB"
    std::vector<std::string> short_names;  // e.g. "A100-40GB"
    std::vector<std::string> aliases;      // names nvidia-smi prints, e.g. "NVIDIA A100-SXM4-40GB"
    // PCI device ids as NVIDIA mig-parted writes them: device then vendor, "0x233010DE".
    // Informational (lookup is by name).
    std::vector<std::string> pci_device_ids;
    int compute_slices = 0;  // 7 on A100/H100/H200/B200, 4 on A30 and RTX PRO 6000, 2 on RTX PRO
                             // 5000/4500
    int memory_slices = 0;
    int placement_units = 0;  // 8, 4, 12 or 2 (§1); at most 64
    bool confirmed = true;    // false: placements inferred, not observed
    // What the placements rest on: the driver listing they were seen in, or, for an inferred
    // model, the model they were inferred from and why (§1, docs/mig-hardware.md §2, §3).
    std::string placements_evidence;
    double pcie_max_gbps = 0;  // PCIe bandwidth shared by the instances (§8), GB/s
    // Power model of the energy estimate (catalog `power`, optional; sim/energy.h): one
    // GPU draws idle_w always, plus per_active_slice_w for every busy compute slice.
    // Create() fills the one not given of max_w / per_active_slice_w:
    // max_w = idle_w + compute_slices * per_active_slice_w.
    struct Power {
      double idle_w = 0;               // W, the GPU with no busy instance
      double max_w = -1;               // W, board power limit (< 0: not given)
      double per_active_slice_w = -1;  // W per busy compute slice (< 0: not given)
    };
    std::optional<Power> power;  // absent: no energy estimate for this model
    // The driver's own placement order when none is given (§11 driver-default),
    // per profile name: starts in preference order. A profile missing here uses
    // `driver_default_highest_first`.
    std::vector<std::pair<std::string, std::vector<int>>> driver_default_orders;
    bool driver_default_highest_first = true;
    // Named fixed layouts for the `static` policy: name -> (profile name, start).
    std::vector<std::pair<std::string, std::vector<std::pair<std::string, int>>>> static_layouts;
    std::string source;  // provenance text
    std::vector<Profile> profiles;
  };

  // Validates `spec` and derives the slot table. Errors (kInvalidArgument) name
  // the model, the profile and the problem: a power model with a negative or
  // non-finite value, without max_w and per_active_slice_w, or with idle_w +
  // compute_slices * per_active_slice_w above max_w; a placement outside the grid,
  // placements of one profile with different sizes, compute slices above the
  // model's, a variant whose base is missing or has another shape, duplicate
  // names, more than 64 slots or units, more than kMaxConfigurations valid
  // configurations, an unknown profile in a layout.
  static StatusOr<GpuModel> Create(Spec spec);

  const std::string& name() const { return spec_.name; }
  const std::vector<std::string>& short_names() const { return spec_.short_names; }
  const std::vector<std::string>& aliases() const { return spec_.aliases; }
  int compute_slices() const { return spec_.compute_slices; }
  int memory_slices() const { return spec_.memory_slices; }
  int placement_units() const { return spec_.placement_units; }
  bool confirmed() const { return spec_.confirmed; }
  const std::string& placements_evidence() const { return spec_.placements_evidence; }
  const std::vector<std::string>& pci_device_ids() const { return spec_.pci_device_ids; }
  double pcie_max_gbps() const { return spec_.pcie_max_gbps; }
  // The power model (max_w and per_active_slice_w both filled), or nullptr.
  const Spec::Power* power() const { return spec_.power ? &*spec_.power : nullptr; }
  const std::string& source() const { return spec_.source; }
  const Spec& spec() const { return spec_; }

  // All profiles, variants included, in catalog order.
  const std::vector<Profile>& profiles() const { return spec_.profiles; }
  const Profile& profile(int index) const { return spec_.profiles[index]; }
  // Index of the profile named `name` in any spelling NormalizeProfileName
  // accepts (core/catalog.h: "1G.5GB", "MIG-1g.5gb"), or -1.
  int FindProfile(std::string_view name) const;
  // Index of the base profile whose shape profile `index` has (itself if base).
  int BaseOf(int index) const { return base_of_[index]; }
  // Base profiles (the set M of §2), ordered by compute slices then memory
  // slices ascending (1g.5gb, 1g.10gb, 2g.10gb, 3g.20gb, 4g.20gb, 7g.40gb).
  const std::vector<int>& base_profiles() const { return base_profiles_; }
  // Index of the base profile with the most compute slices (the "full-size" one).
  int largest_profile() const { return base_profiles_.back(); }

  // Every (base profile, placement) pair; slot indices are 0..slots().size()-1,
  // grouped by base profile in base_profiles() order, starts ascending.
  const std::vector<Slot>& slots() const { return slots_; }
  // Slot of (profile, start); `profile` may be a variant (its base is used).
  // Returns -1 when `start` is not a placement of the profile.
  int SlotOf(int profile, int start) const;
  // Slots of one profile (variant or base), ascending start.
  const std::vector<int>& SlotsOfProfile(int profile) const {
    return slots_of_base_[base_of_[profile]];
  }
  // Mask with one bit per placement unit.
  uint64_t all_units_mask() const;

  // Driver-default order of starts for `profile` (§11).
  std::vector<int> DriverDefaultOrder(int profile) const;

 private:
  Spec spec_;
  std::vector<int> base_of_;
  std::vector<int> base_profiles_;
  std::vector<Slot> slots_;
  std::vector<std::vector<int>> slots_of_base_;  // indexed by profile index (base ones filled)
};

}  // namespace migsched

#endif  // MIGSCHED_CORE_GPU_MODEL_H_
