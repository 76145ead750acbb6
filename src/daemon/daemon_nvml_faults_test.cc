// The daemon over the real nvml backend and the fake libnvidia-ml playing what drivers do in
// the field (docs/daemon-backends.md "Faults of the real driver"). For each behaviour: no job
// is lost (every job ends succeeded), no instance leaks (the GPU's instances are exactly the
// model's, every one with a compute instance), the model never hands out an instance the GPU
// lacks, and the operator is told (log, /healthz, metrics) when a GPU needs a reset or keeps
// refusing. Randomized latencies print their seed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "build_paths.h"
#include "daemon/daemon_fixture.h"
#include "daemon/metrics.h"
#include "daemon/nvml_backend.h"
#include "fake_nvml/fake_nvml_hooks.h"

namespace migsched {
namespace {

using ::testing::HasSubstr;

constexpr int kUnknown = 999, kSuccess = 0;

class DaemonNvmlFaultsTest : public DaemonTest {
 protected:
  void SetUp() override {
    DaemonTest::SetUp();
    std::string error;
    ASSERT_TRUE(fake_nvml_.Load(MIGSCHED_FAKE_NVML, &error)) << error;
    // One A100 40GB with MIG enabled and nothing on it.
    ASSERT_TRUE(fake_nvml_.UseConfig(testing::WriteTempFile(
        "fake-nvml.json", R"({"gpus": [{"name": "NVIDIA A100-SXM4-40GB"}]})")));
  }
  void TearDown() override {
    EXPECT_EQ(fake_nvml_.forbidden_calls(), 0) << "nvmlDeviceSetMigMode must never be called";
    fake_nvml_.UseConfig("");
    unsetenv("MIGSCHED_FAKE_NVML_CONFIG");
    fake_nvml_.Close();
  }

  std::unique_ptr<Daemon> StartNvml() {
    auto backend = NvmlBackend::Open(MIGSCHED_FAKE_NVML);
    EXPECT_TRUE(backend.ok()) << backend.status().ToString();
    if (!backend.ok()) return nullptr;
    StatusOr<std::unique_ptr<Daemon>> d =
        Daemon::Create(config_, std::move(*backend), &BundledCatalog(), clock_);
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    return d.ok() ? std::move(*d) : nullptr;
  }

  // What another NVML client sees on GPU `gpu` (a second session on the same fake driver).
  std::vector<BackendInstance> OnTheGpu(int gpu) {
    auto other = NvmlBackend::Open(MIGSCHED_FAKE_NVML);
    EXPECT_TRUE(other.ok());
    if (!other.ok()) return {};
    auto list = (*other)->ListInstances(gpu);
    EXPECT_TRUE(list.ok()) << list.status().ToString();
    return list.ok() ? *list : std::vector<BackendInstance>{};
  }

  // The GPU has exactly the model's instances, each with a compute instance and the MIG UUID
  // the model shows: nothing leaked, nothing handed out that is not there.
  bool ModelMatchesTheGpu(Daemon& d, int gpu) {
    const std::vector<BackendInstance> live = OnTheGpu(gpu);
    const std::vector<InstanceView> model = d.Gpus()[gpu].instances;
    if (live.size() != model.size()) return false;
    for (size_t i = 0; i < live.size(); ++i) {
      if (!live[i].has_compute_instance || live[i].placement.start != model[i].start ||
          live[i].mig_uuid != model[i].mig_uuid) {
        return false;
      }
    }
    return true;
  }

  bool AllSucceeded(Daemon& d, DaemonJobId first, DaemonJobId last) {
    for (DaemonJobId id = first; id <= last; ++id) {
      if (Get(d, id).state != JobState::kSucceeded) return false;
    }
    return true;
  }
  bool AllTerminal(Daemon& d, DaemonJobId first, DaemonJobId last) {
    for (DaemonJobId id = first; id <= last; ++id) {
      if (!IsTerminal(Get(d, id).state)) return false;
    }
    return true;
  }
  static std::string MetricsText(Daemon& d) { return RenderPrometheus(d.Metrics()); }

  testing::FakeNvmlHooks fake_nvml_;
};

// A compute instance fails after its GPU instance was made, and the rollback fails too: the
// GI without a CI is found by the resync, never handed out, and destroyed; the jobs run.
TEST_F(DaemonNvmlFaultsTest, ComputeInstanceAndRollbackFailuresLoseNoJobAndLeakNoInstance) {
  ASSERT_EQ(fake_nvml_.fail_next("nvmlGpuInstanceCreateComputeInstance", 0, 1, kUnknown), 0);
  ASSERT_EQ(fake_nvml_.fail_next("nvmlGpuInstanceDestroy", 0, 1, kUnknown), 0);
  auto d = StartNvml();
  ASSERT_NE(d, nullptr);
  for (int i = 0; i < 3; ++i) ASSERT_OK(d->Submit(Req("1g.5gb", {"true"})));
  ASSERT_TRUE(TickUntil(*d, [&] { return AllTerminal(*d, 1, 3); }));
  for (DaemonJobId id = 1; id <= 3; ++id) {
    EXPECT_EQ(Get(*d, id).state, JobState::kSucceeded) << id << ": " << Get(*d, id).reason;
  }
  ASSERT_OK(d->Settle());
  EXPECT_TRUE(TickUntil(*d, [&] { return ModelMatchesTheGpu(*d, 0); }));
  for (const BackendInstance& in : OnTheGpu(0)) EXPECT_TRUE(in.has_compute_instance);
}

// A destroy reports success and leaves the instance: the daemon checks, resyncs, and destroys
// it again; the jobs that needed its room run.
TEST_F(DaemonNvmlFaultsTest, DestroyThatLeavesTheInstanceIsDestroyedAgain) {
  auto d = StartNvml();
  ASSERT_NE(d, nullptr);
  ASSERT_OK(d->Submit(Req("7g.40gb", {"true"})));
  ASSERT_TRUE(WaitTerminal(*d, 1));
  ASSERT_EQ(Get(*d, 1).state, JobState::kSucceeded);
  ASSERT_EQ(OnTheGpu(0).size(), 1u);  // the idle 7g.40gb, kept for reuse
  ASSERT_EQ(fake_nvml_.fail_next("nvmlGpuInstanceDestroy", 0, 1, kSuccess), 0);
  ASSERT_OK(d->Submit(Req("1g.5gb", {"true"})));
  ASSERT_OK(d->Submit(Req("1g.5gb", {"true"})));
  ASSERT_TRUE(TickUntil(*d, [&] { return AllTerminal(*d, 2, 3); }));
  EXPECT_TRUE(AllSucceeded(*d, 2, 3)) << Get(*d, 2).reason << " / " << Get(*d, 3).reason;
  ASSERT_OK(d->Settle());
  EXPECT_TRUE(TickUntil(*d, [&] { return ModelMatchesTheGpu(*d, 0); }));
}

// Another NVML client made an instance where the daemon places one: the create answers
// INSUFFICIENT_RESOURCES; the resync finds the stranger, holds it and destroys it; the job runs.
TEST_F(DaemonNvmlFaultsTest, OccupiedPlacementIsResyncedAndTheJobRuns) {
  auto d = StartNvml();
  ASSERT_NE(d, nullptr);
  auto other = NvmlBackend::Open(MIGSCHED_FAKE_NVML);
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE((*other)->CreateInstance(0, /*7g.40gb*/ 0, {0, 8}).ok());
  ASSERT_OK(d->Submit(Req("1g.5gb", {"true"})));
  ASSERT_TRUE(WaitTerminal(*d, 1));
  EXPECT_EQ(Get(*d, 1).state, JobState::kSucceeded) << Get(*d, 1).reason;
  ASSERT_OK(d->Settle());
  EXPECT_TRUE(TickUntil(*d, [&] { return ModelMatchesTheGpu(*d, 0); }));
}

// A monitoring agent leaked a handle on an idle instance: its destroy answers "in use" with no
// job on it. The GPU "keeps refusing": log, /healthz and the metric say so; the waiting job is
// not failed, and runs once the handle is closed.
TEST_F(DaemonNvmlFaultsTest, LeakedHandleKeepsTheGpuRefusingAndTheOperatorIsTold) {
  auto d = StartNvml();
  ASSERT_NE(d, nullptr);
  ASSERT_OK(d->Submit(Req("7g.40gb", {"true"})));
  ASSERT_TRUE(WaitTerminal(*d, 1));
  std::vector<BackendInstance> live = OnTheGpu(0);
  ASSERT_EQ(live.size(), 1u);
  ASSERT_EQ(fake_nvml_.open_handle(0, live[0].gi_id, +1), 0);
  ASSERT_OK(d->Submit(Req("1g.5gb", {"true"})));
  ASSERT_TRUE(TickUntil(*d, [&] { return !d->Health().ok(); }));
  EXPECT_THAT(d->Health().message(), HasSubstr("GPU 0 keeps refusing MIG changes"));
  EXPECT_THAT(d->Health().message(), HasSubstr("monitoring agent"));
  EXPECT_THAT(MetricsText(*d), HasSubstr("migsched_gpu_refusing_changes{gpu=\"0\","));
  EXPECT_THAT(MetricsText(*d),
              ::testing::ContainsRegex("migsched_gpu_refusing_changes\\{gpu=\"0\",[^}]*\\} 1\n"));
  EXPECT_FALSE(IsTerminal(Get(*d, 2).state));  // waiting, not failed
  ASSERT_EQ(fake_nvml_.open_handle(0, live[0].gi_id, -1), 0);
  ASSERT_TRUE(WaitTerminal(*d, 2));
  EXPECT_EQ(Get(*d, 2).state, JobState::kSucceeded) << Get(*d, 2).reason;
  EXPECT_TRUE(TickUntil(*d, [&] { return d->Health().ok(); }));
  EXPECT_THAT(MetricsText(*d),
              ::testing::ContainsRegex("migsched_gpu_refusing_changes\\{gpu=\"0\",[^}]*\\} 0\n"));
  ASSERT_OK(d->Settle());
  EXPECT_TRUE(TickUntil(*d, [&] { return ModelMatchesTheGpu(*d, 0); }));
}

// The GPU needs a reset (after a MIG mode change): it is drained as unreachable, /healthz and
// the metric say so with the operator's command; the job waits, and runs once the operator has
// reset the GPU.
TEST_F(DaemonNvmlFaultsTest, GpuNeedingAResetIsDrainedAndTheOperatorIsTold) {
  auto d = StartNvml();
  ASSERT_NE(d, nullptr);
  ASSERT_EQ(fake_nvml_.set_reset_required(0, 1), 0);
  ASSERT_OK(d->Submit(Req("1g.5gb", {"true"})));
  ASSERT_TRUE(TickUntil(*d, [&] { return !d->Health().ok(); }));
  EXPECT_THAT(d->Health().message(), HasSubstr("GPU 0 is unreachable"));
  EXPECT_THAT(d->Health().message(), HasSubstr(std::string(kNeedsReset)));
  EXPECT_THAT(d->Health().message(), HasSubstr("nvidia-smi -i <index> -r"));
  EXPECT_TRUE(d->Gpus()[0].draining);
  EXPECT_THAT(MetricsText(*d),
              ::testing::ContainsRegex("migsched_gpu_needs_reset\\{gpu=\"0\",[^}]*\\} 1\n"));
  EXPECT_FALSE(IsTerminal(Get(*d, 1).state));
  ASSERT_EQ(fake_nvml_.set_reset_required(0, 0), 0);  // the operator reset it
  ASSERT_TRUE(WaitTerminal(*d, 1));
  EXPECT_EQ(Get(*d, 1).state, JobState::kSucceeded) << Get(*d, 1).reason;
  EXPECT_TRUE(d->Health().ok()) << d->Health().message();
  EXPECT_THAT(MetricsText(*d),
              ::testing::ContainsRegex("migsched_gpu_needs_reset\\{gpu=\"0\",[^}]*\\} 0\n"));
}

// The GPUs were renumbered (a reset or a driver reload; device minor numbers can change too):
// the daemon does not mistake one GPU for another. Both are drained with the reason, the job
// waits, and after the operator's restart the job runs.
TEST_F(DaemonNvmlFaultsTest, RenumberedGpusAreDrainedUntilARestartAndNoJobIsLost) {
  ASSERT_TRUE(fake_nvml_.UseConfig(testing::WriteTempFile(
      "fake-nvml.json",
      R"({"gpus": [{"name": "NVIDIA A100-SXM4-40GB"}, {"name": "NVIDIA A100-SXM4-40GB"}]})")));
  auto d = StartNvml();
  ASSERT_NE(d, nullptr);
  ASSERT_EQ(fake_nvml_.renumber(0, 1), 0);
  ASSERT_OK(d->Submit(Req("1g.5gb", {"true"})));
  ASSERT_TRUE(TickUntil(*d, [&] { return d->Gpus()[0].draining && d->Gpus()[1].draining; }));
  EXPECT_THAT(d->Health().message(), HasSubstr("were renumbered"));
  EXPECT_THAT(d->Health().message(), HasSubstr("restart migsched"));
  EXPECT_FALSE(IsTerminal(Get(*d, 1).state)) << Get(*d, 1).reason;
  d.reset();  // the operator restarts migsched
  d = StartNvml();
  ASSERT_NE(d, nullptr);
  ASSERT_TRUE(WaitTerminal(*d, 1));
  EXPECT_EQ(Get(*d, 1).state, JobState::kSucceeded) << Get(*d, 1).reason;
  EXPECT_OK(d->Health());
}

// Creates and destroys that take a heavy-tailed time (lognormal) on two GPUs: every job runs,
// one NVML session serves the daemon, the changes of one GPU never overlap, and each change's
// measured time is in the reconfiguration histogram (at least the latency the driver took).
TEST_F(DaemonNvmlFaultsTest, HeavyTailedLatenciesLoseNothingAndAreMeasured) {
  ASSERT_TRUE(fake_nvml_.UseConfig(testing::WriteTempFile(
      "fake-nvml.json",
      R"({"gpus": [{"name": "NVIDIA A100-SXM4-40GB"}, {"name": "NVIDIA A100-SXM4-40GB"}]})")));
  const unsigned long long seed = 7;
  SCOPED_TRACE("latency seed " + std::to_string(seed));
  for (const char* call : {"nvmlDeviceCreateGpuInstanceWithPlacement", "nvmlGpuInstanceDestroy"}) {
    ASSERT_EQ(fake_nvml_.set_latency(call, -1, "lognormal", 3.0, 1.0, seed), 0);
  }
  auto d = StartNvml();
  ASSERT_NE(d, nullptr);
  const std::vector<std::string> profiles = {"1g.5gb",  "3g.20gb", "1g.5gb",  "7g.40gb",
                                             "2g.10gb", "1g.5gb",  "3g.20gb", "4g.20gb"};
  for (const std::string& p : profiles) ASSERT_OK(d->Submit(Req(p, {"true"})));
  const DaemonJobId last = static_cast<DaemonJobId>(profiles.size());
  ASSERT_TRUE(TickUntil(*d, [&] { return AllTerminal(*d, 1, last); }));
  for (DaemonJobId id = 1; id <= last; ++id) {
    EXPECT_EQ(Get(*d, id).state, JobState::kSucceeded) << id << ": " << Get(*d, id).reason;
  }
  ASSERT_OK(d->Settle());
  EXPECT_EQ(fake_nvml_.init_calls(), 1);
  EXPECT_EQ(fake_nvml_.max_concurrent_changes(0), 1);
  EXPECT_EQ(fake_nvml_.max_concurrent_changes(1), 1);
  const DaemonMetrics m = d->Metrics();
  const int changes = fake_nvml_.calls("nvmlDeviceCreateGpuInstanceWithPlacement") +
                      fake_nvml_.calls("nvmlGpuInstanceDestroy");
  EXPECT_GE(m.reconfigurations, 1);
  EXPECT_EQ(static_cast<int64_t>(m.reconfig_seconds.count), m.reconfigurations);
  EXPECT_EQ(m.reconfigurations, changes);  // every change succeeded and was counted once
  EXPECT_GE(m.reconfig_seconds.sum * 1000.0, fake_nvml_.slept_ms() - 1e-6);
  EXPECT_THAT(MetricsText(*d), HasSubstr("# TYPE migsched_reconfiguration_seconds histogram\n"));
  EXPECT_TRUE(ModelMatchesTheGpu(*d, 0));
  EXPECT_TRUE(ModelMatchesTheGpu(*d, 1));
}

}  // namespace
}  // namespace migsched
