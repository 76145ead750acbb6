// JobService alone, with a stub ServiceHost in place of the daemon: the parts
// it uses (NodeModel, InstanceSync on a fake backend, ProcessRunner) are the
// real ones; what only the daemon does (store writes, whether changes are
// accepted) is the stub's, so that each outcome can be forced. The test plays
// the control loop: it scans the queue, hands the decisions to Place, and
// takes, launches and records the pending launches, as Daemon::Tick does.
#include "daemon/job_service.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "core/job.h"
#include "daemon/discovery.h"
#include "daemon/fake_backend.h"
#include "daemon/fake_node_test_base.h"
#include "sched/limit_model.h"
#include "testing/status_matchers.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::testing::HasSubstr;

using StubHost = StubServiceHost<ServiceHost>;

class JobServiceTest : public FakeNodeTestBase {
 protected:
  void SetUp() override {
    StartNode("first-fit");
    if (HasFatalFailure()) return;
    const std::filesystem::path dir = testing::MakeTempDir("migsched-job-service");
    runner_ = std::make_unique<ProcessRunner>(dir / "state", dir / "work");
    JobUsers users;
    users.default_user = DaemonUser();
    users.allowed[users.default_user.name] = users.default_user;
    service_ =
        std::make_unique<JobService>(model_.get(), sync_.get(), runner_.get(), users, &config_,
                                     &counters_, clock_, clock_->NowNanos(), &mu_, &host_);
  }

  Clock* clock_ = SteadyClock();

  static JobRequest Req(std::vector<std::string> cmd, const std::string& profile = "1g.5gb") {
    JobRequest r;
    r.profile = profile;
    r.command = std::move(cmd);
    return r;
  }

  // The control loop's placement step: scans the queue, places what fits
  // and waits until the sync has carried the plans out.
  void PlaceQueued() {
    {
      StateLock lock(&mu_);
      StatusOr<std::vector<Decision>> decisions = model_->scheduler().ScheduleQueue();
      ASSERT_OK(decisions);
      for (const Decision& d : *decisions) service_->Place(d);
    }
    WaitUntil([&] { return sync_->idle(); });
  }

  // The control loop's launch step (fork without the lock, as Tick does).
  void LaunchPending() {
    std::vector<JobService::PendingLaunch> launches;
    {
      StateLock lock(&mu_);
      launches = service_->TakeLaunches();
    }
    for (JobService::PendingLaunch& l : launches) service_->Launch(l);
    StateLock lock(&mu_);
    for (JobService::PendingLaunch& l : launches) service_->RecordLaunch(l);
  }

  // Calls `done` with the state lock held until it is true (at most 5 s).
  void WaitUntil(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < deadline) {
      {
        StateLock lock(&mu_);
        if (done()) return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    ADD_FAILURE() << "timed out";
  }

  StubHost host_;
  std::unique_ptr<ProcessRunner> runner_;
  std::unique_ptr<JobService> service_;
};

// A job is shown once stored; the same key with the same request gets the
// first record back, with another request an error; a job whose record
// cannot be stored is not accepted and never shows.
TEST_F(JobServiceTest, SubmitIsStoredFirstAndAKeyReplaysIt) {
  ASSERT_OK_AND_ASSIGN(SubmitResult first, service_->Submit(Req({"true"}), "key-1"));
  EXPECT_EQ(first.record.id, 1);
  EXPECT_EQ(first.record.state, JobState::kQueued);
  EXPECT_FALSE(first.replayed);
  EXPECT_EQ(host_.writes, 2u);  // the record and its "submitted" event

  ASSERT_OK_AND_ASSIGN(SubmitResult again, service_->Submit(Req({"true"}), "key-1"));
  EXPECT_TRUE(again.replayed);
  EXPECT_EQ(again.record.id, 1);
  EXPECT_EQ(host_.writes, 2u);  // nothing new stored

  StatusOr<SubmitResult> other = service_->Submit(Req({"false"}), "key-1");
  EXPECT_EQ(other.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(other.status().message(), HasSubstr("idempotency key 'key-1' was used for another"));

  host_.store = UnavailableError("disk full");
  StatusOr<SubmitResult> lost = service_->Submit(Req({"true"}), "");
  EXPECT_EQ(lost.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(lost.status().message(), HasSubstr("the job was not accepted"));
  EXPECT_EQ(service_->Get(2).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(model_->scheduler().queue_size(), 1u);  // only job 1 waits
}

// A refusal of the daemon (stopping, degraded store) is the caller's answer,
// and nothing is stored or queued.
TEST_F(JobServiceTest, RefusedChangesStoreNothing) {
  host_.accepting = UnavailableError("the daemon is shutting down");
  StatusOr<SubmitResult> r = service_->Submit(Req({"true"}), "");
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(r.status().message(), "the daemon is shutting down");
  EXPECT_EQ(host_.writes, 0u);
  EXPECT_EQ(model_->scheduler().queue_size(), 0u);
}

// Cancel and the launch share the pending launches: a job cancelled after its
// instances exist but before its process started ends at the next launch
// step, cancelled, never launched, and its instance is released.
TEST_F(JobServiceTest, ACancelBeforeTheLaunchEndsTheJobWithoutRunningIt) {
  ASSERT_OK_AND_ASSIGN(SubmitResult s, service_->Submit(Req({"true"}), ""));
  PlaceQueued();
  {
    StateLock lock(&mu_);
    ASSERT_TRUE(service_->HasPendingLaunches());
  }
  ASSERT_OK_AND_ASSIGN(DaemonJobRecord c, service_->Cancel(s.record.id));
  EXPECT_EQ(c.state, JobState::kStarting);
  EXPECT_TRUE(c.cancel_requested);
  LaunchPending();
  ASSERT_OK_AND_ASSIGN(DaemonJobRecord end, service_->Get(s.record.id));
  EXPECT_EQ(end.state, JobState::kCancelled);
  EXPECT_EQ(end.reason, "cancelled before it started");
  EXPECT_EQ(end.pid, 0);
  // A second cancel is refused: the job has ended.
  EXPECT_EQ(service_->Cancel(s.record.id).status().code(), StatusCode::kFailedPrecondition);
  StateLock lock(&mu_);
  EXPECT_FALSE(service_->HasProcesses());
  EXPECT_EQ(model_->scheduler().InstancesOf(static_cast<JobId>(s.record.id)), nullptr);
  EXPECT_TRUE(service_->completed());
}

// A job runs on its instance and is reaped with its exit status: `exit 3` is
// a failure "exited with code 3", and the run is let go.
TEST_F(JobServiceTest, ALaunchedJobIsReapedWithItsExitStatus) {
  ASSERT_OK_AND_ASSIGN(SubmitResult s, service_->Submit(Req({"sh", "-c", "exit 3"}), ""));
  PlaceQueued();
  LaunchPending();
  ASSERT_OK_AND_ASSIGN(DaemonJobRecord running, service_->Get(s.record.id));
  EXPECT_EQ(running.state, JobState::kRunning);
  EXPECT_GT(running.pid, 0);
  WaitUntil([&] {
    service_->Reap();
    return !service_->HasProcesses();
  });
  ASSERT_OK_AND_ASSIGN(DaemonJobRecord end, service_->Get(s.record.id));
  EXPECT_EQ(end.state, JobState::kFailed);
  ASSERT_TRUE(end.exit_code.has_value());
  EXPECT_EQ(*end.exit_code, 3);
  EXPECT_EQ(end.reason, "exited with code 3");
}

// The same with a clock that stands still (every run takes 0 s).
class JobServiceStillClockTest : public JobServiceTest {
 protected:
  JobServiceStillClockTest() { clock_ = &still_; }
  ManualClock still_{1'800'000'000'000'000'000};
};

// §5 run times learned per request: the daemon tells the scheduler which request each run was.
// Ten 1g.5gb jobs with limit 100 s and ten 2g.10gb jobs with limit 10000 s run `true` while the
// clock stands still: every run counts as 1 s, log shares a = ln(1/100) and b = ln(1/10000),
// the window's mean m = (a + b)/2. By hand: 1g.5gb (10a + 5m)/15 - m = (a - b)/3, factor
// 100^(1/3) = 4.641589; 2g.10gb 100^(-1/3) = 0.215443. Told without the request (every run one
// request) both would be 1.
TEST_F(JobServiceStillClockTest, EachRunIsLearnedForItsRequest) {
  std::vector<DaemonJobId> ids;
  for (int k = 0; k < 20; ++k) {
    JobRequest r = Req({"true"}, k % 2 == 0 ? "1g.5gb" : "2g.10gb");
    r.time_limit_s = k % 2 == 0 ? 100 : 10000;
    ASSERT_OK_AND_ASSIGN(SubmitResult s, service_->Submit(r, ""));
    ids.push_back(s.record.id);
  }
  const auto all_ended = [&] {
    for (DaemonJobId id : ids) {
      StatusOr<DaemonJobRecord> r = service_->Get(id);
      if (!r.ok() || r->state != JobState::kSucceeded) return false;
    }
    return true;
  };
  for (int round = 0; round < 20 && !all_ended(); ++round) {
    PlaceQueued();
    LaunchPending();
    WaitUntil([&] {
      service_->Reap();
      return !service_->HasProcesses();
    });
  }
  ASSERT_TRUE(all_ended());
  StateLock lock(&mu_);
  const LimitModel& m = model_->scheduler().limit_model();
  EXPECT_EQ(m.samples(), 20u);
  EXPECT_NEAR(m.RequestFactor(RequestKeyOf(Req({"true"}, "1g.5gb").ToJob())), 4.641589, 1e-6);
  EXPECT_NEAR(m.RequestFactor(RequestKeyOf(Req({"true"}, "2g.10gb").ToJob())), 0.215443, 1e-6);
}

// A job ends once: a second end (a bug: no such edge in the life cycle) is
// refused, and the first end, its count and its record stay; nothing more is
// stored.
TEST_F(JobServiceTest, AJobThatEndedIsNotEndedAgain) {
  ASSERT_OK_AND_ASSIGN(SubmitResult s, service_->Submit(Req({"sh", "-c", "exit 3"}), ""));
  PlaceQueued();
  LaunchPending();
  WaitUntil([&] {
    service_->Reap();
    return !service_->HasProcesses();
  });
  StateLock lock(&mu_);
  DaemonJobRecord* r = service_->MutableJob(s.record.id);
  ASSERT_NE(r, nullptr);
  ASSERT_EQ(r->state, JobState::kFailed);
  const double ended_at = r->ended_at;
  const size_t writes = host_.writes;
  service_->FinishJob(*r, JobState::kSucceeded, 0, "");
  EXPECT_EQ(r->state, JobState::kFailed);
  ASSERT_TRUE(r->exit_code.has_value());
  EXPECT_EQ(*r->exit_code, 3);
  EXPECT_EQ(r->reason, "exited with code 3");
  EXPECT_EQ(r->ended_at, ended_at);
  EXPECT_EQ(host_.writes, writes);
  const auto ended = counters_.ended.Snapshot();
  EXPECT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended.count({"job", "failed"}) ? ended.at({"job", "failed"}) : 0, 1);
}

// Allocations are records of the same table but are released, not
// cancelled: KindOf tells the daemon where to send a DELETE.
TEST_F(JobServiceTest, AnAllocationIsNotCancelledHere) {
  {
    StateLock lock(&mu_);
    DaemonJobRecord a;
    a.id = service_->NextJobId();
    a.kind = JobKind::kAllocation;
    a.state = JobState::kRunning;
    service_->table()->AddStored(a);
  }
  ASSERT_OK_AND_ASSIGN(JobKind kind, service_->KindOf(1));
  EXPECT_EQ(kind, JobKind::kAllocation);
  StatusOr<DaemonJobRecord> c = service_->Cancel(1);
  EXPECT_EQ(c.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(c.status().message(), HasSubstr("released by its owner"));
  EXPECT_EQ(service_->KindOf(2).status().code(), StatusCode::kNotFound);
}

// The scheduler core's view of a job (its Job) is derived once, at submit, and kept with the
// record in the job table, where the queue, requeues and the waiting reasons read it; an
// allocation has none. Expected values: the request's own fields (JobRequest::ToJob copies the
// profile, the count, the time limit as the expected run time, the flags and the name).
TEST_F(JobServiceTest, TheJobIsDerivedOnceAtSubmitAndKeptWithTheRecord) {
  JobRequest req = Req({"true"}, "2g.10gb");
  req.count = 2;
  req.time_limit_s = 600;
  req.migratable = Migratable::kRestart;
  req.latency_sensitive = true;
  req.name = "train";
  ASSERT_OK_AND_ASSIGN(SubmitResult s, service_->Submit(req, ""));
  StateLock lock(&mu_);
  const Job* job = service_->table()->JobOf(s.record.id);
  ASSERT_NE(job, nullptr);
  EXPECT_EQ(job->profile, "2g.10gb");
  EXPECT_EQ(job->gpu_fraction, 0);
  EXPECT_EQ(job->count, 2);
  EXPECT_EQ(job->time_limit_s, 600);
  EXPECT_EQ(job->migratable, Migratable::kRestart);
  EXPECT_TRUE(job->latency_sensitive);
  EXPECT_EQ(job->name, "train");
  // Changes of the record (state, reason) keep the Job.
  DaemonJobRecord changed = *service_->table()->Current(s.record.id);
  changed.reason = "waiting: for room";
  service_->table()->Update(changed);
  ASSERT_NE(service_->table()->JobOf(s.record.id), nullptr);
  EXPECT_EQ(service_->table()->JobOf(s.record.id)->count, 2);

  DaemonJobRecord a;
  a.id = service_->NextJobId();
  a.kind = JobKind::kAllocation;
  a.state = JobState::kRunning;
  service_->table()->AddStored(a);
  EXPECT_EQ(service_->table()->JobOf(a.id), nullptr);
  EXPECT_EQ(service_->table()->JobOf(a.id + 1), nullptr);  // unknown
}

}  // namespace
}  // namespace migsched
