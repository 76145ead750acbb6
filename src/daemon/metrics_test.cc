#include "daemon/metrics.h"

#include <gtest/gtest.h>

namespace migsched {
namespace {

TEST(BusyTimeTest, CreditsTheTimeBetweenSamplesToInstancesBusyAtTheFirst) {
  BusyTime t;
  const InstanceKey a{0, 1, "1g.5gb"};
  const InstanceKey b{0, 2, "2g.10gb"};
  t.Sample(100, {{a, true}, {b, false}});  // the first sample credits nothing
  EXPECT_EQ(t.Seconds(a), 0);
  t.Sample(110, {{a, true}, {b, true}});  // a busy over [100, 110]: 10; b idle then
  EXPECT_EQ(t.Seconds(a), 10);
  EXPECT_EQ(t.Seconds(b), 0);
  t.Sample(115, {{a, false}, {b, true}});  // a +5 (busy at 110), b +5
  EXPECT_EQ(t.Seconds(a), 15);
  EXPECT_EQ(t.Seconds(b), 5);
  t.Sample(200, {{a, false}, {b, true}});  // a idle; b busy, the 85 s gap capped at 60
  EXPECT_EQ(t.Seconds(a), 15);
  EXPECT_EQ(t.Seconds(b), 5 + BusyTime::kMaxStepS);
  t.Sample(201, {{b, true}});  // a destroyed: forgotten (a new instance starts from 0)
  EXPECT_EQ(t.Seconds(a), 0);
  EXPECT_EQ(t.Seconds(b), 66);
  t.Sample(202, {{a, true}, {b, true}});
  EXPECT_EQ(t.Seconds(a), 0);
}

TEST(OutcomeCountsTest, CountsPerKindAndOutcome) {
  OutcomeCounts c;
  c.Count("job", "timeout");
  c.Count("job", "timeout");
  c.Count("allocation", "released");
  auto s = c.Snapshot();
  EXPECT_EQ(s.size(), 2u);
  EXPECT_EQ((s[{"job", "timeout"}]), 2);
  EXPECT_EQ((s[{"allocation", "released"}]), 1);
}

TEST(EscapeLabelValueTest, EscapesWhatTheTextFormatRequires) {
  EXPECT_EQ(EscapeLabelValue(R"(a\b"c)"
                             "\n"),
            R"(a\\b\"c\n)");
  EXPECT_EQ(EscapeLabelValue("A100 40GB"), "A100 40GB");
}

}  // namespace
}  // namespace migsched
