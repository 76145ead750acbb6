// Node discovery for the daemon (docs/mig-hardware.md §8.5): which GPUs
// to manage, their MIG model, and the instances already on them.
//
// For each selected GPU the model is looked up in the bundled catalog by the
// driver's product name (aliases) and then checked against the driver's own
// profile and placement lists (MigBackend::ListProfiles). Where they differ,
// a mismatch is reported (one line each in `notes`) and **the driver wins**:
// the GPU gets a GpuModel built from the catalog's names and power data with
// the driver's profiles and placements. A product name the catalog does not
// know is modelled from the driver's data alone (profile names from
// slice_count and memorySizeMB rounded up to 1/8 of the device memory,
// docs/mig-hardware.md §8.5).
//
// Errors: kFailedPrecondition when a selected GPU does not have MIG mode
// enabled; the message names the GPU and says how the operator enables it
// (`sudo nvidia-smi -i <index> -mig 1`, then a GPU reset or reboot on
// A100/A30; migsched never does this itself, docs/mig-hardware.md §8.4).
// kNotFound for a selected index or UUID the backend does not list.
//
// Thread-safety: thread-compatible (uses the backend).
#ifndef MIGSCHED_DAEMON_DISCOVERY_H_
#define MIGSCHED_DAEMON_DISCOVERY_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/catalog.h"
#include "core/gpu_model.h"
#include "core/status.h"
#include "daemon/mig_backend.h"

namespace migsched {

struct DiscoveredGpu {
  BackendGpu gpu;
  const GpuModel* model = nullptr;         // owned by NodeInventory::owned_models or the catalog
  std::vector<BackendInstance> instances;  // live instances at discovery
};

struct NodeInventory {
  std::vector<DiscoveredGpu> gpus;                      // selected GPUs, ascending NVML index
  std::vector<std::unique_ptr<GpuModel>> owned_models;  // models built from driver data
  std::vector<std::string> notes;                       // mismatches and adoptions, for the log
};

// The catalog profile each driver profile stands for (index into `driver` → profile of
// `model`), matched by NVML identity and shape, never by name (drivers and models name
// profiles differently, e.g. B200 and GB200, and memory sizes change between driver
// versions): 1. the same profile id and compute slices; 2. else the same NVML profile
// index and compute slices; 3. else the same compute slices, placement size and media
// variant, the nearest memory. Each catalog profile stands for at most one driver profile.
std::map<size_t, const Profile*> MatchCatalog(const GpuModel& model,
                                              const std::vector<BackendProfile>& driver);

// One line per difference between the catalog's `model` and the driver's profiles (ids,
// compute slices, placements, instance counts, MiB, NVML index; profiles on one side only).
std::vector<std::string> Differences(const GpuModel& model,
                                     const std::vector<BackendProfile>& driver);

// `selection`: empty = every GPU; otherwise NVML indices ("0", "3") or UUIDs ("GPU-…").
StatusOr<NodeInventory> DiscoverNode(MigBackend* backend, const Catalog& catalog,
                                     const std::vector<std::string>& selection);

}  // namespace migsched

#endif  // MIGSCHED_DAEMON_DISCOVERY_H_
