#include "daemon/nvml_backend.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

namespace migsched {

using namespace nvml;  // NOLINT: the NVML names, as in nvml.h

// Every NVML call the backend uses: (member, symbol). Nothing else is resolved;
// in particular not nvmlDeviceSetMigMode nor any reset (docs/mig-hardware.md §8.4).
#define MIGSCHED_NVML_CALLS(X)                                                                    \
  X(init, nvmlInit_v2)                                                                            \
  X(shutdown, nvmlShutdown)                                                                       \
  X(error_string, nvmlErrorString)                                                                \
  X(device_get_count, nvmlDeviceGetCount_v2)                                                      \
  X(device_get_handle_by_index, nvmlDeviceGetHandleByIndex_v2)                                    \
  X(device_get_name, nvmlDeviceGetName)                                                           \
  X(device_get_uuid, nvmlDeviceGetUUID)                                                           \
  X(device_get_memory_info, nvmlDeviceGetMemoryInfo)                                              \
  X(device_get_mig_mode, nvmlDeviceGetMigMode)                                                    \
  X(device_get_gpu_instance_profile_info, nvmlDeviceGetGpuInstanceProfileInfo)                    \
  X(device_get_gpu_instance_possible_placements, nvmlDeviceGetGpuInstancePossiblePlacements_v2)   \
  X(device_create_gpu_instance_with_placement, nvmlDeviceCreateGpuInstanceWithPlacement)          \
  X(gpu_instance_get_compute_instance_profile_info, nvmlGpuInstanceGetComputeInstanceProfileInfo) \
  X(gpu_instance_create_compute_instance, nvmlGpuInstanceCreateComputeInstance)                   \
  X(compute_instance_get_info, nvmlComputeInstanceGetInfo_v2)                                     \
  X(device_get_gpu_instances, nvmlDeviceGetGpuInstances)                                          \
  X(gpu_instance_get_info, nvmlGpuInstanceGetInfo)                                                \
  X(gpu_instance_get_compute_instances, nvmlGpuInstanceGetComputeInstances)                       \
  X(compute_instance_destroy, nvmlComputeInstanceDestroy)                                         \
  X(gpu_instance_destroy, nvmlGpuInstanceDestroy)                                                 \
  X(system_get_driver_version, nvmlSystemGetDriverVersion)                                        \
  X(device_get_pcie_throughput, nvmlDeviceGetPcieThroughput)

struct NvmlBackend::Api {
#define MIGSCHED_NVML_MEMBER(member, symbol) symbol##_fn member = nullptr;
  MIGSCHED_NVML_CALLS(MIGSCHED_NVML_MEMBER)
#undef MIGSCHED_NVML_MEMBER
};

namespace {

// A fixed-size C string from NVML, without trailing garbage.
std::string CString(const char* buf, size_t cap) {
  size_t n = 0;
  while (n < cap && buf[n] != '\0') ++n;
  return std::string(buf, n);
}

}  // namespace

Status MigNotEnabledError(const BackendGpu& gpu) {
  std::string pending = gpu.mig_pending_change
                            ? " A MIG mode change is pending: it takes effect after a GPU reset "
                              "(`sudo nvidia-smi -i " +
                                  std::to_string(gpu.index) +
                                  " -r`, with no process on the GPU) or a reboot."
                            : "";
  return FailedPreconditionError(fmt::format(
      "GPU {} ({}, {}) does not have MIG mode enabled; migsched never changes MIG mode or resets "
      "a GPU. The operator enables it with `sudo nvidia-smi -i {} -mig 1` (on A100/A30 followed "
      "by a GPU reset or a reboot; stop clients such as dcgm/nvsm/persistenced that keep the "
      "change pending), then restarts migsched, or leaves this GPU out of `gpus`.{}",
      gpu.index, gpu.name, gpu.uuid, gpu.index, pending));
}

NvmlBackend::NvmlBackend() : api_(std::make_unique<Api>()) {}

NvmlBackend::~NvmlBackend() {
  if (api_ && api_->shutdown != nullptr) api_->shutdown();
  if (lib_ != nullptr) dlclose(lib_);
}

StatusOr<std::unique_ptr<NvmlBackend>> NvmlBackend::Open(const std::string& library_path) {
  std::unique_ptr<NvmlBackend> b(new NvmlBackend());
  b->library_path_ = library_path;
  dlerror();
  void* lib = dlopen(library_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* err = dlerror();
    return UnavailableError(fmt::format("cannot load {}: {}; is the NVIDIA driver installed?",
                                        library_path, err != nullptr ? err : "unknown error"));
  }
  b->lib_ = lib;
  std::vector<std::string> missing;
#define MIGSCHED_NVML_RESOLVE(member, symbol)                           \
  b->api_->member = reinterpret_cast<symbol##_fn>(dlsym(lib, #symbol)); \
  if (b->api_->member == nullptr) missing.push_back(#symbol);
  MIGSCHED_NVML_CALLS(MIGSCHED_NVML_RESOLVE)
#undef MIGSCHED_NVML_RESOLVE
  if (!missing.empty()) {
    std::string list;
    for (const std::string& m : missing) list += (list.empty() ? "" : ", ") + m;
    b->api_->shutdown = nullptr;  // never initialised
    return UnavailableError(
        fmt::format("{} lacks the NVML calls {}; MIG placement needs a newer NVIDIA driver "
                    "(R470 or later)",
                    library_path, list));
  }
  nvmlReturn_t ret = b->api_->init();
  if (ret != NVML_SUCCESS) {
    std::string text = b->ErrorText(ret);
    b->api_->shutdown = nullptr;
    return UnavailableError(
        fmt::format("nvmlInit_v2 from {} failed: {}; is the NVIDIA driver "
                    "loaded (nvidia-smi works)?",
                    library_path, text));
  }
  return b;
}

std::string NvmlBackend::ErrorText(nvmlReturn_t ret) const {
  const char* s = api_->error_string != nullptr ? api_->error_string(ret) : nullptr;
  return fmt::format("{} (NVML error {})", s != nullptr ? s : "unknown error", ret);
}

Status NvmlBackend::Map(nvmlReturn_t ret, const std::string& what) const {
  const std::string text = fmt::format("{}: {}", what, ErrorText(ret));
  switch (ret) {
    case NVML_SUCCESS:
      return Status::Ok();
    case NVML_ERROR_INSUFFICIENT_RESOURCES:
      return Status(StatusCode::kResourceExhausted, text);
    case NVML_ERROR_IN_USE:
      return Status(StatusCode::kUnavailable,
                    text + fmt::format(": {} (processes, or handles another program such as a "
                                       "monitoring agent keeps open, still use it)",
                                       kInUse),
                    StatusReason::kInUse);
    case NVML_ERROR_RESET_REQUIRED:
      return Status(StatusCode::kUnavailable,
                    text + fmt::format(": it {} before MIG works (after a MIG mode change); the "
                                       "operator resets it with `sudo nvidia-smi -i <index> -r` "
                                       "with no process on it, or reboots; migsched never resets "
                                       "a GPU",
                                       kNeedsReset),
                    StatusReason::kNeedsReset);
    case NVML_ERROR_NO_PERMISSION:
      return FailedPreconditionError(
          text +
          ": creating, destroying and listing MIG instances needs root (CAP_SYS_ADMIN) or read "
          "access to the mig/config capability (/proc/driver/nvidia/capabilities/mig/config, "
          "device /dev/nvidia-caps/nvidia-cap1; docs/mig-hardware.md §8.3)");
    case NVML_ERROR_GPU_IS_LOST:
      return Status(StatusCode::kUnavailable,
                    text + ": the GPU fell off the bus or became inaccessible",
                    StatusReason::kDeviceLost);
    case NVML_ERROR_DRIVER_NOT_LOADED:
    case NVML_ERROR_UNINITIALIZED:
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
    case NVML_ERROR_TIMEOUT:
      return UnavailableError(text);
    case NVML_ERROR_NOT_FOUND:
      return NotFoundError(text);
    default:
      return InternalError(text);
  }
}

std::mutex& NvmlBackend::GpuMutex(int gpu) {
  std::lock_guard<std::mutex> lock(mu_);
  std::unique_ptr<std::mutex>& m = gpu_mu_[gpu];
  if (m == nullptr) m = std::make_unique<std::mutex>();
  return *m;
}

void NvmlBackend::ForgetDevice(int gpu) {
  std::lock_guard<std::mutex> lock(mu_);
  devices_.erase(gpu);
}

void NvmlBackend::ForgetProfiles(int gpu) {
  std::lock_guard<std::mutex> lock(mu_);
  profiles_.erase(gpu);
}

void NvmlBackend::AfterFailure(int gpu, const Status& st) {
  if (st.ok()) return;
  if (st.reason() == StatusReason::kNeedsReset || st.reason() == StatusReason::kDeviceLost ||
      st.reason() == StatusReason::kRenumbered) {
    // A reset may bring another handle and other profiles.
    ForgetDevice(gpu);
    ForgetProfiles(gpu);
  }
}

StatusOr<nvmlDevice_t> NvmlBackend::Device(int gpu) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = devices_.find(gpu);
    if (it != devices_.end()) return it->second;
  }
  unsigned int count = 0;
  nvmlReturn_t ret = api_->device_get_count(&count);
  if (ret != NVML_SUCCESS) return Map(ret, "nvmlDeviceGetCount_v2");
  if (gpu < 0 || static_cast<unsigned int>(gpu) >= count) {
    return NotFoundError(fmt::format("GPU {} not found (NVML lists {} GPUs)", gpu, count));
  }
  nvmlDevice_t dev = nullptr;
  ret = api_->device_get_handle_by_index(static_cast<unsigned int>(gpu), &dev);
  if (ret != NVML_SUCCESS) {
    return Map(ret, fmt::format("GPU {}: nvmlDeviceGetHandleByIndex_v2", gpu));
  }
  std::lock_guard<std::mutex> lock(mu_);
  devices_[gpu] = dev;
  return dev;
}

StatusOr<BackendGpu> NvmlBackend::ReadGpu(int gpu) {
  ASSIGN_OR_RETURN(nvmlDevice_t dev, Device(gpu));
  BackendGpu g;
  g.index = gpu;
  char buf[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
  nvmlReturn_t ret = api_->device_get_name(dev, buf, sizeof(buf));
  if (ret == NVML_ERROR_INVALID_ARGUMENT) {
    // A stale handle (the GPU was reset or the driver reloaded): look it up again, once.
    ForgetDevice(gpu);
    ASSIGN_OR_RETURN(dev, Device(gpu));
    ret = api_->device_get_name(dev, buf, sizeof(buf));
  }
  if (ret != NVML_SUCCESS) return Map(ret, fmt::format("GPU {}: nvmlDeviceGetName", gpu));
  g.name = CString(buf, sizeof(buf));
  char ubuf[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
  ret = api_->device_get_uuid(dev, ubuf, sizeof(ubuf));
  if (ret != NVML_SUCCESS) return Map(ret, fmt::format("GPU {}: nvmlDeviceGetUUID", gpu));
  g.uuid = CString(ubuf, sizeof(ubuf));
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto [first, inserted] = uuids_.emplace(gpu, g.uuid);
    if (!inserted && first->second != g.uuid) {
      devices_.erase(gpu);  // the profiles go in AfterFailure, under the GPU's mutex
      return Status(
          StatusCode::kUnavailable,
          fmt::format(
              "GPU {}: NVML index {} is now {} ({}), but it was {} when migsched started: the "
              "GPUs were renumbered (after a GPU reset or a driver reload; device minor numbers "
              "may have changed too); restart migsched so that it discovers them again",
              gpu, gpu, g.uuid, g.name, first->second),
          StatusReason::kRenumbered);
    }
  }
  nvmlMemory_t mem{};
  ret = api_->device_get_memory_info(dev, &mem);
  if (ret != NVML_SUCCESS) return Map(ret, fmt::format("GPU {}: nvmlDeviceGetMemoryInfo", gpu));
  g.memory_mib = static_cast<int64_t>(mem.total / (1024ull * 1024ull));
  unsigned int current = 0, pending = 0;
  ret = api_->device_get_mig_mode(dev, &current, &pending);
  if (ret == NVML_ERROR_NOT_SUPPORTED) {
    g.mig_enabled = false;  // a GPU without MIG support
  } else if (ret != NVML_SUCCESS) {
    return Map(ret, fmt::format("GPU {}: nvmlDeviceGetMigMode", gpu));
  } else {
    g.mig_enabled = current == NVML_DEVICE_MIG_ENABLE;
    g.mig_pending_change = pending != current;
  }
  return g;
}

StatusOr<std::vector<BackendGpu>> NvmlBackend::ListGpus() {
  // No GPU mutex: these reads do not touch MIG state, and must not wait behind a slow destroy.
  unsigned int count = 0;
  nvmlReturn_t ret = api_->device_get_count(&count);
  if (ret != NVML_SUCCESS) return Map(ret, "nvmlDeviceGetCount_v2");
  std::vector<BackendGpu> out;
  for (unsigned int i = 0; i < count; ++i) {
    auto g = ReadGpu(static_cast<int>(i));
    if (!g.ok()) {
      if (g.status().code() == StatusCode::kUnavailable &&
          g.status().reason() == StatusReason::kDeviceLost) {
        spdlog::warn("nvml backend: leaving out {}", g.status().message());
        ForgetDevice(static_cast<int>(i));
        continue;
      }
      return g.status();
    }
    out.push_back(std::move(*g));
  }
  return out;
}

Status NvmlBackend::RequireMig(int gpu) {
  ASSIGN_OR_RETURN(BackendGpu g, ReadGpu(gpu));
  if (!g.mig_enabled) {
    ForgetProfiles(gpu);  // a new MIG mode may bring other profiles
    return MigNotEnabledError(g);
  }
  return Status::Ok();
}

StatusOr<const std::vector<BackendProfile>*> NvmlBackend::Profiles(int gpu) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = profiles_.find(gpu);
    if (it != profiles_.end()) return &it->second;
  }
  ASSIGN_OR_RETURN(nvmlDevice_t dev, Device(gpu));
  std::vector<BackendProfile> out;
  // Indices from 0 until INVALID_ARGUMENT (nvml.h); the bound only guards a broken driver.
  for (unsigned int index = 0; index < 4 * NVML_GPU_INSTANCE_PROFILE_COUNT; ++index) {
    nvmlGpuInstanceProfileInfo_t info{};
    nvmlReturn_t ret = api_->device_get_gpu_instance_profile_info(dev, index, &info);
    if (ret == NVML_ERROR_INVALID_ARGUMENT) break;
    if (ret == NVML_ERROR_NOT_SUPPORTED)
      continue;  // this GPU lacks the profile (mig-hardware.md §8.5)
    if (ret != NVML_SUCCESS) {
      return Map(ret,
                 fmt::format("GPU {}: nvmlDeviceGetGpuInstanceProfileInfo(index {})", gpu, index));
    }
    BackendProfile p;
    p.nvml_profile_index = static_cast<int>(index);
    p.id = static_cast<int>(info.id);
    p.slice_count = static_cast<int>(info.sliceCount);
    p.instance_count = static_cast<int>(info.instanceCount);
    p.memory_mib = static_cast<int64_t>(info.memorySizeMB);
    unsigned int n = 0;
    const std::string what = fmt::format(
        "GPU {}: nvmlDeviceGetGpuInstancePossiblePlacements_v2(profile {})", gpu, info.id);
    ret = api_->device_get_gpu_instance_possible_placements(dev, info.id, nullptr, &n);
    if (ret == NVML_ERROR_NOT_SUPPORTED) continue;
    if (ret != NVML_SUCCESS) return Map(ret, what);
    std::vector<nvmlGpuInstancePlacement_t> placements(n);
    if (n > 0) {
      ret = api_->device_get_gpu_instance_possible_placements(dev, info.id, placements.data(), &n);
      if (ret != NVML_SUCCESS) return Map(ret, what);
      placements.resize(std::min<size_t>(n, placements.size()));
    }
    for (const auto& pl : placements) {
      p.placements.push_back({static_cast<int>(pl.start), static_cast<int>(pl.size)});
    }
    std::sort(p.placements.begin(), p.placements.end(),
              [](const Placement& a, const Placement& b) { return a.start < b.start; });
    out.push_back(std::move(p));
  }
  std::lock_guard<std::mutex> lock(mu_);
  return &(profiles_[gpu] = std::move(out));
}

StatusOr<std::vector<BackendProfile>> NvmlBackend::ListProfiles(int gpu) {
  std::lock_guard<std::mutex> lock(GpuMutex(gpu));
  Status st = RequireMig(gpu);
  StatusOr<const std::vector<BackendProfile>*> profiles =
      st.ok() ? Profiles(gpu) : StatusOr<const std::vector<BackendProfile>*>(st);
  if (!profiles.ok()) {
    AfterFailure(gpu, profiles.status());
    return profiles.status();
  }
  return **profiles;
}

StatusOr<std::vector<NvmlBackend::LiveGi>> NvmlBackend::LiveGis(int gpu) {
  ASSIGN_OR_RETURN(nvmlDevice_t dev, Device(gpu));
  ASSIGN_OR_RETURN(const std::vector<BackendProfile>* profiles, Profiles(gpu));
  std::vector<LiveGi> out;
  for (const BackendProfile& p : *profiles) {
    std::vector<nvmlGpuInstance_t> handles(static_cast<size_t>(std::max(p.instance_count, 1)) + 8);
    unsigned int count = 0;
    nvmlReturn_t ret = api_->device_get_gpu_instances(dev, static_cast<unsigned int>(p.id),
                                                      handles.data(), &count);
    if (ret == NVML_ERROR_NOT_SUPPORTED) continue;
    if (ret != NVML_SUCCESS) {
      return Map(ret, fmt::format("GPU {}: nvmlDeviceGetGpuInstances(profile {})", gpu, p.id));
    }
    for (unsigned int k = 0; k < count && k < handles.size(); ++k) {
      LiveGi gi{handles[k], {}};
      ret = api_->gpu_instance_get_info(handles[k], &gi.info);
      if (ret != NVML_SUCCESS) {
        return Map(ret, fmt::format("GPU {}: nvmlGpuInstanceGetInfo", gpu));
      }
      out.push_back(gi);
    }
  }
  std::sort(out.begin(), out.end(), [](const LiveGi& a, const LiveGi& b) {
    return a.info.placement.start < b.info.placement.start;
  });
  return out;
}

StatusOr<std::vector<nvmlComputeInstance_t>> NvmlBackend::ComputeInstancesOf(int gpu,
                                                                             const LiveGi& gi) {
  std::vector<nvmlComputeInstance_t> out;
  for (unsigned int index = 0; index < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; ++index) {
    nvmlComputeInstanceProfileInfo_t info{};
    nvmlReturn_t ret = api_->gpu_instance_get_compute_instance_profile_info(
        gi.handle, index, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &info);
    if (ret == NVML_ERROR_NOT_SUPPORTED || ret == NVML_ERROR_INVALID_ARGUMENT) continue;
    if (ret != NVML_SUCCESS) {
      return Map(ret, fmt::format("GPU {}: nvmlGpuInstanceGetComputeInstanceProfileInfo(GI {}, "
                                  "index {})",
                                  gpu, gi.info.id, index));
    }
    std::vector<nvmlComputeInstance_t> cis(static_cast<size_t>(info.instanceCount) + 8);
    unsigned int count = 0;
    ret = api_->gpu_instance_get_compute_instances(gi.handle, info.id, cis.data(), &count);
    if (ret == NVML_ERROR_NOT_SUPPORTED) continue;
    if (ret != NVML_SUCCESS) {
      return Map(ret,
                 fmt::format("GPU {}: nvmlGpuInstanceGetComputeInstances(GI {})", gpu, gi.info.id));
    }
    for (unsigned int k = 0; k < count && k < cis.size(); ++k) out.push_back(cis[k]);
  }
  return out;
}

StatusOr<std::string> NvmlBackend::MigUuid(int gpu, nvmlComputeInstance_t ci, unsigned int* ci_id) {
  nvmlComputeInstanceInfo_t info{};
  nvmlReturn_t ret = api_->compute_instance_get_info(ci, &info);
  if (ret != NVML_SUCCESS) {
    return Map(ret, fmt::format("GPU {}: nvmlComputeInstanceGetInfo_v2", gpu));
  }
  *ci_id = info.id;
  char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
  ret = api_->device_get_uuid(info.device, buf, sizeof(buf));
  if (ret != NVML_SUCCESS) {
    return Map(ret, fmt::format("GPU {}: nvmlDeviceGetUUID of the MIG device", gpu));
  }
  return CString(buf, sizeof(buf));
}

StatusOr<std::vector<BackendInstance>> NvmlBackend::ListInstancesLocked(int gpu) {
  ASSIGN_OR_RETURN(std::vector<LiveGi> gis, LiveGis(gpu));
  std::vector<BackendInstance> out;
  for (const LiveGi& gi : gis) {
    BackendInstance inst;
    inst.gpu = gpu;
    inst.profile_id = static_cast<int>(gi.info.profileId);
    inst.placement = {static_cast<int>(gi.info.placement.start),
                      static_cast<int>(gi.info.placement.size)};
    inst.gi_id = gi.info.id;
    ASSIGN_OR_RETURN(std::vector<nvmlComputeInstance_t> cis, ComputeInstancesOf(gpu, gi));
    inst.has_compute_instance = !cis.empty();
    if (!cis.empty()) {
      ASSIGN_OR_RETURN(inst.mig_uuid, MigUuid(gpu, cis.front(), &inst.ci_id));
    }
    out.push_back(std::move(inst));
  }
  return out;
}

StatusOr<std::vector<BackendInstance>> NvmlBackend::ListInstances(int gpu) {
  std::lock_guard<std::mutex> lock(GpuMutex(gpu));
  Status st = RequireMig(gpu);
  StatusOr<std::vector<BackendInstance>> out =
      st.ok() ? ListInstancesLocked(gpu) : StatusOr<std::vector<BackendInstance>>(st);
  if (!out.ok()) AfterFailure(gpu, out.status());
  return out;
}

StatusOr<BackendInstance> NvmlBackend::CreateInstance(int gpu, int profile_id,
                                                      Placement placement) {
  std::lock_guard<std::mutex> lock(GpuMutex(gpu));
  StatusOr<BackendInstance> made = [&]() -> StatusOr<BackendInstance> {
    RETURN_IF_ERROR(RequireMig(gpu));
    ASSIGN_OR_RETURN(nvmlDevice_t dev, Device(gpu));
    ASSIGN_OR_RETURN(const std::vector<BackendProfile>* profiles, Profiles(gpu));
    const BackendProfile* prof = nullptr;
    for (const BackendProfile& p : *profiles) {
      if (p.id == profile_id) prof = &p;
    }
    if (prof == nullptr) {
      return NotFoundError(
          fmt::format("GPU {}: the driver offers no GPU-instance profile id {}", gpu, profile_id));
    }
    const std::string what =
        fmt::format("GPU {}: cannot create profile id {} ({} compute slices) at placement {}", gpu,
                    profile_id, prof->slice_count, PlacementText(placement));
    if (std::find(prof->placements.begin(), prof->placements.end(), placement) ==
        prof->placements.end()) {
      std::string valid;
      for (const Placement& p : prof->placements) {
        valid += (valid.empty() ? "" : ", ") + PlacementText(p);
      }
      return Status(StatusCode::kResourceExhausted,
                    fmt::format("{}: not a possible placement of this profile (driver lists: {})",
                                what, valid.empty() ? "none" : valid));
    }
    nvmlGpuInstancePlacement_t pl{static_cast<unsigned int>(placement.start),
                                  static_cast<unsigned int>(placement.size)};
    nvmlGpuInstance_t gi = nullptr;
    nvmlReturn_t ret = api_->device_create_gpu_instance_with_placement(
        dev, static_cast<unsigned int>(profile_id), &pl, &gi);
    if (ret == NVML_ERROR_INSUFFICIENT_RESOURCES) {
      // Name the occupant, as the operator will want to know which instance is in the way.
      std::string occupant;
      auto live = ListInstancesLocked(gpu);
      if (live.ok()) {
        for (const BackendInstance& inst : *live) {
          if (Overlaps(inst.placement, placement)) {
            occupant = fmt::format("; it overlaps GPU instance {} (profile id {} at {}{}{})",
                                   inst.gi_id, inst.profile_id, PlacementText(inst.placement),
                                   inst.mig_uuid.empty() ? "" : ", ", inst.mig_uuid);
            break;
          }
        }
      }
      return Status(StatusCode::kResourceExhausted,
                    fmt::format("{}: nvmlDeviceCreateGpuInstanceWithPlacement: {}{}", what,
                                ErrorText(ret), occupant));
    }
    if (ret != NVML_SUCCESS) {
      return Map(ret, what + ": nvmlDeviceCreateGpuInstanceWithPlacement");
    }
    LiveGi live{gi, {}};
    ret = api_->gpu_instance_get_info(gi, &live.info);
    Status failure;
    if (ret != NVML_SUCCESS) {
      failure = Map(ret, what + ": nvmlGpuInstanceGetInfo");
      live.info.profileId = static_cast<unsigned int>(profile_id);
      live.info.placement = pl;
    }
    // The CI profile with the most compute slices (SHARED engines): one CI spanning the GI.
    nvmlComputeInstanceProfileInfo_t best{};
    bool found = false;
    for (unsigned int index = 0; failure.ok() && index < NVML_COMPUTE_INSTANCE_PROFILE_COUNT;
         ++index) {
      nvmlComputeInstanceProfileInfo_t info{};
      ret = api_->gpu_instance_get_compute_instance_profile_info(
          gi, index, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &info);
      if (ret == NVML_ERROR_NOT_SUPPORTED || ret == NVML_ERROR_INVALID_ARGUMENT) continue;
      if (ret != NVML_SUCCESS) {
        failure = Map(ret, what + ": nvmlGpuInstanceGetComputeInstanceProfileInfo");
        break;
      }
      if (!found || info.sliceCount > best.sliceCount) {
        best = info;
        found = true;
      }
    }
    if (failure.ok() && !found) {
      failure = InternalError(what + ": the driver lists no compute-instance profile for the GI");
    }
    nvmlComputeInstance_t ci = nullptr;
    if (failure.ok()) {
      ret = api_->gpu_instance_create_compute_instance(gi, best.id, &ci);
      if (ret != NVML_SUCCESS) {
        failure = Map(ret, what + ": nvmlGpuInstanceCreateComputeInstance");
        ci = nullptr;
      }
    }
    BackendInstance inst;
    if (failure.ok()) {
      inst.gpu = gpu;
      inst.profile_id = profile_id;
      inst.placement = {static_cast<int>(live.info.placement.start),
                        static_cast<int>(live.info.placement.size)};
      inst.gi_id = live.info.id;
      inst.has_compute_instance = true;
      auto uuid = MigUuid(gpu, ci, &inst.ci_id);
      if (uuid.ok()) {
        inst.mig_uuid = *uuid;
        return inst;
      }
      failure = uuid.status();
    }
    // Nothing half-made is left: undo the CI and the GI, and check that they went. The
    // failure is the driver's, not the request's (kDriverFault): the caller lists the GPU again.
    if (ci != nullptr) api_->compute_instance_destroy(ci);
    Status undo = DestroyGi(gpu, live, what + ": rolling back the GPU instance");
    // Permission and MIG-mode refusals keep their code; anything else is the driver's fault.
    const StatusCode code = failure.code() == StatusCode::kFailedPrecondition
                                ? StatusCode::kFailedPrecondition
                                : StatusCode::kUnavailable;
    // The reason is the driver's fault; what the failure and the undo said of the device (a
    // reset needed, lost, renumbered) is acted on here.
    AfterFailure(gpu, failure);
    AfterFailure(gpu, undo);
    if (!undo.ok()) {
      spdlog::error("nvml backend: {}; {}", failure.message(), undo.message());
      return Status(code,
                    fmt::format("{}: {}; undoing it failed too ({}): the GPU instance {} may be "
                                "left without a compute "
                                "instance until it is destroyed",
                                failure.message(), kDriverFault, undo.message(), live.info.id),
                    StatusReason::kDriverFault);
    }
    return Status(code,
                  fmt::format("{}: {}; the GPU instance was destroyed again", failure.message(),
                              kDriverFault),
                  StatusReason::kDriverFault);
  }();
  if (!made.ok()) AfterFailure(gpu, made.status());
  return made;
}

StatusOr<bool> NvmlBackend::GiListed(int gpu, unsigned int profile_id, unsigned int gi_id) {
  ASSIGN_OR_RETURN(nvmlDevice_t dev, Device(gpu));
  ASSIGN_OR_RETURN(const std::vector<BackendProfile>* profiles, Profiles(gpu));
  size_t cap = 8;
  for (const BackendProfile& p : *profiles) {
    if (p.id == static_cast<int>(profile_id)) cap += static_cast<size_t>(p.instance_count);
  }
  std::vector<nvmlGpuInstance_t> handles(cap);
  unsigned int count = 0;
  nvmlReturn_t ret = api_->device_get_gpu_instances(dev, profile_id, handles.data(), &count);
  if (ret != NVML_SUCCESS) {
    return Map(ret, fmt::format("GPU {}: nvmlDeviceGetGpuInstances(profile {})", gpu, profile_id));
  }
  for (unsigned int k = 0; k < count && k < handles.size(); ++k) {
    nvmlGpuInstanceInfo_t info{};
    if (api_->gpu_instance_get_info(handles[k], &info) == NVML_SUCCESS && info.id == gi_id) {
      return true;
    }
  }
  return false;
}

Status NvmlBackend::DestroyGi(int gpu, const LiveGi& gi, const std::string& what) {
  ASSIGN_OR_RETURN(std::vector<nvmlComputeInstance_t> cis, ComputeInstancesOf(gpu, gi));
  for (nvmlComputeInstance_t ci : cis) {
    nvmlReturn_t ret = api_->compute_instance_destroy(ci);
    if (ret != NVML_SUCCESS) return Map(ret, what + ": nvmlComputeInstanceDestroy");
  }
  nvmlReturn_t ret = api_->gpu_instance_destroy(gi.handle);
  if (ret != NVML_SUCCESS) return Map(ret, what + ": nvmlGpuInstanceDestroy");
  // Drivers in the field have answered success and left the instance: look again.
  StatusOr<bool> still = GiListed(gpu, gi.info.profileId, gi.info.id);
  if (!still.ok()) return still.status().WithPrefix(what + ": listing it after the destroy");
  if (*still) {
    return Status(StatusCode::kUnavailable,
                  fmt::format("{}: nvmlGpuInstanceDestroy reported success but the GPU instance "
                              "is still there: {}; it is destroyed again later",
                              what, kDriverFault),
                  StatusReason::kDriverFault);
  }
  return Status::Ok();
}

Status NvmlBackend::DestroyInstance(int gpu, unsigned int gi_id) {
  std::lock_guard<std::mutex> lock(GpuMutex(gpu));
  Status st = [&]() -> Status {
    ASSIGN_OR_RETURN(std::vector<LiveGi> gis, LiveGis(gpu));
    const LiveGi* target = nullptr;
    for (const LiveGi& gi : gis) {
      if (gi.info.id == gi_id) target = &gi;
    }
    if (target == nullptr) {
      return NotFoundError(fmt::format("GPU {}: no GPU instance with id {}", gpu, gi_id));
    }
    return DestroyGi(gpu, *target,
                     fmt::format("GPU {}: cannot destroy GPU instance {} (profile id {} at {}:{})",
                                 gpu, gi_id, target->info.profileId, target->info.placement.start,
                                 target->info.placement.size));
  }();
  AfterFailure(gpu, st);
  return st;
}

StatusOr<std::string> NvmlBackend::DriverVersion() {
  char buf[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
  nvmlReturn_t ret = api_->system_get_driver_version(buf, sizeof(buf));
  if (ret != NVML_SUCCESS) return Map(ret, "nvmlSystemGetDriverVersion");
  return CString(buf, sizeof(buf));
}

StatusOr<PcieThroughput> NvmlBackend::GetPcieThroughput(int gpu) {
  // No GPU mutex: a counter read, never behind a slow destroy.
  ASSIGN_OR_RETURN(nvmlDevice_t dev, Device(gpu));
  unsigned int tx = 0, rx = 0;
  nvmlReturn_t ret = api_->device_get_pcie_throughput(dev, NVML_PCIE_UTIL_TX_BYTES, &tx);
  if (ret == NVML_SUCCESS) {
    ret = api_->device_get_pcie_throughput(dev, NVML_PCIE_UTIL_RX_BYTES, &rx);
  }
  if (ret == NVML_ERROR_NOT_SUPPORTED) {
    return UnavailableError(
        fmt::format("GPU {}: nvmlDeviceGetPcieThroughput: {}", gpu, ErrorText(ret)));
  }
  if (ret != NVML_SUCCESS) return Map(ret, fmt::format("GPU {}: nvmlDeviceGetPcieThroughput", gpu));
  return PcieThroughput{static_cast<int64_t>(tx), static_cast<int64_t>(rx)};
}

}  // namespace migsched
