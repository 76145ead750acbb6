// FakeBackend: the `fake` MigBackend (docs/algorithms.md §7). Real
// time, no GPU: GPUs come from catalog models and instances are in-memory
// records. It enforces what NVML enforces when creating a GPU instance, so
// the daemon meets the same errors it would meet on hardware:
//   * the placement must be one of the profile's placements, else
//     kResourceExhausted (NVML: INSUFFICIENT_RESOURCES);
//   * the placement's units must be free, else kResourceExhausted naming the
//     GPU, the profile, the placement and the overlapping instance
//     (docs/mig-hardware.md §8.2: an occupied placement is INSUFFICIENT_RESOURCES);
//   * at most `instance_count` live instances per profile id (e.g. one
//     1g.5gb+me) and at most the model's compute slices in all (§1), else
//     kResourceExhausted.
//
// Identifiers (synthetic, deterministic):
//   GPU UUID   "GPU-fake-00000000-0000-0000-0000-<index, 12 hex digits>"
//   GI id      the smallest id >= 1 not used by a live GI of that GPU (NVML
//              reuses freed ids too); CI id 0 (the first CI of a GI)
//   MIG UUID   "MIG-<gpu 8 hex>-<gi id 4 hex>-4000-8000-<counter 12 hex>", the
//              counter counting creates on this backend from 1, so a MIG
//              UUID is never reused even when a GI id is.
//   GPU name   the model's first alias (what nvidia-smi prints), else its name;
//   memory     the largest profile's memorySizeMB (MiB).
//
// Injected faults (config key `fake`, DaemonConfig::fake):
//   fail_create N     the next N CreateInstance calls fail with kUnavailable;
//   destroy_in_use N  every instance answers DestroyInstance with kUnavailable
//                     "in use" N times before it is destroyed;
//   disappear_gpu I   GPU I vanishes at the first CreateInstance or
//                     DestroyInstance addressed to it (so discovery still sees
//                     it): from then on ListGpus omits it and every call on it
//                     answers kUnavailable "… is gone".
// Persistence (optional, FakeBackend::Open with a state file): real GPU
// instances outlive a daemon crash; with a state file the fake's do too. The
// instances and the UUID counter are rewritten (write + rename) after every
// successful create or destroy and loaded by Open, so a restarted daemon
// finds the instances it left behind (recovery tests, `kill -9`). Faults and
// test-hook flags are not persisted.
//
// Test hooks: SetInUse (destroy answers "in use" while set), Disappear,
// SetMigEnabled, SetGpuName, SetMemoryMib, OverrideProfiles, SetPcieThroughput.
//
// Errors beyond MigBackend's: kNotFound for a GPU index outside the node or a
// profile id the GPU does not offer; kFailedPrecondition from ListProfiles,
// ListInstances and CreateInstance while MIG mode is disabled.
//
// Thread-safety: thread-safe (one internal mutex), so tests may call the
// hooks while a daemon thread uses the backend.
#ifndef MIGSCHED_DAEMON_FAKE_BACKEND_H_
#define MIGSCHED_DAEMON_FAKE_BACKEND_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/gpu_model.h"
#include "core/status.h"
#include "daemon/config.h"
#include "daemon/mig_backend.h"

namespace migsched {

class FakeBackend : public MigBackend {
 public:
  // One GPU per entry of `models` (index = position), e.g. the result of
  // ParseClusterSpec("4xA100-40GB", catalog). The models must outlive the
  // backend. Every GPU starts with MIG enabled and no instances.
  explicit FakeBackend(std::vector<const GpuModel*> models, FakeFaults faults = {});

  // As the constructor, persisting to `state_file` (JSON) unless it is empty;
  // an existing file is loaded. Errors: kInvalidArgument naming the file for
  // an unreadable or malformed file or an instance the models do not allow
  // there (invalid placement, overlap, unknown profile id); kFailedPrecondition
  // when the file lists a different number of GPUs than `models`.
  static StatusOr<std::unique_ptr<FakeBackend>> Open(std::vector<const GpuModel*> models,
                                                     FakeFaults faults,
                                                     const std::string& state_file);

  std::string_view name() const override { return "fake"; }
  StatusOr<std::vector<BackendGpu>> ListGpus() override;
  StatusOr<std::vector<BackendProfile>> ListProfiles(int gpu) override;
  StatusOr<std::vector<BackendInstance>> ListInstances(int gpu) override;
  StatusOr<BackendInstance> CreateInstance(int gpu, int profile_id, Placement placement) override;
  Status DestroyInstance(int gpu, unsigned int gi_id) override;
  // The value set with SetPcieThroughput; kUnavailable when none was set.
  StatusOr<PcieThroughput> GetPcieThroughput(int gpu) override;

  // ---- test hooks ----
  // While `in_use`, DestroyInstance(gpu, gi_id) answers kUnavailable "in use"
  // (as NVML does while processes run on the instance). kNotFound if no such
  // GI is live.
  Status SetInUse(int gpu, unsigned int gi_id, bool in_use);
  // The GPU vanishes now (see disappear_gpu above). No-op for an unknown index.
  void Disappear(int gpu);
  // Changes the reported MIG mode (instances are kept; a GPU without MIG is
  // refused by ListProfiles/ListInstances/CreateInstance).
  void SetMigEnabled(int gpu, bool enabled);
  // Changes the product name ListGpus reports (to test catalog matching).
  void SetGpuName(int gpu, std::string name);
  // Changes the device memory ListGpus reports (MiB).
  void SetMemoryMib(int gpu, int64_t mib);
  // Replaces the profiles the "driver" reports for `gpu` (to test discovery's
  // mismatch handling); creates are then validated against these.
  void OverrideProfiles(int gpu, std::vector<BackendProfile> profiles);
  void SetPcieThroughput(int gpu, PcieThroughput value);
  // Number of CreateInstance / DestroyInstance calls that succeeded.
  int64_t creates() const;
  int64_t destroys() const;

 private:
  struct Instance {
    BackendInstance info;
    int in_use_answers_left = 0;  // destroy_in_use countdown
    bool marked_in_use = false;   // SetInUse
  };
  struct Gpu {
    const GpuModel* model = nullptr;
    BackendGpu info;
    std::vector<BackendProfile> profiles;
    std::vector<Instance> instances;  // ascending placement start
    bool gone = false;
    std::optional<PcieThroughput> pcie;
  };

  // kNotFound / kUnavailable for a bad or vanished GPU; else the GPU.
  StatusOr<Gpu*> Lookup(int gpu);
  Status RequireMig(const Gpu& g) const;
  // "3g.20gb (profile id 9)" or "profile id 9" when the model does not name it.
  std::string ProfileLabel(const Gpu& g, int profile_id) const;
  Status CheckDisappearing(int gpu);
  // Validates and records a create (mu_ held). `forced_gi_id` > 0 and a
  // non-empty `forced_uuid` restore a loaded instance (no fault injection).
  StatusOr<BackendInstance> CreateLocked(int gpu, int profile_id, Placement placement,
                                         unsigned int forced_gi_id, const std::string& forced_uuid);
  Status Load();
  Status Save() const;

  mutable std::mutex mu_;
  std::vector<Gpu> gpus_;
  FakeFaults faults_;
  std::string state_file_;  // empty: not persisted
  int fail_create_left_ = 0;
  uint64_t counter_ = 0;  // creates attempted that got a MIG UUID
  int64_t creates_ = 0;
  int64_t destroys_ = 0;
};

// The BackendProfiles a model's catalog data stands for: every profile with a
// known NVML id (Profile::id >= 0), in catalog order, with nvml_profile_index,
// compute slices, max instances, memory MiB and placements copied.
std::vector<BackendProfile> BackendProfilesOf(const GpuModel& model);

}  // namespace migsched

#endif  // MIGSCHED_DAEMON_FAKE_BACKEND_H_
