// MigBackend: how the daemon reads and changes the MIG instances of a node
// (docs/algorithms.md §7). Two implementations: `fake` (records in memory, real
// time, injectable failures; daemon/fake_backend.h) and `nvml`
// (libnvidia-ml.so.1 loaded with dlopen; daemon/nvml_backend.h). The
// simulator's `sim` backend is the Cluster itself.
//
// Units: placements in placement units (NVML memory slices,
// nvmlGpuInstancePlacement_t), memory in MiB, PCIe throughput in KB/s (as
// nvmlDeviceGetPcieThroughput reports it). GPU numbers are the NVML device
// indices.
//
// Errors (Status codes): kNotFound (unknown GPU, profile or instance),
// kResourceExhausted (the placement is occupied or out of range: NVML's
// INSUFFICIENT_RESOURCES), kUnavailable (retry later: "in use" on destroy,
// the device is gone, the driver is not loaded), kFailedPrecondition (MIG
// mode is not enabled: the message says how the operator enables it; the
// daemon never changes MIG mode itself, docs/mig-hardware.md §8.4), kInternal
// (the driver answered something documented as impossible).
//
// Thread-safety: implementations are thread-compatible; the daemon calls a
// backend from one thread at a time (it holds its own lock).
#ifndef MIGSCHED_DAEMON_MIG_BACKEND_H_
#define MIGSCHED_DAEMON_MIG_BACKEND_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/gpu_model.h"
#include "core/status.h"
#include "nodeapi/api_types.h"

namespace migsched {

// "start:size", as nvidia-smi prints a placement: the backends' messages name placements so.
inline std::string PlacementText(Placement p) {
  return std::to_string(p.start) + ":" + std::to_string(p.size);
}

// Whether two placements of one GPU share a unit (what a backend refuses to create).
inline bool Overlaps(Placement a, Placement b) {
  return a.start < b.start + b.size && b.start < a.start + a.size;
}

// One physical GPU as the backend sees it.
struct BackendGpu {
  int index = -1;            // NVML device index
  std::string uuid;          // "GPU-…"
  std::string name;          // product name (nvmlDeviceGetName), e.g. "NVIDIA A100-SXM4-40GB"
  bool mig_enabled = false;  // current MIG mode (nvmlDeviceGetMigMode, `current`)
  bool mig_pending_change = false;  // pending mode differs from current
  int64_t memory_mib = 0;           // total device memory
};

// One GPU-instance profile as the driver reports it
// (nvmlDeviceGetGpuInstanceProfileInfo + ..._PossiblePlacements_v2).
struct BackendProfile {
  int nvml_profile_index = -1;        // NVML_GPU_INSTANCE_PROFILE_* (0x0 = 1_SLICE …)
  int id = -1;                        // nvmlGpuInstanceProfileInfo_t.id (what Create takes)
  int slice_count = 0;                // compute slices (sliceCount)
  int instance_count = 0;             // instanceCount
  int64_t memory_mib = 0;             // memorySizeMB
  std::vector<Placement> placements;  // possible placements, as the driver lists them
};

// One live instance: a GPU instance with one compute instance spanning it.
struct BackendInstance {
  int gpu = -1;                      // NVML device index
  int profile_id = -1;               // GI profile id (BackendProfile::id)
  Placement placement;               // (start, size) in placement units
  unsigned int gi_id = 0;            // GPU instance id (nvmlGpuInstanceInfo_t.id)
  unsigned int ci_id = 0;            // compute instance id
  std::string mig_uuid;              // "MIG-…": what CUDA_VISIBLE_DEVICES takes
  bool has_compute_instance = true;  // false: a GI without a CI (found at start-up)
};

// The hardware's or the driver's trouble, not the request's: a kUnavailable status with one of
// these reasons (core/status.h StatusReason) makes the daemon retry and resync, and never counts
// against a job.
//   kInUse        a destroy refused while processes or open handles use the instance (also
//                 handles leaked by a monitoring agent: no job needs to run on it);
//   kNeedsReset   NVML answered RESET_REQUIRED: the GPU needs a reset (after a MIG mode
//                 change) before MIG works; migsched never resets a GPU, the operator does;
//   kDriverFault  the driver's answer could not be trusted: a compute instance failed after
//                 its GPU instance was made, a destroy reported success and left the
//                 instance behind, a rollback failed. The GPU is listed again at once.
// Each one's message also carries the phrase below, for the people who read it.
inline constexpr std::string_view kInUse = "in use";
inline constexpr std::string_view kNeedsReset = "needs a GPU reset";
inline constexpr std::string_view kDriverFault = "driver fault";
// Whether `st` has one of the reasons above.
inline bool IsBackendTrouble(const Status& st) {
  return st.reason() == StatusReason::kInUse || st.reason() == StatusReason::kNeedsReset ||
         st.reason() == StatusReason::kDriverFault;
}

class MigBackend {
 public:
  virtual ~MigBackend() = default;

  // "fake" | "nvml".
  virtual std::string_view name() const = 0;

  // The GPUs of the node, in NVML index order.
  virtual StatusOr<std::vector<BackendGpu>> ListGpus() = 0;

  // The GI profiles `gpu` supports with their possible placements (skipping
  // profiles the driver answers NOT_SUPPORTED for). kFailedPrecondition when
  // MIG mode is not enabled.
  virtual StatusOr<std::vector<BackendProfile>> ListProfiles(int gpu) = 0;

  // The live instances of `gpu`, ascending placement start.
  virtual StatusOr<std::vector<BackendInstance>> ListInstances(int gpu) = 0;

  // Creates a GPU instance of `profile_id` at exactly `placement`
  // (nvmlDeviceCreateGpuInstanceWithPlacement) and one compute instance
  // using all of its slices (engine profile SHARED), and returns it with its
  // MIG UUID. On a CI failure the GI is destroyed again (nothing half-made is
  // left when the driver lets it: kUnavailable with kDriverFault either way, and if the
  // rollback failed too the GI without a CI is still there for the caller's resync to
  // find). kResourceExhausted if the placement is occupied or invalid.
  virtual StatusOr<BackendInstance> CreateInstance(int gpu, int profile_id,
                                                   Placement placement) = 0;

  // Destroys the compute instances of the GPU instance `gi_id`, then the GPU
  // instance, and checks that it is gone. kUnavailable with kInUse while processes or
  // open handles still use it (the caller retries with back-off and keeps the instance
  // idle meanwhile); kUnavailable with kDriverFault when the driver reported success
  // and the instance is still there; kNotFound if no such GI exists.
  virtual Status DestroyInstance(int gpu, unsigned int gi_id) = 0;

  // PCIe throughput of `gpu`. kUnavailable when the backend cannot measure it.
  virtual StatusOr<PcieThroughput> GetPcieThroughput(int gpu) = 0;
};

}  // namespace migsched

#endif  // MIGSCHED_DAEMON_MIG_BACKEND_H_
