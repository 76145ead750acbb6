// The nvml backend against the fake libnvidia-ml playing what drivers do in the field
// (docs/daemon-backends.md "Faults of the real driver"): occupied placements, a compute
// instance failing after its GPU instance was made (and its rollback failing), destroys
// that report success and leave the instance, "in use" from handles a monitoring agent
// leaked, GPUs needing a reset or renumbered, heavy-tailed latencies, and drivers whose
// profiles differ from the catalog. Expected values come from the A100 40GB table of
// docs/mig-hardware.md §2.2, the GB200 catalog entry (data/gpus/gb200-186gb.json) and the
// injected faults, never from the backend's own output.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "build_paths.h"
#include "daemon/device_check.h"
#include "daemon/discovery.h"
#include "daemon/nvml_backend.h"
#include "fake_nvml/fake_nvml_hooks.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

using testing::kNvml1g5;
using testing::kNvml2g;
using testing::kNvml3g;
using testing::kNvml7g;
constexpr int kInsufficientResources = 23, kUnknown = 999, kSuccess = 0, kTimeout = 10;

class NvmlFaultsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(fake_.Load(MIGSCHED_FAKE_NVML, &error)) << error;
    ASSERT_TRUE(fake_.UseConfig(""));
  }
  void TearDown() override {
    backend_.reset();
    EXPECT_EQ(fake_.forbidden_calls(), 0) << "nvmlDeviceSetMigMode must never be called";
    fake_.UseConfig("");
    unsetenv("MIGSCHED_FAKE_NVML_CONFIG");
    fake_.Close();
  }
  void UseJson(const std::string& json) {
    backend_.reset();
    ASSERT_TRUE(fake_.UseConfig(testing::WriteTempFile("fake-nvml.json", json)));
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

TEST_F(NvmlFaultsTest, InjectedFaultsCountDownPerCallAndPerGpu) {
  NvmlBackend* b = Open();
  ASSERT_NE(b, nullptr);
  // Two timeouts on GPU 1's GI creates only.
  ASSERT_EQ(fake_.fail_next("nvmlDeviceCreateGpuInstanceWithPlacement", 1, 2, kTimeout), 0);
  EXPECT_TRUE(b->CreateInstance(0, kNvml7g, {0, 8}).ok());  // GPU 0 untouched
  for (int i = 0; i < 2; ++i) {
    auto made = b->CreateInstance(1, kNvml7g, {0, 8});
    EXPECT_EQ(made.status().code(), StatusCode::kUnavailable);
    EXPECT_THAT(made.status().message(), HasSubstr("Timeout"));
  }
  EXPECT_TRUE(b->CreateInstance(1, kNvml7g, {0, 8}).ok());  // the third one passes
}

TEST_F(NvmlFaultsTest, LatenciesAreDrawnFromASeededHeavyTailedDistribution) {
  const unsigned long long seed = 20261202;
  SCOPED_TRACE("seed " + std::to_string(seed));
  auto run = [&](const char* dist, double a, double b_) {
    EXPECT_TRUE(fake_.UseConfig(""));
    EXPECT_EQ(fake_.set_latency("nvmlGpuInstanceDestroy", 0, dist, a, b_, seed), 0);
    NvmlBackend* b = Open();
    for (int i = 0; i < 5; ++i) {
      auto made = b->CreateInstance(0, kNvml1g5, {0, 1});
      EXPECT_TRUE(made.ok()) << made.status().ToString();
      EXPECT_TRUE(b->DestroyInstance(0, made->gi_id).ok());
    }
    backend_.reset();
    return fake_.slept_ms();
  };
  // Pareto with scale 1 ms: every draw is at least 1 ms, so 5 destroys sleep at least 5 ms.
  const double pareto = run("pareto", 1.0, 1.5);
  EXPECT_GE(pareto, 5.0);
  EXPECT_EQ(run("pareto", 1.0, 1.5), pareto);  // the same seed, the same draws
  // Fixed: exactly 5 × 2 ms.
  EXPECT_DOUBLE_EQ(run("fixed", 2.0, 0), 10.0);
  EXPECT_GT(run("lognormal", 1.0, 1.0), 0.0);
  EXPECT_NE(fake_.set_latency("*", -1, "gaussian", 1, 1, seed), 0);  // unknown distribution
}

TEST_F(NvmlFaultsTest, OccupiedPlacementIsInsufficientResourcesAndNotAnAlreadyExists) {
  NvmlBackend* b = Open();
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(b->CreateInstance(0, kNvml3g, {4, 4}).ok());
  // The same placement again: the driver answers INSUFFICIENT_RESOURCES, not "already exists".
  auto again = b->CreateInstance(0, kNvml3g, {4, 4});
  EXPECT_EQ(again.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(again.status().message(), HasSubstr("Insufficient Resources"));
  EXPECT_THAT(again.status().message(),
              HasSubstr("it overlaps GPU instance 1 (profile id 9 at 4:4"));
  EXPECT_EQ(b->ListInstances(0)->size(), 1u);
}

TEST_F(NvmlFaultsTest, ComputeInstanceFailureRollsBackTheGpuInstance) {
  NvmlBackend* b = Open();
  ASSERT_NE(b, nullptr);
  ASSERT_EQ(fake_.fail_next("nvmlGpuInstanceCreateComputeInstance", 0, 1, kInsufficientResources),
            0);
  auto made = b->CreateInstance(0, kNvml2g, {2, 2});
  ASSERT_FALSE(made.ok());
  EXPECT_EQ(made.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(IsBackendTrouble(made.status())) << made.status().message();
  EXPECT_THAT(made.status().message(), HasSubstr("nvmlGpuInstanceCreateComputeInstance"));
  EXPECT_THAT(made.status().message(), HasSubstr("the GPU instance was destroyed again"));
  EXPECT_TRUE(b->ListInstances(0)->empty());
  EXPECT_TRUE(b->CreateInstance(0, kNvml2g, {2, 2}).ok());
}

TEST_F(NvmlFaultsTest, FailedRollbackLeavesAGpuInstanceWithoutComputeInstanceThatIsListed) {
  NvmlBackend* b = Open();
  ASSERT_NE(b, nullptr);
  ASSERT_EQ(fake_.fail_next("nvmlGpuInstanceCreateComputeInstance", 0, 1, kUnknown), 0);
  ASSERT_EQ(fake_.fail_next("nvmlGpuInstanceDestroy", 0, 1, kUnknown), 0);
  auto made = b->CreateInstance(0, kNvml3g, {0, 4});
  ASSERT_FALSE(made.ok());
  EXPECT_TRUE(IsBackendTrouble(made.status())) << made.status().message();
  EXPECT_THAT(made.status().message(), HasSubstr("undoing it failed too"));
  auto list = b->ListInstances(0);
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].placement, (Placement{0, 4}));
  EXPECT_FALSE((*list)[0].has_compute_instance);
  EXPECT_TRUE((*list)[0].mig_uuid.empty());
  EXPECT_TRUE(b->DestroyInstance(0, (*list)[0].gi_id).ok());
  EXPECT_TRUE(b->ListInstances(0)->empty());
}

TEST_F(NvmlFaultsTest, DestroyThatReportsSuccessAndLeavesTheInstanceIsCaught) {
  NvmlBackend* b = Open();
  ASSERT_NE(b, nullptr);
  auto made = b->CreateInstance(1, kNvml7g, {0, 8});
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  ASSERT_EQ(fake_.fail_next("nvmlGpuInstanceDestroy", 1, 1, kSuccess), 0);
  Status st = b->DestroyInstance(1, made->gi_id);
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_TRUE(IsBackendTrouble(st)) << st.message();
  EXPECT_THAT(st.message(), HasSubstr("reported success but the GPU instance is still there"));
  ASSERT_EQ(b->ListInstances(1)->size(), 1u);  // still there (its CI went)
  EXPECT_TRUE(b->DestroyInstance(1, made->gi_id).ok());
  EXPECT_TRUE(b->ListInstances(1)->empty());
}

TEST_F(NvmlFaultsTest, HandleLeakedByAMonitoringAgentMakesDestroyInUse) {
  NvmlBackend* b = Open();
  ASSERT_NE(b, nullptr);
  auto made = b->CreateInstance(0, kNvml3g, {4, 4});
  ASSERT_TRUE(made.ok());
  ASSERT_EQ(fake_.open_handle(0, made->gi_id, +1), 0);  // no job: only an agent's handle
  Status st = b->DestroyInstance(0, made->gi_id);
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_THAT(st.message(), HasSubstr("In use by another client"));
  EXPECT_THAT(st.message(), HasSubstr("monitoring agent"));
  EXPECT_TRUE(IsBackendTrouble(st));
  ASSERT_EQ(fake_.open_handle(0, made->gi_id, -1), 0);
  EXPECT_TRUE(b->DestroyInstance(0, made->gi_id).ok());
}

TEST_F(NvmlFaultsTest, GpuNeedingAResetIsUnavailableWithTheOperatorsCommand) {
  NvmlBackend* b = Open();
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(b->ListInstances(0).ok());
  ASSERT_EQ(fake_.set_reset_required(0, 1), 0);
  for (const Status& st :
       {b->ListInstances(0).status(), b->CreateInstance(0, kNvml7g, {0, 8}).status(),
        b->ListProfiles(0).status()}) {
    EXPECT_EQ(st.code(), StatusCode::kUnavailable);
    EXPECT_THAT(st.message(), HasSubstr("GPU requires reset"));
    EXPECT_THAT(st.message(), HasSubstr(std::string(kNeedsReset)));
    EXPECT_THAT(st.message(), HasSubstr("nvidia-smi -i <index> -r"));
    EXPECT_THAT(st.message(), HasSubstr("migsched never resets a GPU"));
  }
  EXPECT_TRUE(b->ListInstances(1).ok());         // the other GPU works on
  ASSERT_EQ(fake_.set_reset_required(0, 0), 0);  // the operator reset it
  EXPECT_TRUE(b->CreateInstance(0, kNvml7g, {0, 8}).ok());
}

TEST_F(NvmlFaultsTest, RenumberedGpusAreRefusedUntilARestart) {
  NvmlBackend* b = Open();
  ASSERT_NE(b, nullptr);
  auto gpus = b->ListGpus();
  ASSERT_TRUE(gpus.ok());
  const std::string uuid0 = (*gpus)[0].uuid, uuid1 = (*gpus)[1].uuid;
  ASSERT_EQ(fake_.renumber(0, 1), 0);
  auto st = b->ListInstances(0).status();
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_THAT(st.message(), HasSubstr("NVML index 0 is now " + uuid1));
  EXPECT_THAT(st.message(), HasSubstr("it was " + uuid0 + " when migsched started"));
  EXPECT_THAT(st.message(), HasSubstr("restart migsched"));
  // A new backend (a restart) sees the new numbering.
  backend_.reset();
  b = Open();
  ASSERT_NE(b, nullptr);
  EXPECT_EQ((*b->ListGpus())[0].uuid, uuid1);
}

// One NVML session for the backend's life, and the changes of one GPU never overlap, even
// when many threads ask at once (each change sleeps, so an overlap would be seen).
TEST_F(NvmlFaultsTest, OneSessionAndChangesOfOneGpuAreSerialised) {
  NvmlBackend* b = Open();
  ASSERT_NE(b, nullptr);
  for (const char* call : {"nvmlDeviceCreateGpuInstanceWithPlacement", "nvmlGpuInstanceDestroy"}) {
    ASSERT_EQ(fake_.set_latency(call, -1, "fixed", 2.0, 0, 1), 0);
  }
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      const int gpu = t % 2;
      const int start = t / 2;  // 1g.5gb at 0, 1, 2 on each GPU
      for (int i = 0; i < 4; ++i) {
        auto made = b->CreateInstance(gpu, kNvml1g5, {start, 1});
        if (!made.ok() || !b->DestroyInstance(gpu, made->gi_id).ok()) ++failures;
        if (!b->ListInstances(gpu).ok()) ++failures;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(fake_.max_concurrent_changes(0), 1);
  EXPECT_EQ(fake_.max_concurrent_changes(1), 1);
  EXPECT_EQ(fake_.init_calls(), 1);  // nvmlInit_v2 once, in Open
  EXPECT_EQ(fake_.calls("nvmlGpuInstanceDestroy"), 24);
}

// GB200's profile table (data/gpus/gb200-186gb.json) as a newer driver might report it: the
// 1g.47gb profile with more memory, and the 2g.47gb profile under another id at its NVML index
// (0x1 = 2_SLICE). Both still map to the catalog's profiles; the driver's numbers win.
constexpr const char* kGb200Driver = R"({"gpus": [{"name": "NVIDIA GB200", "memory_mib": 190464,
  "profiles": [
   {"index": 0, "id": 19, "slices": 1, "instances": 7, "memory_mib": 22528,
    "placements": [[0,1],[1,1],[2,1],[3,1],[4,1],[5,1],[6,1]]},
   {"index": 7, "id": 20, "slices": 1, "instances": 1, "memory_mib": 22528,
    "placements": [[0,1],[1,1],[2,1],[3,1],[4,1],[5,1],[6,1]]},
   {"index": 9, "id": 15, "slices": 1, "instances": 4, "memory_mib": 47104,
    "placements": [[0,2],[2,2],[4,2],[6,2]]},
   {"index": 1, "id": 99, "slices": 2, "instances": 3, "memory_mib": 46592,
    "placements": [[0,2],[2,2],[4,2]]},
   {"index": 2, "id": 9, "slices": 3, "instances": 2, "memory_mib": 95232,
    "placements": [[0,4],[4,4]]},
   {"index": 3, "id": 5, "slices": 4, "instances": 1, "memory_mib": 95232, "placements": [[0,4]]},
   {"index": 4, "id": 0, "slices": 7, "instances": 1, "memory_mib": 190464,
    "placements": [[0,8]]}]}]})";

TEST_F(NvmlFaultsTest, ProfilesMapByIdAndShapeNotNameAndTheDriversMemoryWins) {
  UseJson(kGb200Driver);
  NvmlBackend* b = Open();
  ASSERT_NE(b, nullptr);
  auto inv = DiscoverNode(b, testing::BundledCatalog(), {});
  ASSERT_TRUE(inv.ok()) << inv.status().ToString();
  const GpuModel& m = *inv->gpus[0].model;
  EXPECT_EQ(m.name(), "GB200 186GB");
  // Catalog names kept, the driver's ids and memory used.
  const int one = m.FindProfile("1g.47gb");
  ASSERT_GE(one, 0);
  EXPECT_EQ(m.profile(one).id, 15);
  EXPECT_EQ(m.profile(one).memory_mib, 47104);  // the driver's, not the catalog's 46592
  const int two = m.FindProfile("2g.47gb");
  ASSERT_GE(two, 0);
  EXPECT_EQ(m.profile(two).id, 99);
  EXPECT_EQ(m.FindProfile("2g.47gb-id99"), -1);
  const std::string prefix =
      "GPU 0 (NVIDIA GB200): catalog model 'GB200 186GB' differs from the "
      "driver: ";
  EXPECT_THAT(inv->notes,
              Contains(prefix + "profile 1g.47gb (id 15): 46592 MiB in the catalog, 47104 MiB "
                                "in the driver; the driver's data is used"));
  EXPECT_THAT(inv->notes, Contains(HasSubstr("profile 2g.47gb (id 14): the driver has it as "
                                             "profile id 99")));
  EXPECT_THAT(inv->notes, Not(Contains(HasSubstr("not offered by the driver"))));
  EXPECT_THAT(inv->notes, Not(Contains(HasSubstr("that the catalog lacks"))));
  // The model's profile creates through the driver's id.
  auto made = b->CreateInstance(0, m.profile(two).id, {2, 2});
  EXPECT_TRUE(made.ok()) << made.status().ToString();
}

// The catalog's memory values are checked at start: equal ones give no note at all.
TEST_F(NvmlFaultsTest, MatchingCatalogGivesNoDifferences) {
  NvmlBackend* b = Open();
  ASSERT_NE(b, nullptr);
  auto profiles = b->ListProfiles(0);
  ASSERT_TRUE(profiles.ok());
  const GpuModel& a100 = testing::Model("A100-40GB");
  EXPECT_THAT(Differences(a100, *profiles), ::testing::IsEmpty());
  EXPECT_EQ(MatchCatalog(a100, *profiles).size(), 7u);
}

// device-check: a destroy that says success and leaves the instance is caught, the GPU is
// still left as found, and the run says it failed.
TEST_F(NvmlFaultsTest, DeviceCheckLeavesTheGpuAsFoundDespiteAFaultyDestroy) {
  NvmlBackend* b = Open();
  ASSERT_NE(b, nullptr);
  ASSERT_EQ(fake_.fail_next("nvmlGpuInstanceDestroy", 0, 1, kSuccess), 0);
  DeviceCheckOptions o;
  o.write = true;
  o.gpus = {"0"};
  std::ostringstream out;
  const int rc = RunDeviceCheck(b, testing::BundledCatalog(), o, out);
  EXPECT_EQ(rc, kDeviceCheckFailed) << out.str();
  EXPECT_THAT(out.str(), HasSubstr("create gpu=0 id=19 profile=1g.5gb placement=0:1 "
                                   "result=destroy-retried "));
  EXPECT_THAT(out.str(), HasSubstr("restored gpu=0 result=yes instances_left=0\n"));
  EXPECT_THAT(out.str(), HasSubstr("summary gpus=1 differences=0 writes=25 write_failures=1 "
                                   "result=failed\n"));
  EXPECT_TRUE(b->ListInstances(0)->empty());
  EXPECT_TRUE(b->ListInstances(1)->empty());  // not selected: never touched
  EXPECT_EQ(fake_.calls("nvmlDeviceCreateGpuInstanceWithPlacement"), 25);
}

TEST_F(NvmlFaultsTest, DeviceCheckIsReadOnlyWithoutWrite) {
  NvmlBackend* b = Open();
  ASSERT_NE(b, nullptr);
  std::ostringstream out;
  EXPECT_EQ(RunDeviceCheck(b, testing::BundledCatalog(), DeviceCheckOptions{}, out), kDeviceCheckOk)
      << out.str();
  EXPECT_EQ(fake_.calls("nvmlDeviceCreateGpuInstanceWithPlacement"), 0);
  EXPECT_EQ(fake_.calls("nvmlGpuInstanceDestroy"), 0);
  EXPECT_THAT(out.str(), HasSubstr("summary gpus=2 differences=0 writes=0 write_failures=0 "
                                   "result=ok\n"));
}

}  // namespace
}  // namespace migsched
