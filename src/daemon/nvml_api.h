// The part of the NVML C API the nvml backend uses, declared here so the build
// needs no CUDA/NVML headers (libnvidia-ml.so.1 is loaded at run time with
// dlopen, daemon/nvml_backend.h). Layouts and values follow nvml.h 13.3.29
// (NVIDIA/go-nvml gen/nvml/nvml.h; summarised in docs/mig-hardware.md §8.1–§8.2).
// The fake library of the tests (tests/fake_nvml/fake_nvml.cc) implements
// exactly these functions with these types.
//
// Deliberately absent: nvmlDeviceSetMigMode and every reset call. migsched
// never changes MIG mode and never resets a GPU (docs/mig-hardware.md §8.4), so it
// does not even look those symbols up.
//
// Thread-safety: declarations only.
#ifndef MIGSCHED_DAEMON_NVML_API_H_
#define MIGSCHED_DAEMON_NVML_API_H_

namespace migsched::nvml {

// nvmlReturn_t (the values the backend distinguishes; others are reported by number).
using nvmlReturn_t = int;
inline constexpr nvmlReturn_t NVML_SUCCESS = 0;
inline constexpr nvmlReturn_t NVML_ERROR_UNINITIALIZED = 1;
inline constexpr nvmlReturn_t NVML_ERROR_INVALID_ARGUMENT = 2;
inline constexpr nvmlReturn_t NVML_ERROR_NOT_SUPPORTED = 3;
inline constexpr nvmlReturn_t NVML_ERROR_NO_PERMISSION = 4;
inline constexpr nvmlReturn_t NVML_ERROR_ALREADY_INITIALIZED = 5;
inline constexpr nvmlReturn_t NVML_ERROR_NOT_FOUND = 6;
inline constexpr nvmlReturn_t NVML_ERROR_INSUFFICIENT_SIZE = 7;
inline constexpr nvmlReturn_t NVML_ERROR_DRIVER_NOT_LOADED = 9;
inline constexpr nvmlReturn_t NVML_ERROR_TIMEOUT = 10;
inline constexpr nvmlReturn_t NVML_ERROR_LIBRARY_NOT_FOUND = 12;
inline constexpr nvmlReturn_t NVML_ERROR_FUNCTION_NOT_FOUND = 13;
inline constexpr nvmlReturn_t NVML_ERROR_GPU_IS_LOST = 15;
inline constexpr nvmlReturn_t NVML_ERROR_RESET_REQUIRED = 16;
inline constexpr nvmlReturn_t NVML_ERROR_OPERATING_SYSTEM = 17;
inline constexpr nvmlReturn_t NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18;
inline constexpr nvmlReturn_t NVML_ERROR_IN_USE = 19;
inline constexpr nvmlReturn_t NVML_ERROR_MEMORY = 20;
inline constexpr nvmlReturn_t NVML_ERROR_NO_DATA = 21;
inline constexpr nvmlReturn_t NVML_ERROR_INSUFFICIENT_RESOURCES = 23;
inline constexpr nvmlReturn_t NVML_ERROR_UNKNOWN = 999;

// Opaque handles.
struct nvmlDevice_st;
struct nvmlGpuInstance_st;
struct nvmlComputeInstance_st;
using nvmlDevice_t = nvmlDevice_st*;
using nvmlGpuInstance_t = nvmlGpuInstance_st*;
using nvmlComputeInstance_t = nvmlComputeInstance_st*;

// Buffer sizes for names and UUIDs (NVML_DEVICE_NAME_V2_BUFFER_SIZE,
// NVML_DEVICE_UUID_V2_BUFFER_SIZE).
inline constexpr unsigned int NVML_DEVICE_NAME_V2_BUFFER_SIZE = 96;
inline constexpr unsigned int NVML_DEVICE_UUID_V2_BUFFER_SIZE = 96;
// NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE (nvmlSystemGetDriverVersion).
inline constexpr unsigned int NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE = 80;

// nvmlDeviceGetMigMode values.
inline constexpr unsigned int NVML_DEVICE_MIG_DISABLE = 0x0;
inline constexpr unsigned int NVML_DEVICE_MIG_ENABLE = 0x1;

// GPU-instance profile indices run 0x0 (1_SLICE) .. 0x11 (3_SLICE_GFX); COUNT = 0x12.
// Enumeration goes on until NVML_ERROR_INVALID_ARGUMENT (nvml.h), so the COUNT is only a bound.
inline constexpr unsigned int NVML_GPU_INSTANCE_PROFILE_COUNT = 0x12;
// Compute-instance profile indices 0 (1_SLICE) .. 8 (7_SLICE_NVL); COUNT = 9.
inline constexpr unsigned int NVML_COMPUTE_INSTANCE_PROFILE_COUNT = 9;
inline constexpr unsigned int NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED = 0;

// nvmlPcieUtilCounter_t.
inline constexpr int NVML_PCIE_UTIL_TX_BYTES = 0;
inline constexpr int NVML_PCIE_UTIL_RX_BYTES = 1;

struct nvmlMemory_t {  // bytes
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

struct nvmlGpuInstancePlacement_t {  // memory slices (placement units)
  unsigned int start;
  unsigned int size;
};

struct nvmlGpuInstanceProfileInfo_t {
  unsigned int id;  // the profile ID the create/placement calls take
  unsigned int isP2pSupported;
  unsigned int sliceCount;  // compute slices
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int copyEngineCount;
  unsigned int decoderCount;
  unsigned int encoderCount;
  unsigned int jpegCount;
  unsigned int ofaCount;
  unsigned long long memorySizeMB;
};

struct nvmlGpuInstanceInfo_t {
  nvmlDevice_t device;
  unsigned int id;
  unsigned int profileId;
  nvmlGpuInstancePlacement_t placement;
};

struct nvmlComputeInstanceProfileInfo_t {
  unsigned int id;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int sharedCopyEngineCount;
  unsigned int sharedDecoderCount;
  unsigned int sharedEncoderCount;
  unsigned int sharedJpegCount;
  unsigned int sharedOfaCount;
};

struct nvmlComputeInstancePlacement_t {  // compute slices within the GI
  unsigned int start;
  unsigned int size;
};

// As filled by nvmlComputeInstanceGetInfo_v2; `device` is the MIG device
// handle whose nvmlDeviceGetUUID is the "MIG-…" UUID.
struct nvmlComputeInstanceInfo_t {
  nvmlDevice_t device;
  nvmlGpuInstance_t gpuInstance;
  unsigned int id;
  unsigned int profileId;
  nvmlComputeInstancePlacement_t placement;
};

// Function pointer types, one per symbol looked up (signatures as in nvml.h).
using nvmlInit_v2_fn = nvmlReturn_t (*)();
using nvmlShutdown_fn = nvmlReturn_t (*)();
using nvmlErrorString_fn = const char* (*)(nvmlReturn_t);
using nvmlDeviceGetCount_v2_fn = nvmlReturn_t (*)(unsigned int*);
using nvmlDeviceGetHandleByIndex_v2_fn = nvmlReturn_t (*)(unsigned int, nvmlDevice_t*);
using nvmlDeviceGetName_fn = nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned int);
using nvmlDeviceGetUUID_fn = nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned int);
using nvmlDeviceGetMemoryInfo_fn = nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t*);
using nvmlDeviceGetMigMode_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*, unsigned int*);
using nvmlDeviceGetGpuInstanceProfileInfo_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int,
                                                                nvmlGpuInstanceProfileInfo_t*);
using nvmlDeviceGetGpuInstancePossiblePlacements_v2_fn =
    nvmlReturn_t (*)(nvmlDevice_t, unsigned int, nvmlGpuInstancePlacement_t*, unsigned int*);
using nvmlDeviceCreateGpuInstanceWithPlacement_fn = nvmlReturn_t (*)(
    nvmlDevice_t, unsigned int, const nvmlGpuInstancePlacement_t*, nvmlGpuInstance_t*);
using nvmlGpuInstanceGetComputeInstanceProfileInfo_fn = nvmlReturn_t (*)(
    nvmlGpuInstance_t, unsigned int, unsigned int, nvmlComputeInstanceProfileInfo_t*);
using nvmlGpuInstanceCreateComputeInstance_fn = nvmlReturn_t (*)(nvmlGpuInstance_t, unsigned int,
                                                                 nvmlComputeInstance_t*);
using nvmlComputeInstanceGetInfo_v2_fn = nvmlReturn_t (*)(nvmlComputeInstance_t,
                                                          nvmlComputeInstanceInfo_t*);
using nvmlDeviceGetGpuInstances_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int,
                                                      nvmlGpuInstance_t*, unsigned int*);
using nvmlGpuInstanceGetInfo_fn = nvmlReturn_t (*)(nvmlGpuInstance_t, nvmlGpuInstanceInfo_t*);
using nvmlGpuInstanceGetComputeInstances_fn = nvmlReturn_t (*)(nvmlGpuInstance_t, unsigned int,
                                                               nvmlComputeInstance_t*,
                                                               unsigned int*);
using nvmlComputeInstanceDestroy_fn = nvmlReturn_t (*)(nvmlComputeInstance_t);
using nvmlGpuInstanceDestroy_fn = nvmlReturn_t (*)(nvmlGpuInstance_t);
using nvmlSystemGetDriverVersion_fn = nvmlReturn_t (*)(char*, unsigned int);
using nvmlDeviceGetPcieThroughput_fn = nvmlReturn_t (*)(nvmlDevice_t, int, unsigned int*);

}  // namespace migsched::nvml

#endif  // MIGSCHED_DAEMON_NVML_API_H_
