// The fixture of the daemon's tests: a fake node the test keeps (so that
// its instances outlive one Daemon, as on real hardware), daemons started on
// it, and helpers to drive the control loop. Test-only.
#ifndef MIGSCHED_DAEMON_DAEMON_FIXTURE_H_
#define MIGSCHED_DAEMON_DAEMON_FIXTURE_H_

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/cluster.h"
#include "daemon/daemon.h"
#include "daemon/fake_backend.h"
#include "testing/status_matchers.h"
#include "testing/test_util.h"

namespace migsched {

using ::migsched::testing::BundledCatalog;
using ::migsched::testing::MakeTempDir;
using ::migsched::testing::ReadFile;

// One second in the daemon's clock unit (nanoseconds).
inline constexpr int64_t kSecond = 1'000'000'000;

// An allocation request (the node API's POST /v1/allocations) for `owner`; `reservation` binds a
// held reservation by name, `prefix` any one under that name prefix.
inline AllocationRequest Alloc(const std::string& owner, std::vector<RequestedInstance> instances,
                               const std::string& reservation = "",
                               const std::string& prefix = "") {
  AllocationRequest a;
  a.owner = owner;
  a.instances = std::move(instances);
  a.reservation = reservation;
  a.reservation_prefix = prefix;
  return a;
}

// A MigBackend that forwards to a FakeBackend the test owns, so that the
// node's instances outlive one Daemon (a daemon restart on the same node).
class SharedBackend : public MigBackend {
 public:
  explicit SharedBackend(FakeBackend* b) : b_(b) {}
  std::string_view name() const override { return b_->name(); }
  StatusOr<std::vector<BackendGpu>> ListGpus() override { return b_->ListGpus(); }
  StatusOr<std::vector<BackendProfile>> ListProfiles(int gpu) override {
    return b_->ListProfiles(gpu);
  }
  StatusOr<std::vector<BackendInstance>> ListInstances(int gpu) override {
    return b_->ListInstances(gpu);
  }
  StatusOr<BackendInstance> CreateInstance(int gpu, int profile_id, Placement p) override {
    return b_->CreateInstance(gpu, profile_id, p);
  }
  Status DestroyInstance(int gpu, unsigned int gi_id) override {
    return b_->DestroyInstance(gpu, gi_id);
  }
  StatusOr<PcieThroughput> GetPcieThroughput(int gpu) override {
    return b_->GetPcieThroughput(gpu);
  }

 private:
  FakeBackend* b_;
};

class DaemonTest : public ::testing::Test {
 public:
  // Waits until the job's stored state is terminal (at most 5 s of ticks).
  static bool WaitTerminal(Daemon& d, DaemonJobId id) {
    return TickUntil(d, [&] { return IsTerminal(Get(d, id).state); });
  }

 protected:
  void SetUp() override {
    config_.state_dir = MakeTempDir("migsched-daemon");
    config_.kill_grace_s = 1;
    config_.policy = "full";
    // full's own default, which the config loader applies from the registry (this config is
    // built by hand; the other options keep SchedulerOptions' defaults).
    config_.scheduler.migration.enabled = true;
  }

  // A fake node of `spec` GPUs kept by the test; returns a daemon on it.
  std::unique_ptr<Daemon> Start(const std::string& spec = "1xA100-40GB", FakeFaults faults = {}) {
    if (!fake_) {
      StatusOr<std::vector<const GpuModel*>> models = ParseClusterSpec(spec, BundledCatalog());
      EXPECT_TRUE(models.ok()) << models.status().ToString();
      fake_ = std::make_unique<FakeBackend>(*models, faults);
    }
    StatusOr<std::unique_ptr<Daemon>> d = Daemon::Create(
        config_, std::make_unique<SharedBackend>(fake_.get()), &BundledCatalog(), clock_);
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    return d.ok() ? std::move(*d) : nullptr;
  }

  static JobRequest Req(const std::string& profile, std::vector<std::string> cmd, int count = 1) {
    JobRequest r;
    r.profile = profile;
    r.count = count;
    r.command = std::move(cmd);
    return r;
  }

  // Ticks until `done` (at most 5 s).
  static bool TickUntil(Daemon& d, const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < deadline) {
      Status st = d.Tick();
      EXPECT_TRUE(st.ok()) << st.ToString();
      d.WaitIdle();
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  static DaemonJobRecord Get(Daemon& d, DaemonJobId id) {
    StatusOr<DaemonJobRecord> r = d.GetJob(id);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : DaemonJobRecord{};
  }
  static bool InState(Daemon& d, DaemonJobId id, JobState s) { return Get(d, id).state == s; }

  DaemonConfig config_;
  std::unique_ptr<FakeBackend> fake_;
  Clock* clock_ = SteadyClock();  // a test may set a ManualClock before Start
};

}  // namespace migsched

#endif  // MIGSCHED_DAEMON_DAEMON_FIXTURE_H_
