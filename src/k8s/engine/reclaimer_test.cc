// The reclaim loop's rounds on node states written by hand and a loopback API
// server (k8s/testing/recording_api_server.h): what is released when, and
// what never is.
#include "k8s/engine/reclaimer.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "cluster/testing/fake_node_daemons.h"
#include "cluster/testing/nodes.h"
#include "k8s/testing/recording_api_server.h"

namespace migsched::k8s {
namespace {

using migsched::testing::AddReservation;
using migsched::testing::MakeNode;
using nlohmann::json;

json ManagedPod(const std::string& name, const std::string& uid, const std::string& phase) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", name},
            {"namespace", "ml"},
            {"uid", uid},
            {"labels", {{"migsched.io/managed", "true"}}}}},
          {"spec", {{"nodeName", "n1"}}},
          {"status", {{"phase", phase}}}};
}

int Count(const std::vector<std::string>& calls, const std::string& call) {
  return static_cast<int>(std::count(calls.begin(), calls.end(), call));
}

TEST(ReclaimerTest, WhatPodsNoLongerNeedIsReleasedInTheSecondRoundMissing) {
  migsched::testing::FakeNodeDaemons daemons;
  NodeView n1 = MakeNode("n1", 1, "A100 40GB",
                         {"0:1g.5gb@2=alloc#7:k8s:running", "0:1g.5gb@3=alloc#8:k8s:ended",
                          "0:1g.5gb@4=alloc#9:k8s:gone",
                          "0:1g.5gb@5=alloc#10:slurm:12"});  // not a pod's: never touched
  AddReservation(&n1, "k8s:binding", 0, "1g.5gb", 0, 2e9);
  AddReservation(&n1, "slurm-room:n1:1g.5gb:1", 0, "1g.5gb", 1, 2e9);
  daemons.states["n1"] = n1;
  StaticNodeDirectory directory(std::vector<StaticNode>{{"n1", "http://n1"}});
  RecordingApiServer api;
  auto client = api.StartWithClient();
  ASSERT_NE(client, nullptr);
  api.AddPod(ManagedPod("running", "running", "Running"));
  api.AddPod(ManagedPod("ended", "ended", "Succeeded"));
  Reclaimer reclaimer(client.get(), &daemons, &directory);

  // Round 1: each key is missing once: nothing is released yet.
  auto r1 = reclaimer.RunOnce();
  ASSERT_TRUE(r1.ok()) << r1.status().ToString();
  EXPECT_TRUE(r1->released.empty());
  // The bind of "binding" completes meanwhile: its pod is there (labelled) now.
  api.AddPod(ManagedPod("binding", "binding", "Pending"));
  auto r2 = reclaimer.RunOnce();
  ASSERT_TRUE(r2.ok()) << r2.status().ToString();
  EXPECT_EQ(Count(daemons.calls, "release n1 8"), 1);  // ended
  EXPECT_EQ(Count(daemons.calls, "release n1 9"), 1);  // gone
  EXPECT_EQ(Count(daemons.calls, "release n1 7"), 0);
  EXPECT_EQ(Count(daemons.calls, "release n1 10"), 0);
  EXPECT_EQ(Count(daemons.calls, "unreserve n1 k8s:binding"), 0);
  EXPECT_EQ(Count(daemons.calls, "unreserve n1 slurm-room:n1:1g.5gb:1"), 0);
  EXPECT_EQ(r2->released.size(), 2u);
}

// Regression reclaim_of_a_pod_whose_label_was_removed: the loop lists pods by the
// migsched.io/managed label, and a running pod whose label its owner removed was taken for gone:
// its instance was released while it ran, and the next pod was given the same MIG device. Pod
// "unlabelled" runs (no label); pod "gone" is not there at all.
TEST(ReclaimerTest, ARunningPodWithoutTheLabelKeepsItsInstances) {
  migsched::testing::FakeNodeDaemons daemons;
  NodeView n1 = MakeNode("n1", 1, "A100 40GB",
                         {"0:1g.5gb@2=alloc#7:k8s:unlabelled", "0:1g.5gb@4=alloc#9:k8s:gone"});
  daemons.states["n1"] = n1;
  StaticNodeDirectory directory(std::vector<StaticNode>{{"n1", "http://n1"}});
  RecordingApiServer api;
  auto client = api.StartWithClient();
  ASSERT_NE(client, nullptr);
  json pod = ManagedPod("unlabelled", "unlabelled", "Running");
  pod["metadata"].erase("labels");
  api.AddPod(pod);
  Reclaimer reclaimer(client.get(), &daemons, &directory);
  for (int round = 0; round < 3; ++round) {
    auto r = reclaimer.RunOnce();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
  EXPECT_EQ(Count(daemons.calls, "release n1 7"), 0);  // still running
  EXPECT_EQ(Count(daemons.calls, "release n1 9"), 1);  // gone: released once
}

TEST(ReclaimerTest, NothingIsReleasedWhenThePodsCannotBeListed) {
  migsched::testing::FakeNodeDaemons daemons;
  NodeView n1 = MakeNode("n1", 1, "A100 40GB", {"0:1g.5gb@0=alloc#9:k8s:gone"});
  daemons.states["n1"] = n1;
  StaticNodeDirectory directory(std::vector<StaticNode>{{"n1", "http://n1"}});
  RecordingApiServer api;
  auto client = api.StartWithClient();
  ASSERT_NE(client, nullptr);
  Reclaimer reclaimer(client.get(), &daemons, &directory);
  ASSERT_TRUE(reclaimer.RunOnce().ok());
  api.FailNext("/api/v1/pods", 500, "etcd is down");
  EXPECT_FALSE(reclaimer.RunOnce().ok());
  EXPECT_EQ(Count(daemons.calls, "release n1 9"), 0);
}

}  // namespace
}  // namespace migsched::k8s
