// The node agent's Allocate on node states written by hand
// (cluster/testing/nodes.h) and a NodeDaemons double that records the binds
// (cluster/testing/fake_node_daemons.h); the same path against real node
// daemons is tests/e2e/k8s_cluster_test.cc.
#include "k8s/node_agent/node_agent.h"

#include <gtest/gtest.h>

#include "cluster/testing/fake_node_daemons.h"
#include "cluster/testing/nodes.h"
#include "testing/test_util.h"

namespace migsched::k8s {
namespace {

using migsched::testing::MakeNode;

class NodeAgentTest : public ::testing::Test {
 protected:
  NodeAgent Agent(NodeAgentConfig config = {}) {
    return NodeAgent(&daemons, "n1", &migsched::testing::BundledCatalog(), std::move(config));
  }
  migsched::testing::FakeNodeDaemons daemons;
};

TEST_F(NodeAgentTest, ResourcesAreWhatTheGpusHoldAtOnce) {
  // One A100 40GB and one A30 24GB: 1g.5gb 7 on the A100 (the A30 has no 1g.5gb),
  // 1g.6gb 4 on the A30 (docs/mig-hardware.md §1), 7g.40gb 1, 4g.24gb 1.
  NodeView n = MakeNode("n1", 1, "A100 40GB", {});
  n.gpus.push_back(migsched::testing::MakeGpu("n1", 1, "A30 24GB"));
  daemons.states["n1"] = n;
  auto r = Agent().Resources();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::map<std::string, int> got;
  for (const MigResource& m : *r) got[m.profile] = m.device_count;
  EXPECT_EQ(got["1g.5gb"], 7);
  EXPECT_EQ(got["3g.20gb"], 2);
  EXPECT_EQ(got["7g.40gb"], 1);
  EXPECT_EQ(got["1g.6gb"], 4);
  EXPECT_EQ(got["4g.24gb"], 1);
  EXPECT_EQ(got.count("1g.6gb+me"), 0u);  // '+' is not allowed in a resource name
}

TEST_F(NodeAgentTest, AllocateBindsThePodWhoseReservationHoldsTheProfile) {
  NodeView n = MakeNode("n1", 1, "A100 40GB", {});
  n.reservations.push_back(migsched::testing::Reserved(
      {.owner = "k8s:other", .placements = {{0, "3g.20gb", 4}}, .expires_at = 2e9}));
  n.reservations.push_back(
      migsched::testing::Reserved({.owner = "k8s:pod-a",
                                   .placements = {{0, "1g.5gb", 0}, {0, "1g.5gb", 1}},
                                   .expires_at = 2e9}));
  n.reservations.push_back(migsched::testing::Reserved(
      {.owner = "slurm-room:n1:1g.5gb:2", .placements = {{0, "1g.5gb", 2}}, .expires_at = 1e9}));
  daemons.states["n1"] = n;
  NodeAgentConfig c;
  c.device_nodes = {"/dev/nvidiactl"};
  c.cdi = true;
  auto d = Agent(c).Allocate("1g.5gb", {"1g.5gb-3", "1g.5gb-1"});
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(daemons.calls.back(), "allocate n1 k8s:pod-a prefix=k8s:pod-a");
  // The double answers MIG-<node>-<id*10+i> per instance.
  EXPECT_EQ(d->envs.at("NVIDIA_VISIBLE_DEVICES"), "MIG-n1-10,MIG-n1-11");
  EXPECT_EQ(d->envs.at("CUDA_VISIBLE_DEVICES"), "MIG-n1-10,MIG-n1-11");
  EXPECT_EQ(d->envs.at("MIGSCHED_POD_KEY"), "k8s:pod-a");
  EXPECT_EQ(d->envs.at("MIGSCHED_ALLOCATION_ID"), "1");
  ASSERT_EQ(d->device_nodes.size(), 1u);
  EXPECT_EQ(d->device_nodes[0].host_path, "/dev/nvidiactl");
  EXPECT_EQ(d->cdi_devices,
            (std::vector<std::string>{"nvidia.com/gpu=MIG-n1-10", "nvidia.com/gpu=MIG-n1-11"}));
}

TEST_F(NodeAgentTest, AllocateWithoutAReservationSaysWhy) {
  NodeView n = MakeNode("n1", 1, "A100 40GB", {});
  // A pod holds one 1g.5gb; the container asks for two.
  n.reservations.push_back(migsched::testing::Reserved(
      {.owner = "k8s:pod-a", .placements = {{0, "1g.5gb", 0}}, .expires_at = 2e9}));
  daemons.states["n1"] = n;
  auto d = Agent().Allocate("1g.5gb", {"1g.5gb-0", "1g.5gb-1"});
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(d.status().message().find("no pod holds a reservation of 2 1g.5gb on n1"),
            std::string::npos)
      << d.status().message();
  // A daemon that does not answer.
  daemons.states.clear();
  auto u = Agent().Allocate("1g.5gb", {"1g.5gb-0"});
  ASSERT_FALSE(u.ok());
  EXPECT_EQ(u.status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace migsched::k8s
