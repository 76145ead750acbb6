#include "cli/memory_check.h"

#include <gtest/gtest.h>

namespace migsched::cli {
namespace {

TEST(MemoryCheckTest, EstimateAddsTheParts) {
  RunShape s;
  s.jobs = 1000000;
  // 32 MB + 1e6 × (250 + 300) B.
  EXPECT_DOUBLE_EQ(EstimateMemoryBytes(s), 32e6 + 550e6);
  s.parallel_runs = 4;
  s.total_runs = 8;
  s.record_jobs = true;
  // + 3 more simulations at once (3 × 300) + 8 kept runs × 200 B of records.
  EXPECT_DOUBLE_EQ(EstimateMemoryBytes(s), 32e6 + 1e6 * (250 + 4 * 300 + 8 * 200));
  s.record_timeline = true;
  s.workloads = 3;
  EXPECT_DOUBLE_EQ(EstimateMemoryBytes(s), 32e6 + 1e6 * (3 * 250 + 4 * 300 + 8 * (200 + 150)));
}

TEST(MemoryCheckTest, RefusesWithTheEstimateAndWhatIsAvailable) {
  RunShape s;
  s.jobs = 1000000;
  s.parallel_runs = 2;
  // Needs 32 MB + 1e6 × (250 + 2 × 300) B = 882 MB.
  EXPECT_TRUE(CheckMemory(s, 882e6).ok());
  Status st = CheckMemory(s, 500e6);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(st.message(),
            "this run needs about 882 MB of memory (1000000 jobs; 2 simulations at once) but "
            "500 MB is available: lower --jobs or --threads, or give --no-memory-check to run "
            "anyway");
  EXPECT_TRUE(CheckMemory(s, 0).ok()) << "unknown availability: no check";
  s.parallel_runs = 1;
  s.jobs = 100000000;  // 32 MB + 1e8 × 550 B = 55.0 GB
  EXPECT_EQ(CheckMemory(s, 11.2e9).message(),
            "this run needs about 55.0 GB of memory (100000000 jobs) but 11.2 GB is available: "
            "lower --jobs, or give --no-memory-check to run anyway");
}

TEST(MemoryCheckTest, AvailableMemoryIsReadFromTheSystem) {
  // Whatever this machine has, it is some positive amount below 1 PB.
  const double available = AvailableMemoryBytes();
  EXPECT_GT(available, 0);
  EXPECT_LT(available, 1e15);
}

}  // namespace
}  // namespace migsched::cli
