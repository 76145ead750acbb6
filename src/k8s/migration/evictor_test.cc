// Migration by eviction: only migratable pods with a controller, never
// latency-sensitive ones; a PodDisruptionBudget's 429 means wait.
#include "k8s/migration/evictor.h"

#include <gtest/gtest.h>

#include "k8s/extender/extender.h"
#include "k8s/testing/recording_api_server.h"

namespace migsched::k8s {
namespace {

using nlohmann::json;

PodInfo Pod(std::map<std::string, std::string> annotations, std::string controller = "Job") {
  PodInfo p;
  p.name = "train-0";
  p.ns = "ml";
  p.uid = "uid-0";
  p.annotations = std::move(annotations);
  p.controller_kind = std::move(controller);
  return p;
}

TEST(MayMigrateTest, TheRules) {
  EXPECT_TRUE(MayMigrate(Pod({{kMigratableAnnotation, "true"}})).ok());
  EXPECT_EQ(MayMigrate(Pod({})).message(),
            "ml/train-0 is not annotated migsched.io/migratable: \"true\"");
  EXPECT_EQ(MayMigrate(Pod({{kMigratableAnnotation, "yes"}})).code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(
      MayMigrate(Pod({{kMigratableAnnotation, "true"}, {kLatencySensitiveAnnotation, "true"}}))
          .message(),
      "ml/train-0 is latency-sensitive (migsched.io/latency-sensitive): it never moves");
  EXPECT_EQ(MayMigrate(Pod({{kMigratableAnnotation, "true"}}, "")).message(),
            "ml/train-0 has no controller that would recreate it after an eviction");
}

class EvictorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client = api.StartWithClient();
    ASSERT_NE(client, nullptr);
    api.AddPod({{"metadata", {{"name", "train-0"}, {"namespace", "ml"}, {"uid", "uid-0"}}},
                {"spec", json::object()}});
  }
  RecordingApiServer api;
  std::unique_ptr<KubeClient> client;
};

TEST_F(EvictorTest, ABudgetMakesTheMoveWaitThenItGoesThrough) {
  Evictor evictor(client.get(), /*retry_after_s=*/10);
  const PodInfo pod = Pod({{kMigratableAnnotation, "true"}});
  api.set_block_evictions(true);
  auto r = evictor.Evict(pod, 100);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->outcome, Evictor::Outcome::kWaiting);
  EXPECT_EQ(r->reason,
            "eviction of ml/train-0 waits: Cannot evict pod as it would violate the pod's "
            "disruption budget.");
  // Within the wait nothing is sent.
  api.set_block_evictions(false);
  const size_t sent = api.requests().size();
  auto early = evictor.Evict(pod, 105);
  ASSERT_TRUE(early.ok());
  EXPECT_EQ(early->outcome, Evictor::Outcome::kWaiting);
  EXPECT_EQ(api.requests().size(), sent);
  // After it, the eviction goes through and the pod is gone.
  auto later = evictor.Evict(pod, 110);
  ASSERT_TRUE(later.ok());
  EXPECT_EQ(later->outcome, Evictor::Outcome::kEvicted);
  EXPECT_FALSE(api.Pod("ml", "train-0").has_value());
  auto again = evictor.Evict(pod, 111);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->outcome, Evictor::Outcome::kGone);
}

TEST_F(EvictorTest, APodThatMayNotMoveIsNeverSent) {
  Evictor evictor(client.get());
  auto r = evictor.Evict(
      Pod({{kMigratableAnnotation, "true"}, {kLatencySensitiveAnnotation, "true"}}), 0);
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(api.requests().empty());
  EXPECT_TRUE(api.Pod("ml", "train-0").has_value());
}

}  // namespace
}  // namespace migsched::k8s
