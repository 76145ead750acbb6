// The online driver with hand-made (deliberately broken) policies: the run
// must stop with an error, never loop or crash.
#include "sim/online_mode.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/config_table.h"
#include "testing/builders.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::AJob;
using ::migsched::testing::Model;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// Never places anything, yet (default Capacity) claims every job can run.
class NeverPlaces : public PlacementPolicy {
 public:
  std::string_view name() const override { return "never"; }
  std::optional<Candidate> Choose(const Cluster&, const PlacementRequest&) override {
    return std::nullopt;
  }
};

// Always answers 3g.20gb@0 on GPU 0, even when it is busy.
class AlwaysSlotZero : public PlacementPolicy {
 public:
  std::string_view name() const override { return "slot-zero"; }
  std::optional<Candidate> Choose(const Cluster& c, const PlacementRequest&) override {
    Candidate cand;
    cand.gpu = 0;
    cand.profile = c.gpu(0).model().FindProfile("3g.20gb");
    cand.start = 0;
    return cand;
  }
};

Status RunWith(std::unique_ptr<PlacementPolicy> policy, const std::vector<WorkloadJob>& jobs) {
  ConfigTableCache tables;
  Cluster cluster({&Model("A100-40GB")}, &tables);
  ManualClock clock;
  Scheduler scheduler(&cluster, std::move(policy), SchedulerOptions{}, &clock);
  auto tracker = ClusterTracker::Create(cluster, true);
  if (!tracker.ok()) return tracker.status();
  SimOptions options;
  options.clock = &clock;
  SimResult result;
  return RunOnlineMode(jobs, options, &scheduler, &*tracker, &result);
}

TEST(OnlineModeTest, JobsLeftQueuedWithNothingToHappenIsABug) {
  Status st = RunWith(std::make_unique<NeverPlaces>(),
                      {AJob("1g.5gb").Named("stuck").Runs(10),
                       AJob("2g.10gb").Named("also").ArrivesAt(1).Runs(10)});
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  EXPECT_EQ(st.message(),
            "simulation ended with 2 job(s) still queued and nothing left to happen (a bug): "
            "job 0 ('stuck', 1g.5gb), job 1 ('also', 2g.10gb)");
}

TEST(OnlineModeTest, ARejectedPlanAbortsTheRun) {
  // The first job gets 3g.20gb@0; the second is sent to the same, busy, slot:
  // ApplyPlan rejects the create. The error names the step and its time: event times t=0 (a
  // arrives), t=0.023 s (a starts after its 23 ms create), t=1 s (b arrives): step 3.
  Status st = RunWith(
      std::make_unique<AlwaysSlotZero>(),
      {AJob("3g.20gb").Named("a").Runs(10), AJob("3g.20gb").Named("b").ArrivesAt(1).Runs(10)});
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  EXPECT_THAT(st.message(), StartsWith("step 3 (t=1 s): plan step 1 (create 3g.20gb@0 on GPU 0)"));
  EXPECT_THAT(st.message(), HasSubstr("overlaps"));
}

}  // namespace
}  // namespace migsched
