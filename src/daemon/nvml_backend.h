// NvmlBackend: the `nvml` MigBackend (docs/algorithms.md §7,
// docs/mig-hardware.md §8). libnvidia-ml is loaded at run time with dlopen (the
// build needs no CUDA); only the calls declared in daemon/nvml_api.h are
// looked up. It never enables or disables MIG mode and never resets a GPU
// (it does not even resolve nvmlDeviceSetMigMode or any reset call).
//
//   ListGpus        nvmlDeviceGetCount_v2, ..GetHandleByIndex_v2, ..GetName,
//                   ..GetUUID, ..GetMemoryInfo (bytes → MiB), ..GetMigMode
//                   (NOT_SUPPORTED = a GPU without MIG: mig_enabled false).
//                   A GPU answering GPU_IS_LOST is left out (and logged).
//   ListProfiles    nvmlDeviceGetGpuInstanceProfileInfo for indices 0, 1, …
//                   until INVALID_ARGUMENT, skipping NOT_SUPPORTED (mig-hardware.md §8.5), then
//                   nvmlDeviceGetGpuInstancePossiblePlacements_v2 per profile
//                   (NULL first for the count). Cached per GPU: immutable while
//                   the MIG mode lasts (mig-hardware.md §8.2).
//   ListInstances   nvmlDeviceGetGpuInstances per profile id, nvmlGpuInstanceGetInfo,
//                   nvmlGpuInstanceGetComputeInstances per CI profile, and the
//                   first CI's MIG UUID (nvmlComputeInstanceGetInfo_v2 → device →
//                   nvmlDeviceGetUUID).
//   CreateInstance  the placement is checked against the possible placements
//                   first; nvmlDeviceCreateGpuInstanceWithPlacement, then the CI
//                   profile (SHARED engines) with the most compute slices and
//                   nvmlGpuInstanceCreateComputeInstance; a failed CI destroys
//                   the GI again (kUnavailable with kDriverFault).
//                   If the rollback fails too, the GI is left without a CI (the
//                   error says so; the daemon's resync finds it and destroys it).
//   DestroyInstance every CI of the GI (nvmlComputeInstanceDestroy), then
//                   nvmlGpuInstanceDestroy, then nvmlDeviceGetGpuInstances for the
//                   GI's profile: a GI still listed after a "successful" destroy is
//                   kUnavailable with kDriverFault (the field's drivers do that).
//   GetPcieThroughput nvmlDeviceGetPcieThroughput TX and RX (KB/s).
//
// Error mapping (NVML → Status):
//   INSUFFICIENT_RESOURCES                → kResourceExhausted (occupied placement; the
//                                           message names the overlapping GI when found)
//   IN_USE                                → kUnavailable "… in use …" (retry with back-off)
//   NO_PERMISSION                         → kFailedPrecondition naming root/CAP_SYS_ADMIN
//                                           or the mig/config capability (mig-hardware.md §8.3)
//   RESET_REQUIRED                        → kUnavailable with kNeedsReset and the
//                                           operator's command (migsched never resets)
//   GPU_IS_LOST, DRIVER_NOT_LOADED, UNINITIALIZED, LIB_RM_VERSION_MISMATCH, TIMEOUT
//                                         → kUnavailable
//   NOT_FOUND                             → kNotFound
//   anything else                         → kInternal with the call and nvmlErrorString
// MIG mode not enabled → kFailedPrecondition from ListProfiles, ListInstances and
// CreateInstance with the operator's instructions (MigNotEnabledError).
//
// GPU identity: the first UUID read at an NVML index is kept; if the index later
// answers with another UUID (GPUs renumbered after a reset or a driver reload; device
// minor numbers can change too), every call about it is kUnavailable saying so, and
// the operator restarts migsched. A stale device handle (INVALID_ARGUMENT) is looked
// up again once.
//
// One NVML session: nvmlInit_v2 once in Open, nvmlShutdown once in the destructor,
// never per call.
//
// Thread-safety: thread-safe. Every call about one GPU holds that GPU's mutex for its
// whole length, so creates, destroys and listings of one GPU are serialised (the
// driver's MIG calls on one GPU are not safe to interleave, and a destroy can take a
// second); calls about different GPUs run concurrently. A small mutex guards the caches.
#ifndef MIGSCHED_DAEMON_NVML_BACKEND_H_
#define MIGSCHED_DAEMON_NVML_BACKEND_H_

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "daemon/mig_backend.h"
#include "daemon/nvml_api.h"

namespace migsched {

// kFailedPrecondition for a GPU whose MIG mode is not enabled: names the GPU and
// says how the operator enables it (`sudo nvidia-smi -i <index> -mig 1`, then a
// GPU reset or reboot on A100/A30; a pending change needs that reset), and that
// migsched never changes MIG mode itself (docs/mig-hardware.md §8.4). Shared by both
// backends and discovery so the text is the same everywhere.
Status MigNotEnabledError(const BackendGpu& gpu);

class NvmlBackend : public MigBackend {
 public:
  // dlopen(`library_path`) (a file name is searched like the dynamic linker
  // does, e.g. "libnvidia-ml.so.1"), dlsym of every call in nvml_api.h, then
  // nvmlInit_v2. Errors: kUnavailable "cannot load <path>: <dlerror>; is the
  // NVIDIA driver installed?"; kUnavailable naming a missing symbol (a driver
  // too old for MIG placement calls, R450+ and R470+ for _v2 placements);
  // kUnavailable with nvmlErrorString when nvmlInit_v2 fails.
  static StatusOr<std::unique_ptr<NvmlBackend>> Open(const std::string& library_path);
  ~NvmlBackend() override;  // nvmlShutdown, dlclose

  NvmlBackend(const NvmlBackend&) = delete;
  NvmlBackend& operator=(const NvmlBackend&) = delete;

  std::string_view name() const override { return "nvml"; }
  StatusOr<std::vector<BackendGpu>> ListGpus() override;
  StatusOr<std::vector<BackendProfile>> ListProfiles(int gpu) override;
  StatusOr<std::vector<BackendInstance>> ListInstances(int gpu) override;
  StatusOr<BackendInstance> CreateInstance(int gpu, int profile_id, Placement placement) override;
  Status DestroyInstance(int gpu, unsigned int gi_id) override;
  StatusOr<PcieThroughput> GetPcieThroughput(int gpu) override;

  // nvmlSystemGetDriverVersion ("550.54.15"), for `migsched device-check`.
  StatusOr<std::string> DriverVersion();

 private:
  struct Api;
  NvmlBackend();

  // The text of an NVML return code ("In use by another client (19)").
  std::string ErrorText(nvml::nvmlReturn_t ret) const;
  // Maps a failed NVML call to a Status; `what` says what was being done
  // ("GPU 0: nvmlDeviceCreateGpuInstanceWithPlacement(profile 9, 4:4)").
  Status Map(nvml::nvmlReturn_t ret, const std::string& what) const;

  // The mutex of `gpu` (created on first use; never destroyed while the backend lives).
  std::mutex& GpuMutex(int gpu);
  StatusOr<nvml::nvmlDevice_t> Device(int gpu);
  // Drops the cached handle (any thread) / the cached profiles (only with the GPU's mutex
  // held: Profiles() hands out a pointer into the cache that lives while it is held).
  void ForgetDevice(int gpu);
  void ForgetProfiles(int gpu);
  StatusOr<BackendGpu> ReadGpu(int gpu);
  Status RequireMig(int gpu);
  StatusOr<const std::vector<BackendProfile>*> Profiles(int gpu);
  StatusOr<std::vector<BackendInstance>> ListInstancesLocked(int gpu);
  // Live GPU instances of `gpu` with their info.
  struct LiveGi {
    nvml::nvmlGpuInstance_t handle;
    nvml::nvmlGpuInstanceInfo_t info;
  };
  StatusOr<std::vector<LiveGi>> LiveGis(int gpu);
  // Compute instances of a GI, every CI profile.
  StatusOr<std::vector<nvml::nvmlComputeInstance_t>> ComputeInstancesOf(int gpu, const LiveGi& gi);
  StatusOr<std::string> MigUuid(int gpu, nvml::nvmlComputeInstance_t ci, unsigned int* ci_id);
  // Destroys the CIs and the GI, then checks the GI is gone ("what" prefixes errors).
  Status DestroyGi(int gpu, const LiveGi& gi, const std::string& what);
  // Whether GI `gi_id` of profile `profile_id` is still listed (an error when the list fails).
  StatusOr<bool> GiListed(int gpu, unsigned int profile_id, unsigned int gi_id);
  // After a failure: forget what a reset may change (handle, profiles).
  void AfterFailure(int gpu, const Status& st);

  std::mutex mu_;  // guards the maps below (never held during an NVML call)
  std::map<int, std::unique_ptr<std::mutex>> gpu_mu_;
  std::map<int, std::string> uuids_;  // NVML index → the UUID first seen there
  void* lib_ = nullptr;
  std::string library_path_;
  std::unique_ptr<Api> api_;
  std::map<int, nvml::nvmlDevice_t> devices_;
  std::map<int, std::vector<BackendProfile>> profiles_;
};

}  // namespace migsched

#endif  // MIGSCHED_DAEMON_NVML_BACKEND_H_
