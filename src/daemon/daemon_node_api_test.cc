// The node API for cluster controllers (docs/api.md "Cluster controllers"):
// node state, reservations, allocations, reclaim by owner, on the fake
// backend. Placements by hand, A100 40GB (docs/mig-hardware.md §2.2):
// 3g.20gb at 0 or 4 (size 4), 7g.40gb at 0 only, 1g.5gb at 0..6.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "daemon/daemon_fixture.h"

namespace migsched {
namespace {

using ::testing::HasSubstr;

ReservationRequest Room(const std::string& owner, std::vector<PlacementRef> at, double ttl = 0) {
  ReservationRequest r;
  r.owner = owner;
  r.placements = std::move(at);
  r.ttl_s = ttl;
  return r;
}

const InstanceView* At(const NodeView& n, int gpu, int start) {
  for (const GpuView& g : n.gpus) {
    if (g.index != NvmlIndex::Of(gpu)) continue;
    for (const InstanceView& i : g.instances) {
      if (i.start == start) return &i;
    }
  }
  return nullptr;
}

TEST_F(DaemonTest, NodeViewHasWhatAControllerNeeds) {
  config_.scheduler.anchored_together = true;  // full's default (the fixture's options are raw)
  auto d = Start("2xA100-40GB");
  ASSERT_NE(d, nullptr);
  const NodeView n0 = d->Node();
  EXPECT_EQ(n0.policy, "full");
  EXPECT_EQ(n0.boot_id.size(), 32u);
  ASSERT_EQ(n0.gpus.size(), 2u);
  EXPECT_EQ(n0.gpus[1].index, NvmlIndex{1});
  EXPECT_EQ(n0.gpus[1].uuid, "GPU-fake-00000000-0000-0000-0000-000000000001");
  EXPECT_EQ(n0.gpus[1].model, "A100 40GB");
  EXPECT_EQ(n0.gpus[1].placement_units, 8);
  EXPECT_OK(n0.store);
  ASSERT_OK(d->Submit(Req("3g.20gb", {"sleep", "5"})));
  ASSERT_OK(d->Settle());
  const NodeView n1 = d->Node();
  EXPECT_GT(n1.generation, n0.generation);  // every visible change moves it
  // §4 on two empty A100s: GPU 0 (tie → lower index), @4 (FragCost 0).
  const InstanceView* in = At(n1, 0, 4);  // (n1 outlives it)
  ASSERT_NE(in, nullptr);
  EXPECT_TRUE(in->busy);
  EXPECT_EQ(in->holder, HolderKind::kJob);
  EXPECT_EQ(in->job, 1);
  EXPECT_FALSE(in->mig_uuid.empty());
  // The job is `migratable: none` (the request's default): with full's anchored-together it
  // anchors GPU 0 (§4 step 2); GPU 1 runs nothing.
  EXPECT_TRUE(n1.gpus[0].anchored);
  EXPECT_FALSE(n1.gpus[1].anchored);
  ASSERT_OK(d->Drain(1));
  EXPECT_TRUE(d->Node().gpus[1].draining);
  ASSERT_OK(d->Cancel(1));
  d.reset();
  auto again = Start();
  ASSERT_NE(again, nullptr);
  const NodeView n2 = again->Node();
  EXPECT_NE(n2.boot_id, n1.boot_id);  // a new start: generations restart
  EXPECT_TRUE(n2.gpus[1].draining);   // an operator's drain survives a restart
}

TEST_F(DaemonTest, ReservationHoldsPlacementsAgainstTheDaemonsOwnJobs) {
  auto d = Start();
  ASSERT_NE(d, nullptr);
  ASSERT_OK_AND_ASSIGN(ReserveResult r,
                       d->Reserve(Room("slurm-room:n1:3g.20gb:0", {{0, "3g.20gb", 4}}, 30)));
  EXPECT_TRUE(r.created);
  ASSERT_EQ(r.reservation.instances.size(), 1u);
  const std::string uuid = r.reservation.instances[0].mig_uuid;
  EXPECT_FALSE(uuid.empty());  // made at once: binding it later cannot fail on the hardware
  EXPECT_EQ(r.reservation.gpu_uuids[0], "GPU-fake-00000000-0000-0000-0000-000000000000");
  // The daemon's own 7g.40gb cannot start while 3g@4 is held; a 3g.20gb goes to @0.
  ASSERT_OK(d->Submit(Req("7g.40gb", {"true"})));
  ASSERT_OK(d->Submit(Req("3g.20gb", {"sleep", "0.3"})));
  ASSERT_OK(d->Settle());
  EXPECT_EQ(Get(*d, 1).state, JobState::kQueued);
  ASSERT_EQ(Get(*d, 2).instances.size(), 1u);
  EXPECT_EQ(Get(*d, 2).instances[0].start, 0);
  const NodeView node = d->Node();
  const InstanceView* held = At(node, 0, 4);
  ASSERT_NE(held, nullptr);
  EXPECT_EQ(held->holder, HolderKind::kReservation);
  EXPECT_EQ(held->owner, "slurm-room:n1:3g.20gb:0");
  EXPECT_EQ(held->mig_uuid, uuid);
  // The same call again renews it (same reservation, later expiry).
  ASSERT_OK_AND_ASSIGN(ReserveResult again,
                       d->Reserve(Room("slurm-room:n1:3g.20gb:0", {{0, "3g.20gb", 4}}, 60)));
  EXPECT_FALSE(again.created);
  EXPECT_GT(again.reservation.record.expires_at, r.reservation.record.expires_at);
  EXPECT_EQ(again.reservation.instances[0].mig_uuid, uuid);
  // Refusals, with the reason.
  StatusOr<ReserveResult> other = d->Reserve(Room("slurm-room:n1:3g.20gb:0", {{0, "3g.20gb", 0}}));
  EXPECT_EQ(other.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(other.status().message(), HasSubstr("holds other placements"));
  StatusOr<ReserveResult> taken = d->Reserve(Room("k8s:pod-1", {{0, "1g.5gb", 5}}));
  EXPECT_EQ(taken.status().message(),
            "GPU 0: 1g.5gb@5 overlaps 3g.20gb@4, held by reservation 'slurm-room:n1:3g.20gb:0'");
  StatusOr<ReserveResult> busy = d->Reserve(Room("k8s:pod-2", {{0, "1g.5gb", 1}}));
  EXPECT_EQ(busy.status().message(), "GPU 0: 1g.5gb@1 overlaps 3g.20gb@0, held by job 2");
  StatusOr<ReserveResult> bad = d->Reserve(Room("k8s:pod-3", {{0, "3g.20gb", 2}}));
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(),
            "placement 0: start 2 is not a placement of 3g.20gb on GPU 0 (starts: 0, 4)");
  StatusOr<ReserveResult> long_ttl = d->Reserve(Room("k8s:pod-4", {{0, "1g.5gb", 1}}, 3600));
  EXPECT_EQ(long_ttl.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(d->ListReservations("slurm-room:").size(), 1u);
  EXPECT_TRUE(d->ListReservations("k8s:").empty());
  // Released: the 7g.40gb can start once job 2 ends and the idle instances go.
  ASSERT_OK(d->ReleaseReservation("slurm-room:n1:3g.20gb:0"));
  EXPECT_EQ(d->ReleaseReservation("slurm-room:n1:3g.20gb:0").code(), StatusCode::kNotFound);
  ASSERT_TRUE(WaitTerminal(*d, 1));
  EXPECT_EQ(Get(*d, 1).state, JobState::kSucceeded);
}

TEST_F(DaemonTest, ReservationsExpireByThemselves) {
  ManualClock clock(1'800'000'000'000'000'000);
  clock_ = &clock;
  auto d = Start();
  ASSERT_NE(d, nullptr);
  ASSERT_OK(d->Reserve(Room("k8s:pod-1", {{0, "7g.40gb", 0}}, 10)));
  ASSERT_OK(d->Settle());
  EXPECT_EQ(d->ListReservations("").size(), 1u);
  clock.Advance(int64_t{11} * 1'000'000'000);
  ASSERT_OK(d->Settle());
  EXPECT_TRUE(d->ListReservations("").empty());
  const NodeView node = d->Node();
  const InstanceView* left = At(node, 0, 0);
  ASSERT_NE(left, nullptr);  // kept idle for reuse, as after a job
  EXPECT_FALSE(left->busy);
}

TEST_F(DaemonTest, ReservationsSurviveARestart) {
  std::string uuid;
  {
    auto d = Start();
    ASSERT_NE(d, nullptr);
    ASSERT_OK_AND_ASSIGN(ReserveResult r, d->Reserve(Room("slurm:9", {{0, "3g.20gb", 4}}, 60)));
    uuid = r.reservation.instances[0].mig_uuid;
  }
  auto d = Start();
  ASSERT_NE(d, nullptr);
  ASSERT_OK_AND_ASSIGN(ReservationView v, d->GetReservation("slurm:9"));
  EXPECT_EQ(v.instances[0].mig_uuid, uuid);  // the same instance, held again
  EXPECT_EQ(At(d->Node(), 0, 4)->holder, HolderKind::kReservation);
}

TEST_F(DaemonTest, AllocationBindsItsReservation) {
  auto d = Start();
  ASSERT_NE(d, nullptr);
  ASSERT_OK_AND_ASSIGN(ReserveResult r, d->Reserve(Room("slurm:12", {{0, "3g.20gb", 4}})));
  ASSERT_OK_AND_ASSIGN(SubmitResult a, d->Allocate(Alloc("slurm:12", {}, "slurm:12"), "p:12:0"));
  EXPECT_FALSE(a.replayed);
  EXPECT_EQ(a.record.kind, JobKind::kAllocation);
  EXPECT_EQ(a.record.state, JobState::kRunning);
  EXPECT_EQ(a.record.owner(), "slurm:12");
  EXPECT_EQ(a.record.bound_reservation, "slurm:12");
  ASSERT_EQ(a.record.instances.size(), 1u);
  EXPECT_EQ(a.record.instances[0].mig_uuid, r.reservation.instances[0].mig_uuid);
  EXPECT_EQ(a.record.instances[0].gpu, NvmlIndex{0});
  EXPECT_EQ(a.record.instances[0].start, 4);
  EXPECT_EQ(a.record.instances[0].size, 4);
  EXPECT_EQ(fake_->creates(), 1);                // the reservation's create only
  EXPECT_TRUE(d->ListReservations("").empty());  // consumed
  const NodeView node = d->Node();
  const InstanceView* in = At(node, 0, 4);
  ASSERT_NE(in, nullptr);
  EXPECT_EQ(in->holder, HolderKind::kAllocation);
  EXPECT_EQ(in->owner, "slurm:12");
  EXPECT_EQ(in->job, a.record.id);
  // Retried with the same key (a lost answer): the same allocation.
  ASSERT_OK_AND_ASSIGN(SubmitResult b, d->Allocate(Alloc("slurm:12", {}, "slurm:12"), "p:12:0"));
  EXPECT_TRUE(b.replayed);
  EXPECT_EQ(b.record.id, a.record.id);
  // In /v1/jobs as a kind of job; never scheduled, never migrated.
  JobQuery q;
  q.kind = JobKind::kAllocation;
  EXPECT_EQ(d->ListJobs(q).jobs.size(), 1u);
  ASSERT_OK_AND_ASSIGN(DaemonJobRecord released, d->ReleaseAllocation(a.record.id));
  EXPECT_EQ(released.state, JobState::kReleased);
  EXPECT_FALSE(At(d->Node(), 0, 4)->busy);  // idle, kept for reuse
  EXPECT_EQ(d->ReleaseAllocation(a.record.id).status().code(), StatusCode::kFailedPrecondition);
}

// Slurm's prolog and kubelet's Allocate do not always know which reservation
// is theirs: "any reservation of profile P under prefix X", oldest first.
TEST_F(DaemonTest, AllocationBindsAnyReservationUnderAPrefix) {
  auto d = Start("2xA100-40GB");
  ASSERT_NE(d, nullptr);
  ASSERT_OK(d->Reserve(Room("room:n1:3g.20gb:0", {{0, "3g.20gb", 4}})));
  ASSERT_OK(d->Reserve(Room("room:n1:3g.20gb:1", {{1, "3g.20gb", 0}})));
  ASSERT_OK(d->Reserve(Room("room:n1:1g.5gb:0", {{1, "1g.5gb", 6}})));
  ASSERT_OK_AND_ASSIGN(SubmitResult a,
                       d->Allocate(Alloc("slurm:1", {{-1, "3g.20gb", -1}}, "", "room:n1:"), ""));
  EXPECT_EQ(a.record.bound_reservation, "room:n1:3g.20gb:0");  // the oldest
  ASSERT_OK_AND_ASSIGN(SubmitResult b,
                       d->Allocate(Alloc("slurm:2", {{-1, "3g.20gb", -1}}, "", "room:n1:"), ""));
  EXPECT_EQ(b.record.bound_reservation, "room:n1:3g.20gb:1");
  EXPECT_EQ(b.record.instances[0].gpu, NvmlIndex{1});
  StatusOr<SubmitResult> none =
      d->Allocate(Alloc("slurm:3", {{-1, "3g.20gb", -1}}, "", "room:n1:"), "");
  EXPECT_EQ(none.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(none.status().message(),
            "no reservation under 'room:n1:' holds 3g.20gb (reservations: room:n1:1g.5gb:0)");
  // By exact placement (kubelet names devices): the reservation holding it is bound.
  ASSERT_OK_AND_ASSIGN(SubmitResult c,
                       d->Allocate(Alloc("k8s:pod", {{1, "1g.5gb", 6}}, "", "room:"), ""));
  EXPECT_EQ(c.record.bound_reservation, "room:n1:1g.5gb:0");
  // Reclaim: list by owner prefix, release by owner.
  ASSERT_OK_AND_ASSIGN(std::vector<DaemonJobRecord> gone, d->ReleaseAllocationsOf("slurm:1"));
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0].id, a.record.id);
  JobQuery q;
  q.kind = JobKind::kAllocation;
  q.owner_prefix = "slurm:";
  q.state = JobState::kRunning;
  JobPage live = d->ListJobs(q);
  ASSERT_EQ(live.jobs.size(), 1u);
  EXPECT_EQ(live.jobs[0].owner(), "slurm:2");
}

// A device plugin knows the profile kubelet asked for, not the pod: it binds
// "the reservation under k8s: with a 3g.20gb" and leaves the owner out; the
// allocation then belongs to the reservation's owner (the pod), so that the
// reclaim by owner finds it. Replayed with its key, it is the same allocation.
TEST_F(DaemonTest, AllocationWithoutOwnerBelongsToTheReservationsOwner) {
  auto d = Start("1xA100-40GB");
  ASSERT_NE(d, nullptr);
  ASSERT_OK(d->Reserve(Room("k8s:pod-1", {{0, "3g.20gb", 4}})));
  ASSERT_OK_AND_ASSIGN(SubmitResult a,
                       d->Allocate(Alloc("", {{-1, "3g.20gb", -1}}, "", "k8s:"), "kubelet-1"));
  EXPECT_EQ(a.record.owner(), "k8s:pod-1");
  EXPECT_EQ(a.record.bound_reservation, "k8s:pod-1");
  ASSERT_OK_AND_ASSIGN(SubmitResult again,
                       d->Allocate(Alloc("", {{-1, "3g.20gb", -1}}, "", "k8s:"), "kubelet-1"));
  EXPECT_TRUE(again.replayed);
  EXPECT_EQ(again.record.id, a.record.id);
  ASSERT_OK_AND_ASSIGN(std::vector<DaemonJobRecord> gone, d->ReleaseAllocationsOf("k8s:pod-1"));
  ASSERT_EQ(gone.size(), 1u);
  // Without a reservation to bind, the owner is required.
  StatusOr<SubmitResult> bare = d->Allocate(Alloc("", {{-1, "1g.5gb", -1}}), "");
  EXPECT_EQ(bare.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(bare.status().message(), HasSubstr("field 'owner' is required"));
}

TEST_F(DaemonTest, AllocationWithoutReservation) {
  auto d = Start();
  ASSERT_NE(d, nullptr);
  // By profile: the daemon's policy chooses now (§4: 3g.20gb@4 on an empty A100).
  ASSERT_OK_AND_ASSIGN(SubmitResult a, d->Allocate(Alloc("k8s:a", {{-1, "3g.20gb", -1}}), ""));
  EXPECT_EQ(a.record.instances[0].start, 4);
  // By exact placement, of another profile.
  ASSERT_OK_AND_ASSIGN(SubmitResult b, d->Allocate(Alloc("k8s:b", {{0, "1g.5gb", 1}}), ""));
  EXPECT_EQ(b.record.instances[0].start, 1);
  // A reserved placement is not taken without naming its reservation.
  ASSERT_OK(d->Reserve(Room("k8s:c", {{0, "1g.5gb", 2}})));
  StatusOr<SubmitResult> held = d->Allocate(Alloc("k8s:d", {{0, "1g.5gb", 2}}), "");
  EXPECT_EQ(held.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(held.status().message(), HasSubstr("held by reservation 'k8s:c'"));
  // No room now: refused (allocations do not queue).
  StatusOr<SubmitResult> full = d->Allocate(Alloc("k8s:e", {{-1, "3g.20gb", -1}}), "");
  EXPECT_EQ(full.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(full.status().message(), HasSubstr("no room for 3g.20gb now"));
  // Bad input.
  EXPECT_EQ(d->Allocate(Alloc("", {{-1, "3g.20gb", -1}}), "").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(d->Allocate(Alloc("k8s:f", {{-1, "9g.99gb", -1}}), "").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(d->Allocate(Alloc("k8s:g", {}, "no-such"), "").status().code(), StatusCode::kNotFound);
}

// A failed create is a failed bind: the allocation is stored as failed with
// the reason, nothing stays held, the GPU is not stuck.
TEST_F(DaemonTest, FailedCreateIsAFailedBind) {
  FakeFaults faults;
  faults.fail_create = 1;
  auto d = Start("1xA100-40GB", faults);
  ASSERT_NE(d, nullptr);
  StatusOr<SubmitResult> a = d->Allocate(Alloc("slurm:5", {{0, "7g.40gb", 0}}), "");
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(a.status().message(), HasSubstr("injected failure"));
  ASSERT_OK(d->Settle());
  JobQuery q;
  q.kind = JobKind::kAllocation;
  JobPage all = d->ListJobs(q);
  ASSERT_EQ(all.jobs.size(), 1u);
  EXPECT_EQ(all.jobs[0].state, JobState::kFailed);
  EXPECT_THAT(all.jobs[0].reason, HasSubstr("bind failed: create 7g.40gb@0 on GPU 0"));
  EXPECT_TRUE(d->Gpus()[0].instances.empty());
  // The next one gets the placement.
  ASSERT_OK_AND_ASSIGN(SubmitResult b, d->Allocate(Alloc("slurm:5", {{0, "7g.40gb", 0}}), ""));
  EXPECT_EQ(b.record.state, JobState::kRunning);
  // A reservation whose create fails is refused, nothing held.
  ASSERT_OK(d->ReleaseAllocation(b.record.id));
  ASSERT_OK(d->Settle());
}

TEST_F(DaemonTest, AllocationsSurviveARestartAndBesideJobs) {
  config_.on_shutdown = "leave";
  std::string uuid;
  {
    auto d = Start();
    ASSERT_NE(d, nullptr);
    ASSERT_OK_AND_ASSIGN(SubmitResult a, d->Allocate(Alloc("slurm:77", {{0, "3g.20gb", 0}}), ""));
    uuid = a.record.instances[0].mig_uuid;
    ASSERT_OK(d->Submit(Req("3g.20gb", {"sleep", "0.2"})));  // the daemon's own job, beside it
    ASSERT_OK(d->Settle());
    EXPECT_EQ(Get(*d, 2).instances[0].start, 4);
  }
  auto d = Start();
  ASSERT_NE(d, nullptr);
  JobQuery q;
  q.kind = JobKind::kAllocation;
  q.owner_prefix = "slurm:";
  JobPage p = d->ListJobs(q);
  ASSERT_EQ(p.jobs.size(), 1u);
  EXPECT_EQ(p.jobs[0].state, JobState::kRunning);
  EXPECT_EQ(p.jobs[0].instances[0].mig_uuid, uuid);
  EXPECT_EQ(At(d->Node(), 0, 0)->holder, HolderKind::kAllocation);
  ASSERT_TRUE(WaitTerminal(*d, 2));
  EXPECT_EQ(Get(*d, 2).state, JobState::kSucceeded);
  // Cancel (DELETE /v1/jobs/{id}) on an allocation releases it.
  ASSERT_OK_AND_ASSIGN(DaemonJobRecord r, d->Cancel(p.jobs[0].id));
  EXPECT_EQ(r.state, JobState::kReleased);
}

// §4 step 2: what an engine said of its jobs (`anchors`: they never leave their GPU) is in the
// store, so a controller that reads the node after the daemon restarted still sees those GPUs
// anchored: the reservation's (GPU 1) and the allocation's (GPU 0), and the allocation that binds
// the reservation after the restart anchors too. A movable allocation beside them (GPU 0 at 4)
// does not.
TEST_F(DaemonTest, AnchoringSurvivesARestart) {
  config_.on_shutdown = "leave";
  {
    auto d = Start("2xA100-40GB");
    ASSERT_NE(d, nullptr);
    ReservationRequest room = Room("k8s:ns/svc", {{1, "3g.20gb", 4}}, 600);
    room.anchors = true;
    ASSERT_OK(d->Reserve(room));
    AllocationRequest fixed = Alloc("slurm:5", {{0, "3g.20gb", 0}});
    fixed.anchors = true;
    ASSERT_OK(d->Allocate(fixed, ""));
    ASSERT_OK(d->Allocate(Alloc("slurm:6", {{0, "3g.20gb", 4}}), ""));
  }
  auto d = Start("2xA100-40GB");
  ASSERT_NE(d, nullptr);
  NodeView node = d->Node();
  ASSERT_NE(At(node, 0, 0), nullptr);
  ASSERT_NE(At(node, 0, 4), nullptr);
  ASSERT_NE(At(node, 1, 4), nullptr);
  EXPECT_TRUE(At(node, 0, 0)->anchors);
  EXPECT_FALSE(At(node, 0, 4)->anchors);
  EXPECT_TRUE(At(node, 1, 4)->anchors);
  EXPECT_TRUE(node.gpus[0].anchored);
  EXPECT_TRUE(node.gpus[1].anchored);
  ASSERT_OK_AND_ASSIGN(ReservationView held, d->GetReservation("k8s:ns/svc"));
  EXPECT_TRUE(held.record.anchors);
  ASSERT_OK_AND_ASSIGN(SubmitResult bound, d->Allocate(Alloc("", {}, "k8s:ns/svc"), ""));
  EXPECT_TRUE(bound.record.allocation.anchors);
  EXPECT_EQ(At(d->Node(), 1, 4)->holder, HolderKind::kAllocation);
  EXPECT_TRUE(At(d->Node(), 1, 4)->anchors);
}

// The part of an anchoring reservation a bind leaves (a gang's room bound one instance at a time)
// still anchors, and after a restart too (the placements left are stored again, each saying so).
TEST_F(DaemonTest, WhatABindLeavesOfAnAnchoringRoomStillAnchors) {
  config_.on_shutdown = "leave";
  {
    auto d = Start();
    ASSERT_NE(d, nullptr);
    ReservationRequest room = Room("k8s:ns/gang", {{0, "1g.5gb", 0}, {0, "1g.5gb", 1}}, 600);
    room.anchors = true;
    ASSERT_OK(d->Reserve(room));
    ASSERT_OK_AND_ASSIGN(
        SubmitResult one,
        d->Allocate(Alloc("", {RequestedInstance::At({0, "1g.5gb", 0})}, "k8s:ns/gang"), ""));
    EXPECT_TRUE(one.record.allocation.anchors);
    ASSERT_OK_AND_ASSIGN(ReservationView left, d->GetReservation("k8s:ns/gang"));
    ASSERT_EQ(left.record.placements.size(), 1u);
    EXPECT_TRUE(left.record.anchors);
  }
  auto d = Start();
  ASSERT_NE(d, nullptr);
  ASSERT_OK_AND_ASSIGN(ReservationView left, d->GetReservation("k8s:ns/gang"));
  EXPECT_TRUE(left.record.anchors);
  ASSERT_NE(At(d->Node(), 0, 1), nullptr);
  EXPECT_TRUE(At(d->Node(), 0, 1)->anchors);
  EXPECT_TRUE(At(d->Node(), 0, 0)->anchors);  // the allocation bound from it
}

// §4 step 2, the daemon's own placements: its anchored GPUs are those every controller's view
// has (a holder its owner says cannot leave), not every GPU with an allocation (which the daemon
// cannot move, but its engine can). A trial found a daemon job that cannot leave placed beside a
// plain allocation on GPU 0 while GPU 1 held an anchoring one. By hand, 2x A100 40GB with
// anchored-together on: GPU 0 holds a plain 1g.5gb allocation at 0, GPU 1 an anchoring one at 0;
// the job (1g.5gb, migratable none: it anchors) is placed among the anchored GPUs first, so on
// GPU 1; the same after a restart (the allocations adopted again).
TEST_F(DaemonTest, DaemonJobsThatCannotLeaveGoBesideAnchoringAllocationsOnly) {
  config_.scheduler.anchored_together = true;  // full's default (the fixture's options are raw)
  config_.on_shutdown = "leave";
  for (const bool restart : {false, true}) {
    SCOPED_TRACE(restart ? "after a restart" : "first start");
    auto d = Start("2xA100-40GB");
    ASSERT_NE(d, nullptr);
    if (!restart) {
      ASSERT_OK(d->Allocate(Alloc("slurm:1", {{0, "1g.5gb", 0}}), ""));
      AllocationRequest fixed = Alloc("k8s:svc", {{1, "1g.5gb", 0}});
      fixed.anchors = true;
      ASSERT_OK(d->Allocate(fixed, ""));
    }
    ASSERT_OK_AND_ASSIGN(DaemonJobRecord job, d->Submit(Req("1g.5gb", {"sleep", "0.1"})));
    ASSERT_OK(d->Settle());
    const DaemonJobRecord r = Get(*d, job.id);
    ASSERT_EQ(r.instances.size(), 1u);
    EXPECT_EQ(r.instances[0].gpu, NvmlIndex{1});
    ASSERT_TRUE(WaitTerminal(*d, job.id));
  }
}

// An allocation given by profile alone is placed by the daemon as its `anchors` says (§4 step 2):
// one that anchors goes beside the anchoring holders first, one its engine may move does not. By
// hand, 2x A100 40GB, anchored-together and reuse first on: GPU 0 holds an anchoring 1g.5gb
// allocation at 0, GPU 1 an idle 1g.5gb at 0 (an allocation released there). Without `anchors`,
// reuse first takes GPU 1's idle instance; then with it, the anchored GPU 0 has room: there.
// (Found in review: every allocation was placed as one that cannot leave.)
TEST_F(DaemonTest, AnAllocationByProfileIsPlacedAsItsAnchorsSays) {
  config_.scheduler.anchored_together = true;
  config_.scheduler.reuse_first = true;
  auto d = Start("2xA100-40GB");
  ASSERT_NE(d, nullptr);
  AllocationRequest fixed = Alloc("k8s:svc", {{0, "1g.5gb", 0}});
  fixed.anchors = true;
  ASSERT_OK(d->Allocate(fixed, ""));
  ASSERT_OK_AND_ASSIGN(SubmitResult gone, d->Allocate(Alloc("slurm:1", {{1, "1g.5gb", 0}}), ""));
  ASSERT_OK(d->ReleaseAllocation(gone.record.id));
  ASSERT_OK(d->Settle());
  ASSERT_FALSE(At(d->Node(), 1, 0)->busy);  // idle, kept for reuse
  // Its engine may move it: reuse first takes GPU 1's idle instance.
  ASSERT_OK_AND_ASSIGN(SubmitResult movable,
                       d->Allocate(Alloc("slurm:2", {RequestedInstance::Anywhere("1g.5gb")}), ""));
  ASSERT_EQ(movable.record.instances.size(), 1u);
  EXPECT_EQ(movable.record.instances[0].gpu, NvmlIndex{1});
  EXPECT_FALSE(movable.record.allocation.anchors);
  // It anchors: beside the anchoring allocation on GPU 0 (GPU 1 holds only a movable one now).
  AllocationRequest stays = Alloc("slurm:3", {RequestedInstance::Anywhere("1g.5gb")});
  stays.anchors = true;
  ASSERT_OK_AND_ASSIGN(SubmitResult fixed_too, d->Allocate(stays, ""));
  ASSERT_EQ(fixed_too.record.instances.size(), 1u);
  EXPECT_EQ(fixed_too.record.instances[0].gpu, NvmlIndex{0});
  EXPECT_TRUE(d->Node().gpus[0].anchored);
  EXPECT_FALSE(d->Node().gpus[1].anchored);
}

// An allocation whose client said `anchors` is another request than one that did not: a replay
// with another value is refused (409), as for any other field. Only an allocation that bound a
// reservation may have `anchors` from it, and a replay that leaves it out is the same one
// (NodeServiceTest.AnAllocationBoundFromAnAnchoringReservationAnchors).
TEST_F(DaemonTest, AReplayWithOtherAnchorsIsAnotherRequest) {
  auto d = Start();
  ASSERT_NE(d, nullptr);
  AllocationRequest fixed = Alloc("k8s:a", {{0, "1g.5gb", 0}});
  fixed.anchors = true;
  ASSERT_OK(d->Allocate(fixed, "key-a"));
  AllocationRequest plain = fixed;
  plain.anchors = false;
  EXPECT_EQ(d->Allocate(plain, "key-a").status().code(), StatusCode::kFailedPrecondition);
  ASSERT_OK(d->Allocate(Alloc("k8s:b", {{0, "1g.5gb", 1}}), "key-b"));
  AllocationRequest b_anchors = Alloc("k8s:b", {{0, "1g.5gb", 1}});
  b_anchors.anchors = true;
  EXPECT_EQ(d->Allocate(b_anchors, "key-b").status().code(), StatusCode::kFailedPrecondition);
  ASSERT_OK_AND_ASSIGN(SubmitResult again, d->Allocate(fixed, "key-a"));
  EXPECT_TRUE(again.replayed);
}

}  // namespace
}  // namespace migsched
