#include "sim/sim_writers.h"

#include <gtest/gtest.h>

#include <limits>
#include <sstream>

#include "core/numbers.h"

namespace migsched {
namespace {

TEST(CsvFieldTest, QuotesOnlyWhenNeeded) {
  EXPECT_EQ(CsvField("3g.20gb"), "3g.20gb");
  EXPECT_EQ(CsvField(""), "");
  EXPECT_EQ(CsvField("a,b"), "\"a,b\"");
  EXPECT_EQ(CsvField("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(CsvField("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(CsvField("cr\r"), "\"cr\r\"");
}

TEST(SimWritersTest, JobsCsv) {
  SimResult r;
  JobRecord done;
  done.id = 0;
  done.name = "a";
  done.request = "2x3g.20gb";
  done.arrival_s = 0;
  done.placed_s = 0;
  done.start_s = 0.023;
  done.end_s = 100.023;
  done.wait_s = 0.023;
  done.jct_s = 100.023;
  done.instances = "0:3g.20gb@4;1:3g.20gb@0";
  done.migrations = 2;
  done.duration_s = 50;  // slowdown 100.023 / 50
  done.time_limit_s = 3600;
  JobRecord rej;
  rej.id = 1;
  rej.name = "b";
  rej.request = "7g.40gb";
  rej.arrival_s = 2.5;
  rej.placed_s = rej.start_s = rej.end_s = rej.wait_s = rej.jct_s = kNaN;
  rej.duration_s = 5;
  rej.outcome = JobOutcome::kRejected;
  rej.reason = "no GPU in the cluster (A30 24GB, \"X\") offers profile 7g.40gb";
  r.jobs = {done, rej};
  std::ostringstream out;
  ASSERT_TRUE(WriteJobsCsv(r, out).ok());
  EXPECT_EQ(out.str(),
            "id,name,request,outcome,arrival_s,placed_s,start_s,wait_s,end_s,jct_s,instances,"
            "reason,migrations,duration_s,slowdown,bounded_slowdown,time_limit_s\n"
            "0,a,2x3g.20gb,completed,0,0,0.023,0.023,100.023,100.023,0:3g.20gb@4;1:3g.20gb@0,,2,50,"
            "2.00046,2.00046,3600\n"
            "1,b,7g.40gb,rejected,2.5,,,,,,,\"no GPU in the cluster (A30 24GB, \"\"X\"\") offers "
            "profile 7g.40gb\",0,5,,,\n");
}

TEST(SimWritersTest, TimelineAndFillCurveCsv) {
  SimResult r;
  r.timeline = {{0, 1, 1, 4.0 / 7, 0, 1}, {100, 0, 1, 0.5, 0.125, 0}};
  r.fill_curve = {{0.05, 0.125, 0.25, 1, 0.35, 1, 1}};
  std::ostringstream t, f;
  ASSERT_TRUE(WriteTimelineCsv(r, t).ok());
  EXPECT_EQ(t.str(),
            "time_s,queue_length,running_jobs,utilization,frag_rate,stranded\n"
            "0,1,1,0.5714285714285714,0,1\n"
            "100,0,1,0.5,0.125,0\n");
  ASSERT_TRUE(WriteFillCurveCsv(r, f).ok());
  EXPECT_EQ(f.str(),
            "target_share,requested_share,allocation,acceptance,frag_rate,arrived,placed\n"
            "0.05,0.125,0.25,1,0.35,1,1\n");
}

TEST(SimWritersTest, StreamFailureIsReported) {
  SimResult r;
  std::ostringstream out;
  out.setstate(std::ios::badbit);
  EXPECT_EQ(WriteTimelineCsv(r, out).message(), "writing the timeline CSV failed");
}

}  // namespace
}  // namespace migsched
