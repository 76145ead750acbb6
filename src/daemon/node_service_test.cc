// NodeService alone, with a stub NodeServiceHost in place of the daemon: the
// parts it uses (NodeModel, InstanceSync on a fake backend, JobTable) are the
// real ones; what only the daemon does (store writes, ids, whether changes
// are accepted) is the stub's, so that each outcome can be forced. A100 40GB
// by hand (docs/mig-hardware.md §2.2): 3g.20gb at 0 or 4, 1g.5gb at 0..6.
#include "daemon/node_service.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "daemon/discovery.h"
#include "daemon/fake_backend.h"
#include "daemon/fake_node_test_base.h"
#include "testing/status_matchers.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::testing::HasSubstr;

// The daemon's side (the writer would answer later, on its thread; the
// service must not care), with the ids and job ends NodeServiceHost adds.
class StubHost : public StubServiceHost<NodeServiceHost> {
 public:
  DaemonJobId NextJobId() override { return next_id++; }
  void FinishJob(DaemonJobRecord& r, JobState state, std::optional<int> exit_code,
                 std::string reason) override {
    (void)exit_code;
    r.state = state;
    r.reason = std::move(reason);
    ++finished;
  }
  void ReleaseInstances(DaemonJobId id) override { released.push_back(id); }

  int finished = 0;
  std::vector<DaemonJobId> released;
  DaemonJobId next_id = 1;
};

class NodeServiceTest : public FakeNodeTestBase {
 protected:
  void SetUp() override {
    StartNode("full");
    if (HasFatalFailure()) return;
    service_ = std::make_unique<NodeService>(model_.get(), sync_.get(), &jobs_, &keys_, &config_,
                                             SteadyClock(), &mu_, &host_);
  }

  static ReservationRequest Room(const std::string& owner, int start) {
    ReservationRequest r;
    r.owner = owner;
    r.placements = {{0, "3g.20gb", start}};
    return r;
  }

  StubHost host_;
  JobTable jobs_;
  IdempotencyKeys keys_;
  std::unique_ptr<NodeService> service_;
};

// A refusal of the daemon (stopping, degraded store) is the caller's answer,
// and nothing is held or made.
TEST_F(NodeServiceTest, RefusedChangesHoldNothing) {
  host_.accepting = UnavailableError("the daemon is shutting down");
  StatusOr<ReserveResult> r = service_->Reserve(Room("slurm:1", 4));
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(r.status().message(), "the daemon is shutting down");
  EXPECT_EQ(service_->reservation_count(), 0u);
  EXPECT_EQ(backend_->creates(), 0);
  EXPECT_EQ(host_.writes, 0u);
}

// A reservation is shown only once its instance exists and its record is
// stored; one whose record cannot be stored is let go, and its placement is
// free for the next caller.
TEST_F(NodeServiceTest, ReservationWhoseRecordCannotBeStoredIsLetGo) {
  host_.store = UnavailableError("disk full");
  StatusOr<ReserveResult> r = service_->Reserve(Room("slurm:1", 4));
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(r.status().message(), HasSubstr("disk full"));
  EXPECT_EQ(service_->reservation_count(), 0u);
  EXPECT_EQ(service_->GetReservation("slurm:1").status().code(), StatusCode::kNotFound);
  host_.store = Status();
  ASSERT_OK_AND_ASSIGN(ReserveResult again, service_->Reserve(Room("slurm:2", 4)));
  EXPECT_TRUE(again.created);
  EXPECT_EQ(again.reservation.instances[0].start, 4);
  EXPECT_FALSE(again.reservation.instances[0].mig_uuid.empty());  // made on the hardware
}

// An allocation takes its id from the host and is a record of the shared job
// table, visible once stored; its release ends it through the host.
TEST_F(NodeServiceTest, AllocationIsARecordOfTheJobTable) {
  host_.next_id = 41;  // the daemon's jobs took 1..40
  ASSERT_OK(service_->Reserve(Room("k8s:pod-a", 0)));
  AllocationRequest a;
  a.reservation = "k8s:pod-a";
  ASSERT_OK_AND_ASSIGN(SubmitResult got, service_->Allocate(a, "key-1"));
  EXPECT_EQ(got.record.id, 41);
  EXPECT_EQ(got.record.kind, JobKind::kAllocation);
  EXPECT_EQ(got.record.owner(), "k8s:pod-a");
  {
    StateLock lock(&mu_);
    ASSERT_NE(jobs_.Visible(41), nullptr);
    EXPECT_EQ(jobs_.ByKey("key-1"), 41);
  }
  ASSERT_OK_AND_ASSIGN(SubmitResult replay, service_->Allocate(a, "key-1"));
  EXPECT_TRUE(replay.replayed);
  EXPECT_EQ(host_.next_id, 42);  // no second id
  ASSERT_OK(service_->ReleaseAllocation(41));
  EXPECT_EQ(host_.finished, 1);
}

// §4 step 2: a reservation made for a job that can never leave its GPU (`anchors`, what an
// engine knows of its job) shows its instance anchoring; the allocation that binds it anchors too
// without saying so again (a device plugin knows only the profile), a replay of that request is
// the same allocation, and the GPU stays anchored. A reservation made without it anchors nothing.
// By hand: 3g.20gb at 0 (the service) and at 4 (a batch job) on GPU 0.
TEST_F(NodeServiceTest, AnAllocationBoundFromAnAnchoringReservationAnchors) {
  ReservationRequest svc = Room("k8s:ns/svc", 0);
  svc.anchors = true;
  ASSERT_OK(service_->Reserve(svc));
  ASSERT_OK(service_->Reserve(Room("k8s:ns/batch", 4)));
  auto instance_at = [&](int start) {
    const std::vector<GpuView> gpus = service_->Gpus();
    for (const InstanceView& in : gpus[0].instances) {
      if (in.start == start) return in;
    }
    ADD_FAILURE() << "no instance at " << start;
    return InstanceView();
  };
  EXPECT_TRUE(service_->Gpus()[0].anchored);
  EXPECT_TRUE(instance_at(0).anchors);
  EXPECT_FALSE(instance_at(4).anchors);
  ASSERT_OK_AND_ASSIGN(ReservationView held, service_->GetReservation("k8s:ns/svc"));
  EXPECT_TRUE(held.record.anchors);

  AllocationRequest bind;
  bind.reservation = "k8s:ns/svc";
  ASSERT_OK_AND_ASSIGN(SubmitResult got, service_->Allocate(bind, "svc-1"));
  EXPECT_TRUE(got.record.allocation.anchors);
  EXPECT_EQ(instance_at(0).holder, HolderKind::kAllocation);
  EXPECT_TRUE(instance_at(0).anchors);
  ASSERT_OK_AND_ASSIGN(SubmitResult replay, service_->Allocate(bind, "svc-1"));
  EXPECT_TRUE(replay.replayed);
  AllocationRequest batch;
  batch.reservation = "k8s:ns/batch";
  ASSERT_OK_AND_ASSIGN(SubmitResult other, service_->Allocate(batch, "batch-1"));
  EXPECT_FALSE(other.record.allocation.anchors);
  EXPECT_FALSE(instance_at(4).anchors);
  EXPECT_TRUE(service_->Gpus()[0].anchored);
}

// A renewal (the same owner, the same placements) sets `anchors` anew, as api.md says: left out,
// it is false (the view changes with it).
TEST_F(NodeServiceTest, ARenewalSetsAnchorsAnew) {
  ReservationRequest svc = Room("k8s:ns/svc", 0);
  svc.anchors = true;
  ASSERT_OK_AND_ASSIGN(ReserveResult made, service_->Reserve(svc));
  EXPECT_TRUE(made.created);
  EXPECT_TRUE(made.reservation.record.anchors);
  ASSERT_OK_AND_ASSIGN(ReserveResult renewed, service_->Reserve(Room("k8s:ns/svc", 0)));
  EXPECT_FALSE(renewed.created);
  EXPECT_FALSE(renewed.reservation.record.anchors);
  EXPECT_FALSE(service_->Gpus()[0].anchored);
  ASSERT_OK_AND_ASSIGN(ReserveResult again, service_->Reserve(svc));
  EXPECT_TRUE(again.reservation.record.anchors);
  EXPECT_TRUE(service_->Gpus()[0].anchored);
}

}  // namespace
}  // namespace migsched
