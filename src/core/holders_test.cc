// Holders of busy instances (core/job.h Holder): a job, a reservation or a
// placeholder, each with ids of its own; plans carry the kind.
#include <gtest/gtest.h>

#include "core/cluster.h"
#include "core/gpu_state.h"
#include "core/plan.h"
#include "testing/status_matchers.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::Model;

TEST(HoldersTest, KindsAreKeptApartAndPrinted) {
  ConfigTableCache tables;
  const GpuModel& m = Model("A100-40GB");
  Cluster c({&m}, &tables);
  const int p3 = m.FindProfile("3g.20gb");
  Step hold{StepKind::kStart, 0, p3, 4, 3};
  hold.holder = Holder::kReservation;
  ASSERT_OK(ApplyPlan(Plan{{{StepKind::kCreate, 0, p3, 4, kNoJob}, hold}}, &c));
  EXPECT_EQ(c.gpu(0).DebugString(), "3g.20gb@4[busy:reservation 3]");
  EXPECT_TRUE(c.gpu(0).instances()[0].busy());
  EXPECT_FALSE(c.gpu(0).instances()[0].runs_job());
  EXPECT_EQ(DescribeStep(hold, c), "start 3g.20gb@4 on GPU 0 (reservation 3)");
  // Job 3 is not reservation 3: releasing the wrong kind is refused.
  Status st = ApplyPlan(Plan{{{StepKind::kRelease, 0, p3, 4, 3}}}, &c);
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  EXPECT_NE(st.message().find("release job 3 @4: the instance is held by reservation 3"),
            std::string::npos)
      << st.message();
  // Nor may a hold be a migration's source.
  Step begin{StepKind::kMigrateBegin, 0, p3, 0, 3, 0, 4};
  st = ApplyPlan(Plan{{{StepKind::kCreate, 0, p3, 0, kNoJob}, begin}}, &c);
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  EXPECT_NE(st.message().find("held by reservation 3, not job 3"), std::string::npos)
      << st.message();
  Step release = hold;
  release.kind = StepKind::kRelease;
  ASSERT_OK(ApplyPlan(Plan{{release}}, &c));
  EXPECT_EQ(c.gpu(0).DebugString(), "3g.20gb@4[idle]");
  EXPECT_OK(c.gpu(0).CheckInvariants());
}

TEST(HoldersTest, ClusterNamesGpus) {
  ConfigTableCache tables;
  const GpuModel& m = Model("A100-40GB");
  Cluster c({&m, &m}, &tables);
  EXPECT_EQ(c.GpuName(1), "GPU 1");
  c.SetGpuName(1, "n3 GPU 7");
  EXPECT_EQ(c.GpuName(1), "n3 GPU 7");
  EXPECT_EQ(c.GpuName(0), "GPU 0");
}

}  // namespace
}  // namespace migsched
