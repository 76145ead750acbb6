#include "nodeapi/node_view.h"

#include <gtest/gtest.h>

namespace migsched {
namespace {

InstanceView Busy(HolderKind holder, int64_t job, const std::string& owner) {
  InstanceView in;
  in.busy = true;
  in.holder = holder;
  in.job = job;
  in.owner = owner;
  return in;
}

// The holder's key is what the controllers key an occupant by: a daemon job by
// its id, an allocation or a reservation by its owner key, an idle instance by
// nothing, even when a stale holder or owner rides along.
TEST(NodeViewTest, HolderAndKeyOfEachKind) {
  InstanceView idle;
  idle.holder = HolderKind::kJob;  // not busy: idle, whatever else it says
  idle.job = 5;
  EXPECT_EQ(HolderOf(idle), HolderKind::kIdle);
  EXPECT_EQ(HolderKey(idle), "");
  EXPECT_EQ(HolderKey(Busy(HolderKind::kJob, 12, "")), "12");
  EXPECT_EQ(HolderKey(Busy(HolderKind::kAllocation, 7, "slurm:3")), "slurm:3");
  EXPECT_EQ(HolderKey(Busy(HolderKind::kReservation, 0, "k8s:pod")), "k8s:pod");
  EXPECT_EQ(HolderOf(Busy(HolderKind::kPlaceholder, 0, "")), HolderKind::kPlaceholder);
}

TEST(NodeViewTest, AGpuTakesPlacementsUnlessDrainingOrUnreachable) {
  GpuView g;
  EXPECT_TRUE(TakesPlacements(g));
  g.draining = true;
  EXPECT_FALSE(TakesPlacements(g));
  g.draining = false;
  g.unreachable = "NVML: GPU is lost";
  EXPECT_FALSE(TakesPlacements(g));
}

// Two GPUs: allocation 7 holds an instance on each, allocation 9 one on GPU 1;
// a job, a reservation and an idle instance are no allocations. By hand: 7
// (first seen on GPU 0), then 9, each once.
TEST(NodeViewTest, EachAllocationOnceInTheOrderOfItsFirstInstance) {
  NodeView v;
  v.gpus.resize(2);
  v.gpus[0].instances = {Busy(HolderKind::kJob, 3, ""),
                         Busy(HolderKind::kAllocation, 7, "slurm:1")};
  v.gpus[1].instances = {Busy(HolderKind::kAllocation, 9, "k8s:a"), InstanceView{},
                         Busy(HolderKind::kReservation, 0, "slurm-room:x"),
                         Busy(HolderKind::kAllocation, 7, "slurm:1")};
  EXPECT_EQ(AllocationsOn(v), (std::vector<AllocationOnNode>{{7, "slurm:1"}, {9, "k8s:a"}}));
  EXPECT_TRUE(AllocationsOn(NodeView{}).empty());
}

}  // namespace
}  // namespace migsched
