// Migration by eviction on node states written by hand
// (cluster/testing/nodes.h) and a loopback API server: which pod is evicted
// for a pod that fits nowhere, and which never is. The same path with real
// node daemons is tests/e2e/k8s_cluster_test.cc (K8sMigrationTest).
//
// n1: two A100 40GB; GPU 0 holds pod a's 3g.20gb at 0, GPU 1 pod b's at 4. A
// 7g.40gb fits on neither. By hand: a moves to GPU 1 at 0, or b to GPU 0 at 4,
// and either empties a GPU: one eviction opens the room.
#include "k8s/engine/migrator.h"

#include <gtest/gtest.h>

#include "cluster/testing/fake_node_daemons.h"
#include "cluster/testing/nodes.h"
#include "k8s/testing/recording_api_server.h"
#include "testing/test_util.h"

namespace migsched::k8s {
namespace {

using migsched::testing::MakeNode;
using nlohmann::json;

json RunningPod(const std::string& name, bool migratable, bool latency_sensitive) {
  json annotations = json::object();
  if (migratable) annotations["migsched.io/migratable"] = "true";
  if (latency_sensitive) annotations["migsched.io/latency-sensitive"] = "true";
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", name},
            {"namespace", "ml"},
            {"uid", name},
            {"labels", {{"migsched.io/managed", "true"}}},
            {"annotations", annotations},
            {"ownerReferences",
             {{{"apiVersion", "batch/v1"},
               {"kind", "Job"},
               {"name", "j"},
               {"uid", "j"},
               {"controller", true}}}}}},
          {"spec",
           {{"nodeName", "n1"},
            {"containers",
             {{{"name", "c"}, {"resources", {{"limits", {{"nvidia.com/mig-3g.20gb", "1"}}}}}}}}}},
          {"status", {{"phase", "Running"}}}};
}

class MigratorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    daemons.states["n1"] =
        MakeNode("n1", 2, "A100 40GB", {"0:3g.20gb@0=alloc:k8s:a", "1:3g.20gb@4=alloc:k8s:b"});
    client = api.StartWithClient();
    ASSERT_NE(client, nullptr);
    EngineOptions o;
    o.policy = "frag-aware";
    o.refresh_s = 0;
    o.state_threads = 1;  // the double is not thread-safe
    auto e = ClusterEngine::Create(&daemons, &directory, &migsched::testing::BundledCatalog(), o);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    engine = std::move(*e);
    waiting.name = "big";
    waiting.ns = "ml";
    waiting.uid = "big";
    waiting.containers = {{"c", {{"7g.40gb", 1}}}};
    api.AddPod({{"metadata", {{"name", "big"}, {"namespace", "ml"}, {"uid", "big"}}},
                {"spec", json::object()}});
  }
  int Evictions() {
    int n = 0;
    for (const auto& r : api.requests()) {
      if (r.method == "POST" && r.path.find("/eviction") != std::string::npos) ++n;
    }
    return n;
  }

  migsched::testing::FakeNodeDaemons daemons;
  StaticNodeDirectory directory{std::vector<StaticNode>{{"n1", "http://n1"}}};
  RecordingApiServer api;
  std::unique_ptr<KubeClient> client;
  std::unique_ptr<ClusterEngine> engine;
  PodInfo waiting;
};

TEST_F(MigratorTest, OneEvictionOpensAGpuAndNothingMoreWhileItIsUnderWay) {
  api.AddPod(RunningPod("a", true, false));
  api.AddPod(RunningPod("b", true, false));
  ASSERT_FALSE(engine->Filter(waiting, {"n1"})[0].fits);
  Evictor evictor(client.get());
  Migrator migrator(engine.get(), client.get(), &evictor, /*migrate_after_s=*/0);
  auto r = migrator.RunOnce(0);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->evicted.size(), 1u) << ::testing::PrintToString(r->waiting);
  EXPECT_EQ(Evictions(), 1);
  const bool a_gone = !api.Pod("ml", "a").has_value();
  const bool b_gone = !api.Pod("ml", "b").has_value();
  EXPECT_NE(a_gone, b_gone);  // exactly one of them
  // The evicted pod's allocation is still on the daemon (the reclaim loop has
  // not released it yet): the room is under way, nothing else is evicted.
  auto again = migrator.RunOnce(1);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->evicted.empty());
  EXPECT_EQ(Evictions(), 1);
  ASSERT_EQ(again->waiting.size(), 1u);
  EXPECT_NE(again->waiting[0].find("waiting for k8s:"), std::string::npos) << again->waiting[0];
}

TEST_F(MigratorTest, PodsThatMayNotMoveAreNeverEvicted) {
  api.AddPod(RunningPod("a", true, true));    // latency-sensitive
  api.AddPod(RunningPod("b", false, false));  // not migratable
  ASSERT_FALSE(engine->Filter(waiting, {"n1"})[0].fits);
  Evictor evictor(client.get());
  Migrator migrator(engine.get(), client.get(), &evictor, 0);
  auto r = migrator.RunOnce(0);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->evicted.empty());
  EXPECT_EQ(Evictions(), 0);
  ASSERT_EQ(r->waiting.size(), 1u);
  EXPECT_NE(r->waiting[0].find("no migration opens any"), std::string::npos) << r->waiting[0];
}

TEST_F(MigratorTest, APodThatWaitedLessThanMigrateAfterIsLeftAlone) {
  api.AddPod(RunningPod("a", true, false));
  api.AddPod(RunningPod("b", true, false));
  ASSERT_FALSE(engine->Filter(waiting, {"n1"})[0].fits);
  Evictor evictor(client.get());
  Migrator migrator(engine.get(), client.get(), &evictor, /*migrate_after_s=*/3600);
  auto r = migrator.RunOnce(0);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Evictions(), 0);
}

}  // namespace
}  // namespace migsched::k8s
