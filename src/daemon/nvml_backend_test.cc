// The nvml backend's real code path (dlopen, dlsym, the NVML calls) against the
// fake libnvidia-ml of tests/fake_nvml (MIGSCHED_FAKE_NVML). Expected values
// come from the A100 40GB table of docs/mig-hardware.md §2.2 and from
// the configs written here, not from the backend's output.
#include "daemon/nvml_backend.h"

#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "build_paths.h"
#include "daemon/discovery.h"
#include "fake_nvml/fake_nvml_hooks.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;
using ::testing::StartsWith;

class NvmlBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The fake library's test hooks, resolved on the same handle NvmlBackend::Open gets.
    std::string error;
    ASSERT_TRUE(fake_.Load(MIGSCHED_FAKE_NVML, &error)) << error;
    UseConfig("");
  }
  void TearDown() override {
    backend_.reset();
    if (fake_.lib != nullptr) {
      EXPECT_EQ(fake_.forbidden_calls(), 0) << "nvmlDeviceSetMigMode must never be called";
      fake_.Close();
    }
    unsetenv("MIGSCHED_FAKE_NVML_CONFIG");
  }

  // Empty: the fake's default node (two A100 40GB, MIG enabled).
  void UseConfig(const std::string& json) {
    backend_.reset();
    if (json.empty()) {
      unsetenv("MIGSCHED_FAKE_NVML_CONFIG");
    } else {
      std::string path = testing::WriteTempFile("fake-nvml.json", json);
      setenv("MIGSCHED_FAKE_NVML_CONFIG", path.c_str(), 1);
    }
    ASSERT_EQ(fake_.reset(), 0);
  }

  NvmlBackend* Open() {
    auto b = NvmlBackend::Open(MIGSCHED_FAKE_NVML);
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    if (!b.ok()) return nullptr;
    backend_ = std::move(*b);
    return backend_.get();
  }

  testing::FakeNvmlHooks fake_;
  std::unique_ptr<NvmlBackend> backend_;
};

using testing::kNvml1g5;
using testing::kNvml2g;
using testing::kNvml3g;
using testing::kNvml7g;

TEST_F(NvmlBackendTest, MissingLibraryIsUnavailableWithAHint) {
  auto b = NvmlBackend::Open("/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(b.status().message(), StartsWith("cannot load /nonexistent/libnvidia-ml.so.1: "));
  EXPECT_THAT(b.status().message(), HasSubstr("No such file or directory"));
  EXPECT_THAT(b.status().message(), ::testing::EndsWith("; is the NVIDIA driver installed?"));
}

TEST_F(NvmlBackendTest, LibraryWithoutNvmlCallsIsRefused) {
  auto b = NvmlBackend::Open("libm.so.6");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(b.status().message(),
              StartsWith("libm.so.6 lacks the NVML calls nvmlInit_v2, nvmlShutdown, "));
  EXPECT_THAT(b.status().message(), HasSubstr("nvmlDeviceGetPcieThroughput"));
}

TEST_F(NvmlBackendTest, DiscoversGpusAndTheA100Profiles) {
  NvmlBackend* b = Open();
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->name(), "nvml");
  auto gpus = b->ListGpus();
  ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
  ASSERT_EQ(gpus->size(), 2u);
  EXPECT_EQ((*gpus)[1].index, 1);
  EXPECT_EQ((*gpus)[1].name, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ((*gpus)[1].uuid, "GPU-fa4e0000-0000-0000-0000-000000000001");
  EXPECT_EQ((*gpus)[1].memory_mib, 40960);  // 40 GiB in bytes from nvmlDeviceGetMemoryInfo
  EXPECT_TRUE((*gpus)[1].mig_enabled);
  EXPECT_FALSE((*gpus)[1].mig_pending_change);

  auto profiles = b->ListProfiles(0);
  ASSERT_TRUE(profiles.ok()) << profiles.status().ToString();
  // Enumerated by NVML index 0x0, 0x1, 0x2, 0x3, 0x4, 0x7, 0x9 (the mig-hardware.md §2.2 table's
  // Index column).
  struct Row {
    int index, id, slices, max;
    int64_t mib;
    std::vector<int> starts;
    int size;
  };
  const std::vector<Row> expected = {
      {0x0, 19, 1, 7, 4864, {0, 1, 2, 3, 4, 5, 6}, 1},
      {0x1, 14, 2, 3, 9856, {0, 2, 4}, 2},
      {0x2, 9, 3, 2, 19968, {0, 4}, 4},
      {0x3, 5, 4, 1, 19968, {0}, 4},
      {0x4, 0, 7, 1, 40192, {0}, 8},
      {0x7, 20, 1, 1, 4864, {0, 1, 2, 3, 4, 5, 6}, 1},
      {0x9, 15, 1, 4, 9856, {0, 2, 4, 6}, 2},
  };
  ASSERT_EQ(profiles->size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE("profile id " + std::to_string(expected[i].id));
    const BackendProfile& p = (*profiles)[i];
    EXPECT_EQ(p.nvml_profile_index, expected[i].index);
    EXPECT_EQ(p.id, expected[i].id);
    EXPECT_EQ(p.slice_count, expected[i].slices);
    EXPECT_EQ(p.instance_count, expected[i].max);
    EXPECT_EQ(p.memory_mib, expected[i].mib);
    std::vector<Placement> placements;
    for (int s : expected[i].starts) placements.push_back({s, expected[i].size});
    EXPECT_EQ(p.placements, placements);
  }
}

TEST_F(NvmlBackendTest, CreateReturnsTheMigUuidAndDestroyRemovesIt) {
  NvmlBackend* b = Open();
  ASSERT_NE(b, nullptr);
  auto made = b->CreateInstance(0, kNvml3g, {4, 4});
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  EXPECT_EQ(made->gpu, 0);
  EXPECT_EQ(made->profile_id, kNvml3g);
  EXPECT_EQ(made->placement, (Placement{4, 4}));
  EXPECT_EQ(made->gi_id, 1u);
  EXPECT_EQ(made->ci_id, 0u);
  EXPECT_TRUE(made->has_compute_instance);
  EXPECT_THAT(made->mig_uuid,
              MatchesRegex("MIG-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"));
  auto second = b->CreateInstance(0, kNvml2g, {0, 2});
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_NE(second->mig_uuid, made->mig_uuid);

  auto list = b->ListInstances(0);
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  ASSERT_EQ(list->size(), 2u);  // ascending start: 2g@0, then 3g@4
  EXPECT_EQ((*list)[0].placement, (Placement{0, 2}));
  EXPECT_EQ((*list)[0].mig_uuid, second->mig_uuid);
  EXPECT_EQ((*list)[1].placement, (Placement{4, 4}));
  EXPECT_EQ((*list)[1].gi_id, made->gi_id);
  EXPECT_EQ((*list)[1].mig_uuid, made->mig_uuid);
  EXPECT_TRUE(b->ListInstances(1)->empty());

  ASSERT_TRUE(b->DestroyInstance(0, made->gi_id).ok());
  list = b->ListInstances(0);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].gi_id, second->gi_id);
  Status again = b->DestroyInstance(0, made->gi_id);
  EXPECT_EQ(again.code(), StatusCode::kNotFound);
  EXPECT_EQ(again.message(), "GPU 0: no GPU instance with id 1");
}

TEST_F(NvmlBackendTest, OverlapIsResourceExhaustedNamingTheOccupant) {
  NvmlBackend* b = Open();
  ASSERT_NE(b, nullptr);
  auto full = b->CreateInstance(0, kNvml7g, {0, 8});
  ASSERT_TRUE(full.ok()) << full.status().ToString();
  // 1g.5gb@6 needs unit 6, which 7g.40gb@0 (units 0-7) holds.
  auto made = b->CreateInstance(0, kNvml1g5, {6, 1});
  ASSERT_FALSE(made.ok());
  EXPECT_EQ(made.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(made.status().message(),
              StartsWith("GPU 0: cannot create profile id 19 (1 compute slices) at placement 6:1: "
                         "nvmlDeviceCreateGpuInstanceWithPlacement: Insufficient Resources"));
  EXPECT_THAT(made.status().message(),
              HasSubstr("it overlaps GPU instance 1 (profile id 0 at 0:8, " + full->mig_uuid));
  EXPECT_EQ(b->ListInstances(0)->size(), 1u);
}

TEST_F(NvmlBackendTest, ImpossiblePlacementAndUnknownProfile) {
  NvmlBackend* b = Open();
  ASSERT_NE(b, nullptr);
  // 2g.10gb's possible placements are {0,2,4}:2 (mig-hardware.md §2.2).
  auto made = b->CreateInstance(0, kNvml2g, {6, 2});
  ASSERT_FALSE(made.ok());
  EXPECT_EQ(made.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(made.status().message(),
              HasSubstr("not a possible placement of this profile (driver lists: 0:2, 2:2, 4:2)"));
  auto unknown = b->CreateInstance(0, 42, {0, 1});
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(unknown.status().message(), "GPU 0: the driver offers no GPU-instance profile id 42");
  EXPECT_EQ(b->CreateInstance(5, kNvml7g, {0, 8}).status().code(), StatusCode::kNotFound);
}

TEST_F(NvmlBackendTest, DestroyInUseIsUnavailableUntilTheProcessesEnd) {
  NvmlBackend* b = Open();
  ASSERT_NE(b, nullptr);
  auto made = b->CreateInstance(1, kNvml3g, {0, 4});
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  ASSERT_EQ(fake_.set_in_use(1, made->gi_id, 1), 0);
  for (int attempt = 0; attempt < 2; ++attempt) {
    Status st = b->DestroyInstance(1, made->gi_id);
    EXPECT_EQ(st.code(), StatusCode::kUnavailable);
    EXPECT_THAT(st.message(), StartsWith("GPU 1: cannot destroy GPU instance 1 (profile id 9 at "
                                         "0:4): nvmlComputeInstanceDestroy: In use by another "
                                         "client"));
    EXPECT_THAT(st.message(), HasSubstr("in use"));
  }
  // Still there, compute instance and MIG UUID included: the daemon keeps it idle meanwhile.
  auto list = b->ListInstances(1);
  ASSERT_EQ(list->size(), 1u);
  EXPECT_TRUE((*list)[0].has_compute_instance);
  EXPECT_EQ((*list)[0].mig_uuid, made->mig_uuid);
  ASSERT_EQ(fake_.set_in_use(1, made->gi_id, 0), 0);
  EXPECT_TRUE(b->DestroyInstance(1, made->gi_id).ok());
  EXPECT_TRUE(b->ListInstances(1)->empty());
}

TEST_F(NvmlBackendTest, MigDisabledGpuIsRefusedWithTheOperatorsInstructions) {
  UseConfig(R"({"gpus": [{"name": "NVIDIA A100-PCIE-40GB"},
                         {"name": "NVIDIA A100-PCIE-40GB", "mig": "disabled"},
                         {"name": "NVIDIA A100-PCIE-40GB", "mig": "disabled",
                          "mig_pending": "enabled"}]})");
  NvmlBackend* b = Open();
  ASSERT_NE(b, nullptr);
  auto gpus = b->ListGpus();
  ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
  ASSERT_EQ(gpus->size(), 3u);
  EXPECT_TRUE((*gpus)[0].mig_enabled);
  EXPECT_FALSE((*gpus)[1].mig_enabled);
  EXPECT_FALSE((*gpus)[1].mig_pending_change);
  EXPECT_TRUE((*gpus)[2].mig_pending_change);
  for (const Status& st : {b->ListProfiles(1).status(), b->ListInstances(1).status(),
                           b->CreateInstance(1, kNvml7g, {0, 8}).status()}) {
    EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
    EXPECT_THAT(st.message(),
                StartsWith("GPU 1 (NVIDIA A100-PCIE-40GB, GPU-fa4e0000-0000-0000-0000-000000000001)"
                           " does not have MIG mode enabled; migsched never changes MIG mode"));
    EXPECT_THAT(st.message(), HasSubstr("`sudo nvidia-smi -i 1 -mig 1`"));
    EXPECT_THAT(st.message(), Not(HasSubstr("A MIG mode change is pending")));
  }
  Status pending = b->ListProfiles(2).status();
  EXPECT_THAT(pending.message(), HasSubstr("A MIG mode change is pending"));
  EXPECT_THAT(pending.message(), HasSubstr("`sudo nvidia-smi -i 2 -r`"));
  EXPECT_TRUE(b->ListProfiles(0).ok());
}

TEST_F(NvmlBackendTest, GpuWithoutMigSupportIsReportedAsNotEnabled) {
  UseConfig(R"({"gpus": [{"name": "NVIDIA GeForce RTX 4090", "mig": "unsupported"}]})");
  NvmlBackend* b = Open();
  ASSERT_NE(b, nullptr);
  auto gpus = b->ListGpus();
  ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
  EXPECT_FALSE((*gpus)[0].mig_enabled);
  EXPECT_EQ(b->ListProfiles(0).status().code(), StatusCode::kFailedPrecondition);
}

TEST_F(NvmlBackendTest, ProfilesTheDriverDoesNotSupportAreSkipped) {
  // An older driver: no 1g.5gb+me (index 0x7) nor 1g.10gb (index 0x9), "Older -lgipp dumps
  // lack IDs 20/15" (mig-hardware.md §2.2). Index 0x5 and 0x6 exist on no A100 either.
  UseConfig(R"({"gpus": [{"profiles": [
      {"index": 0, "id": 19, "slices": 1, "instances": 7, "memory_mib": 4864,
       "placements": [[0,1],[1,1],[2,1],[3,1],[4,1],[5,1],[6,1]]},
      {"index": 1, "id": 14, "slices": 2, "instances": 3, "memory_mib": 9856,
       "placements": [[0,2],[2,2],[4,2]]},
      {"index": 4, "id": 0, "slices": 7, "instances": 1, "memory_mib": 40192,
       "placements": [[0,8]]}]}]})");
  NvmlBackend* b = Open();
  ASSERT_NE(b, nullptr);
  auto profiles = b->ListProfiles(0);
  ASSERT_TRUE(profiles.ok()) << profiles.status().ToString();
  ASSERT_EQ(profiles->size(), 3u);
  EXPECT_EQ((*profiles)[0].id, 19);
  EXPECT_EQ((*profiles)[1].id, 14);
  EXPECT_EQ((*profiles)[2].id, 0);
  EXPECT_EQ((*profiles)[2].nvml_profile_index, 4);
}

TEST_F(NvmlBackendTest, ExistingInstancesAreListedForAdoption) {
  UseConfig(R"({"gpus": [{"instances": [
      {"profile_id": 9, "start": 4, "size": 4},
      {"profile_id": 14, "start": 0, "size": 2, "compute_instance": false}]}]})");
  NvmlBackend* b = Open();
  ASSERT_NE(b, nullptr);
  auto list = b->ListInstances(0);
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].profile_id, 14);
  EXPECT_EQ((*list)[0].placement, (Placement{0, 2}));
  EXPECT_FALSE((*list)[0].has_compute_instance);
  EXPECT_TRUE((*list)[0].mig_uuid.empty());
  EXPECT_EQ((*list)[1].profile_id, 9);
  EXPECT_EQ((*list)[1].placement, (Placement{4, 4}));
  EXPECT_TRUE((*list)[1].has_compute_instance);
  EXPECT_THAT((*list)[1].mig_uuid, StartsWith("MIG-"));
  // A GI without a CI is destroyed directly.
  EXPECT_TRUE(b->DestroyInstance(0, (*list)[0].gi_id).ok());
  // 2g@2 overlaps nothing now (3g@4 covers 4-7).
  EXPECT_TRUE(b->CreateInstance(0, kNvml2g, {2, 2}).ok());
}

TEST_F(NvmlBackendTest, NoPermissionNamesTheMigConfigCapability) {
  NvmlBackend* b = Open();
  ASSERT_NE(b, nullptr);
  fake_.set_no_permission(1);
  for (const Status& st :
       {b->ListProfiles(0).status(), b->CreateInstance(0, kNvml7g, {0, 8}).status()}) {
    EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
    EXPECT_THAT(st.message(), HasSubstr("Insufficient Permissions"));
    EXPECT_THAT(st.message(), HasSubstr("root (CAP_SYS_ADMIN)"));
    EXPECT_THAT(st.message(), HasSubstr("/proc/driver/nvidia/capabilities/mig/config"));
  }
  fake_.set_no_permission(0);
}

TEST_F(NvmlBackendTest, LostGpuIsUnavailableAndLeftOut) {
  NvmlBackend* b = Open();
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(b->ListGpus().ok());
  ASSERT_EQ(fake_.set_gpu_lost(1, 1), 0);
  auto gpus = b->ListGpus();
  ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
  ASSERT_EQ(gpus->size(), 1u);
  EXPECT_EQ((*gpus)[0].index, 0);
  auto made = b->CreateInstance(1, kNvml7g, {0, 8});
  EXPECT_EQ(made.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(made.status().message(), HasSubstr("GPU is lost"));
  EXPECT_EQ(b->GetPcieThroughput(1).status().code(), StatusCode::kUnavailable);
}

TEST_F(NvmlBackendTest, PcieThroughputInKilobytesPerSecond) {
  UseConfig(R"({"gpus": [{"pcie": {"tx_kbps": 1500000, "rx_kbps": 250}}]})");
  NvmlBackend* b = Open();
  ASSERT_NE(b, nullptr);
  auto t = b->GetPcieThroughput(0);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->tx_kbps, 1500000);
  EXPECT_EQ(t->rx_kbps, 250);
}

TEST_F(NvmlBackendTest, BadFakeConfigFailsInit) {
  std::string path = testing::WriteTempFile("fake-nvml-bad.json", "{\"gpus\": 3");
  setenv("MIGSCHED_FAKE_NVML_CONFIG", path.c_str(), 1);
  EXPECT_NE(fake_.reset(), 0);
  auto b = NvmlBackend::Open(MIGSCHED_FAKE_NVML);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(b.status().message(), HasSubstr("nvmlInit_v2 from "));
  EXPECT_THAT(b.status().message(), HasSubstr("Unknown Error"));
}

// The fake library itself follows nvml.h where the backend's normal path does not go.
TEST_F(NvmlBackendTest, FakeLibraryFollowsNvmlSemantics) {
  using namespace nvml;  // NOLINT
  auto sym = [&](const char* name) {
    void* f = dlsym(fake_.lib, name);
    EXPECT_NE(f, nullptr) << name;
    return f;
  };
  auto init = reinterpret_cast<nvmlInit_v2_fn>(sym("nvmlInit_v2"));
  auto shutdown = reinterpret_cast<nvmlShutdown_fn>(sym("nvmlShutdown"));
  auto handle =
      reinterpret_cast<nvmlDeviceGetHandleByIndex_v2_fn>(sym("nvmlDeviceGetHandleByIndex_v2"));
  auto profile_info = reinterpret_cast<nvmlDeviceGetGpuInstanceProfileInfo_fn>(
      sym("nvmlDeviceGetGpuInstanceProfileInfo"));
  auto placements = reinterpret_cast<nvmlDeviceGetGpuInstancePossiblePlacements_v2_fn>(
      sym("nvmlDeviceGetGpuInstancePossiblePlacements_v2"));
  auto create = reinterpret_cast<nvmlDeviceCreateGpuInstanceWithPlacement_fn>(
      sym("nvmlDeviceCreateGpuInstanceWithPlacement"));
  auto create_ci = reinterpret_cast<nvmlGpuInstanceCreateComputeInstance_fn>(
      sym("nvmlGpuInstanceCreateComputeInstance"));
  auto destroy_ci =
      reinterpret_cast<nvmlComputeInstanceDestroy_fn>(sym("nvmlComputeInstanceDestroy"));
  auto destroy_gi = reinterpret_cast<nvmlGpuInstanceDestroy_fn>(sym("nvmlGpuInstanceDestroy"));
  auto gi_info = reinterpret_cast<nvmlGpuInstanceGetInfo_fn>(sym("nvmlGpuInstanceGetInfo"));
  auto count = reinterpret_cast<nvmlDeviceGetCount_v2_fn>(sym("nvmlDeviceGetCount_v2"));
  ASSERT_FALSE(::testing::Test::HasFailure());

  unsigned int n = 0;
  EXPECT_EQ(count(&n), NVML_ERROR_UNINITIALIZED);  // before nvmlInit_v2
  ASSERT_EQ(init(), NVML_SUCCESS);
  nvmlDevice_t dev = nullptr;
  ASSERT_EQ(handle(0, &dev), NVML_SUCCESS);
  EXPECT_EQ(handle(2, &dev), NVML_ERROR_INVALID_ARGUMENT);  // two GPUs by default
  ASSERT_EQ(handle(0, &dev), NVML_SUCCESS);
  nvmlGpuInstanceProfileInfo_t info{};
  EXPECT_EQ(profile_info(dev, 0x5, &info), NVML_ERROR_NOT_SUPPORTED);      // 8_SLICE: not on A100
  EXPECT_EQ(profile_info(dev, 0x12, &info), NVML_ERROR_INVALID_ARGUMENT);  // past the last index
  ASSERT_EQ(profile_info(dev, 0x2, &info), NVML_SUCCESS);                  // 3_SLICE
  EXPECT_EQ(info.id, 9u);
  EXPECT_EQ(info.sliceCount, 3u);
  // NULL array: the count only; a short array: INSUFFICIENT_SIZE.
  ASSERT_EQ(placements(dev, 19, nullptr, &n), NVML_SUCCESS);
  EXPECT_EQ(n, 7u);  // 1g.5gb {0..6}:1
  nvmlGpuInstancePlacement_t buf[7];
  n = 3;
  EXPECT_EQ(placements(dev, 19, buf, &n), NVML_ERROR_INSUFFICIENT_SIZE);
  nvmlGpuInstancePlacement_t p44{4, 4};
  nvmlGpuInstance_t gi = nullptr;
  ASSERT_EQ(create(dev, 9, &p44, &gi), NVML_SUCCESS);
  // Static list: still 2 placements for 3g.20gb although 4:4 is taken now.
  ASSERT_EQ(placements(dev, 9, nullptr, &n), NVML_SUCCESS);
  EXPECT_EQ(n, 2u);
  nvmlGpuInstancePlacement_t p62{6, 2};
  nvmlGpuInstance_t other = nullptr;
  EXPECT_EQ(create(dev, 15, &p62, &other), NVML_ERROR_INSUFFICIENT_RESOURCES);  // 6-7 in 4-7
  nvmlGpuInstancePlacement_t p12{1, 2};
  EXPECT_EQ(create(dev, 15, &p12, &other), NVML_ERROR_INVALID_ARGUMENT);  // not a placement
  nvmlComputeInstance_t ci = nullptr;
  ASSERT_EQ(create_ci(gi, 2, &ci), NVML_SUCCESS);  // CI profile 3_SLICE
  EXPECT_EQ(destroy_gi(gi), NVML_ERROR_IN_USE);    // a CI still exists
  ASSERT_EQ(destroy_ci(ci), NVML_SUCCESS);
  ASSERT_EQ(destroy_gi(gi), NVML_SUCCESS);
  nvmlGpuInstanceInfo_t gii{};
  EXPECT_EQ(gi_info(gi, &gii), NVML_ERROR_INVALID_ARGUMENT);  // stale handle
  EXPECT_EQ(shutdown(), NVML_SUCCESS);
}

// Discovery over the real nvml code path, with the example node of docs/daemon-backends.md.
TEST_F(NvmlBackendTest, DiscoveryOverTheFakeLibrary) {
  UseConfig(R"({"gpus": [
  {"name": "NVIDIA A100-PCIE-40GB", "memory_mib": 40960, "compute_slices": 7,
   "mig": "enabled", "pcie": {"tx_kbps": 1200000, "rx_kbps": 300000},
   "instances": [{"profile_id": 9, "start": 4, "size": 4},
                 {"profile_id": 14, "start": 0, "size": 2, "compute_instance": false}]},
  {"name": "NVIDIA A100-PCIE-40GB", "mig": "disabled", "mig_pending": "enabled"},
  {"name": "NVIDIA A30", "memory_mib": 24576, "compute_slices": 4,
   "profiles": [{"index": 0, "id": 14, "slices": 1, "instances": 4, "memory_mib": 5952,
                 "placements": [[0, 1], [1, 1], [2, 1], [3, 1]]},
                {"index": 1, "id": 5, "slices": 2, "instances": 2, "memory_mib": 11968,
                 "placements": [[0, 2], [2, 2]]},
                {"index": 3, "id": 0, "slices": 4, "instances": 1, "memory_mib": 24000,
                 "placements": [[0, 4]]}]}]})");
  NvmlBackend* b = Open();
  ASSERT_NE(b, nullptr);
  // GPU 1 has MIG disabled: refused when selected (here: by default, every GPU).
  auto all = DiscoverNode(b, testing::BundledCatalog(), {});
  ASSERT_FALSE(all.ok());
  EXPECT_EQ(all.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(all.status().message(), HasSubstr("`sudo nvidia-smi -i 1 -mig 1`"));

  auto inv = DiscoverNode(b, testing::BundledCatalog(), {"0", "2"});
  ASSERT_TRUE(inv.ok()) << inv.status().ToString();
  ASSERT_EQ(inv->gpus.size(), 2u);
  // GPU 0: the A100 40GB table of mig-hardware.md §2.2 exactly: the catalog's model.
  EXPECT_EQ(inv->gpus[0].model, &testing::Model("A100-40GB"));
  ASSERT_EQ(inv->gpus[0].instances.size(), 2u);
  EXPECT_FALSE(inv->gpus[0].instances[0].has_compute_instance);
  EXPECT_TRUE(inv->gpus[0].instances[1].has_compute_instance);
  // GPU 2: the A30's catalog entry also has 1g.6gb+me (id 21) and 2g.12gb+me (id 6), which this
  // driver lacks (mig-hardware.md §2.1 notes they need R470+/R525+): reported, and the driver wins.
  const GpuModel& a30 = *inv->gpus[1].model;
  EXPECT_EQ(a30.name(), "A30 24GB");
  EXPECT_NE(&a30, &testing::Model("A30-24GB"));
  EXPECT_EQ(a30.profiles().size(), 3u);
  EXPECT_EQ(a30.FindProfile("1g.6gb+me"), -1);
  EXPECT_EQ(a30.placement_units(), 4);
  const std::string prefix =
      "GPU 2 (NVIDIA A30): catalog model 'A30 24GB' differs from the driver: ";
  EXPECT_THAT(inv->notes,
              ::testing::Contains(prefix + "profile 1g.6gb+me (id 21) is not offered by the "
                                           "driver; the driver's data is used"));
  EXPECT_THAT(inv->notes,
              ::testing::Contains(prefix + "profile 2g.12gb+me (id 6) is not offered by the "
                                           "driver; the driver's data is used"));
  EXPECT_THAT(inv->notes, ::testing::Contains(HasSubstr(
                              "GPU 0 (NVIDIA A100-PCIE-40GB): existing GPU instance 1: 3g.20gb "
                              "(profile id 9) at 4:4, MIG-")));
  EXPECT_THAT(inv->notes,
              ::testing::Contains("GPU 0 (NVIDIA A100-PCIE-40GB): existing GPU instance 2: 2g.10gb "
                                  "(profile id 14) at 0:2, no compute instance"));
}

}  // namespace
}  // namespace migsched
