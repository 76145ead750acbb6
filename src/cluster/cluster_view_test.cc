#include "cluster/cluster_view.h"

#include <gtest/gtest.h>

#include "cluster/testing/nodes.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using migsched::testing::AddInstance;
using migsched::testing::AddReservation;
using migsched::testing::BundledCatalog;
using migsched::testing::MakeGpu;
using migsched::testing::MakeNode;

std::string Describe(const Cluster& c, int gpu) { return c.gpu(gpu).DebugString(); }

TEST(ClusterViewTest, NumbersGpusNodeByNodeAndKeepsHolders) {
  ConfigTableCache tables;
  NodeView n1 = MakeNode("n1", 2, "A100 40GB",
                         {"0:3g.20gb@4=alloc:slurm:7", "1:1g.5gb@0=idle", "1:1g.5gb@1=job:12"});
  NodeView n2 = MakeNode("n2", 1, "A100-40GB", {"0:7g.40gb@0=placeholder"});
  auto v = ClusterView::Build({{"n1", n1, ""}, {"n2", n2, ""}}, BundledCatalog(), &tables);
  ASSERT_EQ(v->cluster().size(), 3);
  EXPECT_EQ(v->NodeOf(0), 0);
  EXPECT_EQ(v->NodeOf(2), 1);
  EXPECT_EQ(v->nodes()[1].first_gpu, 2);
  EXPECT_TRUE(v->nodes()[0].usable);
  // GPU 0: the allocation is a busy instance whose occupant names its owner.
  const GpuState& g0 = v->cluster().gpu(0);
  ASSERT_EQ(g0.instances().size(), 1u) << Describe(v->cluster(), 0);
  EXPECT_TRUE(g0.instances()[0].busy());
  const ClusterView::Occupant* o = v->OccupantOf(g0.instances()[0].job);
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->kind, HolderKind::kAllocation);
  EXPECT_EQ(o->owner, "slurm:7");
  EXPECT_EQ(o->node, 0);
  EXPECT_EQ(v->AllocationsOf("slurm:7"), std::vector<JobId>{g0.instances()[0].job});
  // GPU 1: one idle (free), one busy with a daemon job.
  const GpuState& g1 = v->cluster().gpu(1);
  ASSERT_EQ(g1.instances().size(), 2u);
  EXPECT_FALSE(g1.instances()[0].busy());
  EXPECT_TRUE(g1.instances()[1].busy());
  EXPECT_EQ(v->OccupantOf(g1.instances()[1].job)->kind, HolderKind::kJob);
  // GPU 2 (n2's GPU 0): the placeholder occupies the whole GPU.
  EXPECT_EQ(v->cluster().gpu(2).busy_compute_slices(), 7);
  EXPECT_EQ(v->ToRef(2, v->cluster().gpu(2).model().FindProfile("7g.40gb"), 0),
            (PlacementRef{0, "7g.40gb", 0}));
  EXPECT_EQ(v->FindNode("n2"), 1);
  EXPECT_EQ(v->FindNode("n9"), -1);
}

// The controllers' two GPU numbers meet in the view alone (GlobalGpu, NvmlIndexOf, ToRef,
// FromRef). n2's daemon manages NVML GPUs 2 and 5 only (a daemon given some of a node's GPUs),
// behind n1's one GPU: its GPUs are global 1 and 2, and what the node API and users' messages
// name is 2 and 5, never the local positions 0 and 1 (the Kubernetes engine's internal-error log
// named the local position before NvmlIndexOf).
TEST(ClusterViewTest, NvmlIndexesOfANodeThatManagesSomeOfItsGpus) {
  ConfigTableCache tables;
  NodeView n1 = MakeNode("n1", 1, "A100 40GB", {});
  NodeView n2 = MakeNode("n2", 0, "A100 40GB", {});
  n2.gpus.push_back(MakeGpu("n2", 2, "A100 40GB"));
  n2.gpus.push_back(MakeGpu("n2", 5, "A100 40GB"));
  AddInstance(&n2, "5:7g.40gb@0=job:3");
  auto v = ClusterView::Build({{"n1", n1, ""}, {"n2", n2, ""}}, BundledCatalog(), &tables);
  ASSERT_TRUE(v->nodes()[1].usable) << v->nodes()[1].error;
  ASSERT_EQ(v->cluster().size(), 3);
  EXPECT_EQ(v->NvmlIndexOf(0), NvmlIndex{0});
  EXPECT_EQ(v->NvmlIndexOf(1), NvmlIndex{2});
  EXPECT_EQ(v->NvmlIndexOf(2), NvmlIndex{5});
  EXPECT_EQ(v->GlobalGpu(1, 2), 1);
  EXPECT_EQ(v->GlobalGpu(1, 5), 2);
  EXPECT_EQ(v->GlobalGpu(1, 0), -1);  // n2 has no NVML GPU 0
  EXPECT_EQ(v->GlobalGpu(0, 0), 0);
  // The job on NVML GPU 5 holds global GPU 2 whole; global GPU 1 is empty.
  EXPECT_EQ(v->cluster().gpu(2).busy_compute_slices(), 7);
  EXPECT_EQ(v->cluster().gpu(1).busy_compute_slices(), 0);
  const int p7 = v->cluster().gpu(1).model().FindProfile("7g.40gb");
  EXPECT_EQ(v->ToRef(1, p7, 0), (PlacementRef{2, "7g.40gb", 0}));
  EXPECT_EQ(v->FromRef(1, {5, "7g.40gb", 0}), std::make_optional(std::make_pair(2, p7)));
  EXPECT_EQ(v->FromRef(1, {0, "7g.40gb", 0}), std::nullopt);
}

// A reservation is a busy instance of its profile; an idle instance under it
// is left out (its space is taken), whether exactly there or overlapping.
TEST(ClusterViewTest, ReservationsOccupyTheirPlacement) {
  ConfigTableCache tables;
  NodeView n1 = MakeNode("n1", 1, "A100 40GB", {"0:3g.20gb@4=idle", "0:1g.5gb@0=idle"});
  AddReservation(&n1, "slurm-room:0:4g.20gb:0", 0, "4g.20gb", 0);
  auto v = ClusterView::Build({{"n1", n1, ""}}, BundledCatalog(), &tables);
  ASSERT_TRUE(v->nodes()[0].usable) << v->nodes()[0].error;
  const GpuState& g = v->cluster().gpu(0);
  // 4g.20gb@0 busy (reserved), the 1g.5gb@0 under it dropped, 3g.20gb@4 idle.
  ASSERT_EQ(g.instances().size(), 2u) << g.DebugString();
  EXPECT_EQ(g.model().profile(g.instances()[0].profile).name, "4g.20gb");
  EXPECT_TRUE(g.instances()[0].busy());
  const ClusterView::Occupant* o = v->OccupantOf(g.instances()[0].job);
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->kind, HolderKind::kReservation);
  EXPECT_EQ(o->owner, "slurm-room:0:4g.20gb:0");
  EXPECT_FALSE(g.instances()[1].busy());
}

// Regression (one_daemon_for_two_nodes): two configured nodes whose urls reach one daemon (one
// boot id) both counted its GPUs; a pod bound to one was reserved on the other's GPUs and its
// kubelet found nothing. Neither is usable now, each saying which other node shares its daemon;
// a third node with a daemon of its own is.
TEST(ClusterViewTest, NodesThatReachOneDaemonAreNotUsable) {
  ConfigTableCache tables;
  NodeView one = MakeNode("gpu-node-2", 1, "A100 40GB", {});
  one.boot_id = "b1";
  NodeView own = MakeNode("gpu-node-1", 1, "A100 40GB", {});
  own.boot_id = "b2";
  auto v = ClusterView::Build(
      {{"gpu-node-1", own, ""}, {"gpu-node-2", one, ""}, {"gpu-node-3", one, ""}}, BundledCatalog(),
      &tables);
  EXPECT_EQ(v->cluster().size(), 1);
  EXPECT_TRUE(v->nodes()[0].usable);
  EXPECT_FALSE(v->nodes()[1].usable);
  EXPECT_FALSE(v->nodes()[2].usable);
  EXPECT_EQ(v->nodes()[1].error,
            "its node daemon (node_name 'gpu-node-2') is also the one of gpu-node-3: each node "
            "needs a daemon of its own (check the urls)");
  EXPECT_EQ(v->nodes()[2].error,
            "its node daemon (node_name 'gpu-node-2') is also the one of gpu-node-2: each node "
            "needs a daemon of its own (check the urls)");
}

TEST(ClusterViewTest, UnreachableAndInconsistentNodesContributeNoGpus) {
  ConfigTableCache tables;
  NodeView bad_model = MakeNode("n2", 1, "A200 1TB", {});
  NodeView overlap = MakeNode("n3", 1, "A100 40GB", {"0:4g.20gb@0=job:1", "0:1g.5gb@2=job:2"});
  NodeView bad_profile = MakeNode("n4", 1, "A100 40GB", {"0:9g.9gb@0=idle"});
  NodeView bad_start = MakeNode("n5", 1, "A100 40GB", {"0:3g.20gb@2=idle"});
  NodeView good = MakeNode("n6", 1, "A100 40GB", {});
  good.gpus[0].draining = true;
  EXPECT_FALSE(good.gpus[0].anchored);
  auto v = ClusterView::Build({{"n1", std::nullopt, "connection refused"},
                               {"n2", bad_model, ""},
                               {"n3", overlap, ""},
                               {"n4", bad_profile, ""},
                               {"n5", bad_start, ""},
                               {"n6", good, ""}},
                              BundledCatalog(), &tables);
  EXPECT_EQ(v->cluster().size(), 1);
  EXPECT_EQ(v->nodes()[0].error, "connection refused");
  EXPECT_NE(v->nodes()[1].error.find("A200 1TB"), std::string::npos) << v->nodes()[1].error;
  EXPECT_NE(v->nodes()[2].error.find("inconsistent state"), std::string::npos)
      << v->nodes()[2].error;
  EXPECT_NE(v->nodes()[3].error.find("unknown profile '9g.9gb'"), std::string::npos);
  EXPECT_NE(v->nodes()[4].error.find("3g.20gb cannot start at 2"), std::string::npos);
  EXPECT_TRUE(v->nodes()[5].usable);
  EXPECT_EQ(v->nodes()[5].first_gpu, 0);
  // The drained GPU offers no placement: it is reserved in the cluster.
  EXPECT_TRUE(v->drained(0));
  EXPECT_TRUE(v->cluster().reserved(0));
  EXPECT_TRUE(v->cluster().drained(0));  // kept when a scan's end opens every reserved GPU
}

}  // namespace
// §4 step 2: the holders a daemon says can never leave (InstanceView::anchors, a reservation made
// with `anchors`) are the view's anchored jobs, whatever their kind; the GPU-level flag is only
// what the daemon shows, never read. GPU 0: a daemon job that anchors beside an allocation that
// does not (the GPU is anchored, the allocation not registered); GPU 1: nothing anchors though
// the GPU says anchored; GPU 2: a reservation made with `anchors` (a pod's room, bound later);
// GPU 3: an allocation its owner never moves (what an engine that restarted learns from it).
TEST(ClusterViewTest, HoldersTheirDaemonSaysAnchorAreAnchored) {
  ConfigTableCache tables;
  NodeView n = MakeNode("n1", 4, "A100 40GB",
                        {"0:1g.5gb@0=job:3", "0:3g.20gb@4=alloc:slurm:7", "1:1g.5gb@0=job:4",
                         "3:2g.10gb@0=alloc:k8s:ns/svc"});
  n.gpus[0].instances[0].anchors = true;
  n.gpus[1].anchored = true;
  n.gpus[3].instances[0].anchors = true;
  n.reservations.push_back(testing::Reserved({.owner = "k8s:ns/room",
                                              .placements = {{NvmlIndex::Of(2), "1g.5gb", 0}},
                                              .expires_at = 1e12,
                                              .anchors = true}));
  auto v = ClusterView::Build({{"n1", n, ""}}, BundledCatalog(), &tables);
  ASSERT_TRUE(v->nodes()[0].usable);
  EXPECT_TRUE(v->cluster().anchored(0));
  EXPECT_FALSE(v->cluster().anchored(1));
  EXPECT_TRUE(v->cluster().anchored(2));
  EXPECT_TRUE(v->cluster().anchored(3));
  for (int g = 0; g < 4; ++g) {
    for (const Instance& in : v->cluster().gpu(g).instances()) {
      const ClusterView::Occupant* o = v->OccupantOf(in.job);
      ASSERT_NE(o, nullptr);
      const bool expected =
          o->owner == "3" || o->owner == "k8s:ns/room" || o->owner == "k8s:ns/svc";
      EXPECT_EQ(v->cluster().job_anchored(in.job), expected) << o->owner;
      EXPECT_EQ(o->anchors, expected) << o->owner;
    }
  }
}

}  // namespace migsched
