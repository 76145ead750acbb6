#include "nodeapi/job_record.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "testing/status_matchers.h"

namespace migsched {
namespace {

// The life cycle as docs/daemon.md "Job states" writes it (its table of
// edges), one "kind from->to" per edge, typed from the document.
const std::set<std::string>& DocumentedEdges() {
  static const std::set<std::string> edges = {
      // job
      "job queued->starting",
      "job queued->rejected",
      "job queued->cancelled",
      "job starting->running",
      "job starting->queued",
      "job running->migrating",
      "job migrating->running",
      "job migrating->starting",
      "job migrating->queued",
      // starting, running, migrating → succeeded, failed, cancelled, timeout
      "job starting->succeeded",
      "job starting->failed",
      "job starting->cancelled",
      "job starting->timeout",
      "job running->succeeded",
      "job running->failed",
      "job running->cancelled",
      "job running->timeout",
      "job migrating->succeeded",
      "job migrating->failed",
      "job migrating->cancelled",
      "job migrating->timeout",
      // allocation
      "allocation starting->running",
      "allocation starting->failed",
      "allocation running->released",
      "allocation running->failed",
  };
  return edges;
}

std::string Edge(JobKind kind, JobState from, JobState to) {
  return std::string(JobKindName(kind)) + " " + std::string(JobStateName(from)) + "->" +
         std::string(JobStateName(to));
}

// 10 states, so 2 kinds x 10 x 10 = 200 pairs, 25 of them edges.
TEST(JobLifecycleTest, EveryDocumentedEdgeIsAcceptedAndNoOther) {
  ASSERT_EQ(AllJobStates().size(), 10u);
  int accepted = 0;
  for (JobKind kind : {JobKind::kJob, JobKind::kAllocation}) {
    for (JobState from : AllJobStates()) {
      for (JobState to : AllJobStates()) {
        const std::string edge = Edge(kind, from, to);
        const bool documented = DocumentedEdges().count(edge) > 0;
        EXPECT_EQ(IsLegalTransition(kind, from, to), documented) << edge;
        DaemonJobRecord r;
        r.id = 7;
        r.kind = kind;
        r.state = from;
        Status st = TransitionJob(r, to, 1000);
        if (documented) {
          EXPECT_TRUE(st.ok()) << edge << ": " << st.ToString();
          EXPECT_EQ(r.state, to) << edge;
          ++accepted;
        } else {
          EXPECT_EQ(st.code(), StatusCode::kInternal) << edge;
          EXPECT_EQ(r.state, from) << edge << ": a refused edge leaves the state";
          EXPECT_EQ(r.started_at, 0) << edge;
          EXPECT_EQ(r.ended_at, 0) << edge;
        }
      }
    }
  }
  EXPECT_EQ(accepted, 25);
}

TEST(JobLifecycleTest, NothingLeavesATerminalState) {
  for (JobKind kind : {JobKind::kJob, JobKind::kAllocation}) {
    for (JobState from : {JobState::kSucceeded, JobState::kFailed, JobState::kCancelled,
                          JobState::kRejected, JobState::kReleased, JobState::kTimeout}) {
      for (JobState to : AllJobStates()) {
        EXPECT_FALSE(IsLegalTransition(kind, from, to)) << Edge(kind, from, to);
      }
    }
  }
}

TEST(JobLifecycleTest, ARefusedEdgeSaysWhichJobAndBothStates) {
  DaemonJobRecord r;
  r.id = 42;
  r.kind = JobKind::kJob;
  r.state = JobState::kSucceeded;
  Status st = TransitionJob(r, JobState::kFailed, 5);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  EXPECT_NE(st.message().find("job 42"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("succeeded → failed"), std::string::npos) << st.message();
  EXPECT_EQ(r.state, JobState::kSucceeded);
  EXPECT_EQ(r.ended_at, 0);
}

TEST(JobLifecycleTest, ANewRecordStartsInItsKindsInitialState) {
  // docs/daemon.md: a job starts queued, an allocation starting.
  DaemonJobRecord job = NewJobRecord(3, JobKind::kJob, 100);
  EXPECT_EQ(job.id, 3);
  EXPECT_EQ(job.kind, JobKind::kJob);
  EXPECT_EQ(job.state, JobState::kQueued);
  EXPECT_EQ(job.submitted_at, 100);
  DaemonJobRecord alloc = NewJobRecord(4, JobKind::kAllocation, 200);
  EXPECT_EQ(alloc.kind, JobKind::kAllocation);
  EXPECT_EQ(alloc.state, JobState::kStarting);
  EXPECT_EQ(alloc.submitted_at, 200);
}

TEST(JobLifecycleTest, RunningSetsTheFirstStartAndAnEndSetsTheEnd) {
  DaemonJobRecord r = NewJobRecord(1, JobKind::kJob, 10);
  ASSERT_OK(TransitionJob(r, JobState::kStarting, 11));
  EXPECT_EQ(r.started_at, 0);  // starting is not a start
  ASSERT_OK(TransitionJob(r, JobState::kRunning, 12));
  EXPECT_EQ(r.started_at, 12);
  ASSERT_OK(TransitionJob(r, JobState::kMigrating, 13));
  ASSERT_OK(TransitionJob(r, JobState::kStarting, 14));  // switched over
  ASSERT_OK(TransitionJob(r, JobState::kRunning, 15));   // relaunched on the target
  EXPECT_EQ(r.started_at, 12);                           // the job's first start stays
  EXPECT_EQ(r.ended_at, 0);
  ASSERT_OK(TransitionJob(r, JobState::kSucceeded, 16));
  EXPECT_EQ(r.ended_at, 16);

  DaemonJobRecord q = NewJobRecord(2, JobKind::kJob, 20);
  ASSERT_OK(TransitionJob(q, JobState::kRejected, 20));
  EXPECT_EQ(q.ended_at, 20);
  EXPECT_EQ(q.started_at, 0);
}

// A request names a placement only when it gives a GPU: the rule "gpu -1 is
// anywhere" is read in exact(), and the daemon, the client and the JSON forms
// all ask it.
TEST(RequestedInstanceTest, AProfileAloneIsAnywhereAndAGpuMakesItExact) {
  EXPECT_FALSE(RequestedInstance{}.exact());
  const RequestedInstance anywhere = RequestedInstance::Anywhere("1g.5gb");
  EXPECT_FALSE(anywhere.exact());
  EXPECT_EQ(anywhere.gpu.value(), -1);
  EXPECT_EQ(anywhere.start, -1);
  const RequestedInstance at = RequestedInstance::At({2, "3g.20gb", 4});
  EXPECT_TRUE(at.exact());
  EXPECT_EQ(at.placement(), (PlacementRef{2, "3g.20gb", 4}));
  EXPECT_TRUE(RequestedInstance::At({0, "7g.40gb", 0}).exact());  // GPU 0 is a GPU
}

// A record's instance is its placement plus which instance it is: two
// instances at one placement (before and after a re-create) have equal
// placements but are not equal.
TEST(JobInstanceTest, ItsPlacementIsWhereAndEqualityIsTheWholeInstance) {
  JobInstance a;
  a.gpu = 2;
  a.profile = "3g.20gb";
  a.start = 4;
  a.size = 4;
  a.mig_uuid = "MIG-a";
  JobInstance b = a;
  b.mig_uuid = "MIG-b";
  EXPECT_EQ(a.placement(), (PlacementRef{2, "3g.20gb", 4}));
  EXPECT_EQ(a.placement(), b.placement());
  EXPECT_FALSE(a == b);
  b.mig_uuid = "MIG-a";
  EXPECT_TRUE(a == b);
}

}  // namespace
}  // namespace migsched
