// Reading MIG requests from Pods in the shape the API server serialises them
// (fixtures in tests/data/k8s/, made by make_fixtures.py from kubectl's
// generators; expected values read off the fixtures by hand).
#include "k8s/extender/pod_requests.h"

#include <gtest/gtest.h>

#include "testing/test_util.h"

namespace migsched::k8s {
namespace {

using nlohmann::json;

json PodFixture(const std::string& name) {
  return migsched::testing::ReadJson(migsched::testing::TestDataDir() + "/k8s/" + name);
}

TEST(ParsePodTest, AJobPodWithOneMigInstance) {
  auto pod = ParsePod(PodFixture("pod-3g.20gb.json"));
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  EXPECT_EQ(pod->name, "train-x7k2p");
  EXPECT_EQ(pod->ns, "ml");
  EXPECT_EQ(pod->uid, "5d0c6a7e-3f4b-4c1d-9e2a-6b7c8d9e0f11");
  EXPECT_EQ(pod->phase, "Pending");
  EXPECT_EQ(pod->node_name, "");
  EXPECT_EQ(pod->controller_kind, "Job");
  // cpu and memory are not MIG resources; the one nvidia.com/mig-3g.20gb is.
  ASSERT_EQ(pod->containers.size(), 1u);
  EXPECT_EQ(pod->containers[0], (ContainerMig{"train", {{"3g.20gb", 1}}}));
  EXPECT_EQ(pod->instance_profiles(), (std::vector<std::string>{"3g.20gb"}));
  EXPECT_TRUE(pod->has_mig());
}

TEST(ParsePodTest, TwoContainersWithTheirOwnProfiles) {
  auto pod = ParsePod(PodFixture("pod-two-containers.json"));
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  ASSERT_EQ(pod->containers.size(), 2u);
  EXPECT_EQ(pod->containers[0], (ContainerMig{"infer", {{"1g.5gb", 2}}}));
  EXPECT_EQ(pod->containers[1], (ContainerMig{"embed", {{"2g.10gb", 1}}}));
  EXPECT_EQ(pod->instance_profiles(), (std::vector<std::string>{"1g.5gb", "1g.5gb", "2g.10gb"}));
}

TEST(ParsePodTest, APodWithoutMigAsksForNothing) {
  auto pod = ParsePod(PodFixture("pod-no-mig.json"));
  ASSERT_TRUE(pod.ok());
  EXPECT_FALSE(pod->has_mig());
  EXPECT_TRUE(pod->instance_profiles().empty());
}

json PodWithResources(const json& resources, bool init = false) {
  json c = {{"name", "c"}, {"image", "x"}, {"resources", resources}};
  json pod = {{"metadata", {{"name", "p"}, {"uid", "u"}}},
              {"spec", {{"containers", json::array()}}}};
  pod["spec"][init ? "initContainers" : "containers"].push_back(c);
  return pod;
}

TEST(ParsePodTest, LimitsAloneRequestsAloneAndBothEqualAllCount) {
  for (const json& resources :
       {json{{"limits", {{"nvidia.com/mig-1g.5gb", "2"}}}},
        json{{"requests", {{"nvidia.com/mig-1g.5gb", "2"}}}},
        json{{"limits", {{"nvidia.com/mig-1g.5gb", "2"}}},
             {"requests", {{"nvidia.com/mig-1g.5gb", "2"}}}},
        json{{"limits", {{"nvidia.com/mig-1g.5gb", 2}}}}}) {  // a JSON number is read too
    auto pod = ParsePod(PodWithResources(resources));
    ASSERT_TRUE(pod.ok()) << resources.dump() << ": " << pod.status().ToString();
    EXPECT_EQ(pod->containers.at(0).requests, (std::vector<MigRequest>{{"1g.5gb", 2}}))
        << resources.dump();
    EXPECT_EQ(pod->ns, "default");        // no namespace in metadata
    EXPECT_EQ(pod->controller_kind, "");  // a bare pod
  }
  // Zero asks for nothing.
  auto zero = ParsePod(PodWithResources({{"limits", {{"nvidia.com/mig-1g.5gb", "0"}}}}));
  ASSERT_TRUE(zero.ok());
  EXPECT_FALSE(zero->has_mig());
}

TEST(ParsePodTest, RequestsAreSortedByProfileWithinAContainer) {
  auto pod = ParsePod(PodWithResources(
      {{"limits", {{"nvidia.com/mig-3g.20gb", "1"}, {"nvidia.com/mig-1g.5gb", "2"}}}}));
  ASSERT_TRUE(pod.ok());
  EXPECT_EQ(pod->containers.at(0).requests,
            (std::vector<MigRequest>{{"1g.5gb", 2}, {"3g.20gb", 1}}));
}

TEST(ParsePodTest, InitContainersWithMigAreNamed) {
  auto pod = ParsePod(PodWithResources({{"limits", {{"nvidia.com/mig-1g.5gb", "1"}}}}, true));
  ASSERT_TRUE(pod.ok());
  EXPECT_TRUE(pod->containers.empty());
  EXPECT_EQ(pod->init_containers_with_mig, (std::vector<std::string>{"c"}));
  EXPECT_TRUE(pod->has_mig());
}

TEST(ParsePodTest, BadQuantitiesNameTheContainerAndTheResource) {
  struct Case {
    json resources;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {{{"limits", {{"nvidia.com/mig-1g.5gb", "500m"}}}},
            "container 'c'.resources.limits['nvidia.com/mig-1g.5gb']: '500m' is not a whole "
            "number of MIG instances"},
           {{{"limits", {{"nvidia.com/mig-1g.5gb", -1}}}},
            "container 'c'.resources.limits['nvidia.com/mig-1g.5gb']: a negative quantity"},
           {{{"limits", {{"nvidia.com/mig-1g.5gb", "2"}}},
             {"requests", {{"nvidia.com/mig-1g.5gb", "1"}}}},
            "container 'c'.resources: requests (1) and limits (2) of nvidia.com/mig-1g.5gb differ; "
            "an extended resource needs them equal"},
           {{{"limits", {{"nvidia.com/mig-", "1"}}}},
            "container 'c'.resources.limits: 'nvidia.com/mig-' names no profile"},
           {{{"limits", {{"nvidia.com/mig-1g.5gb", true}}}},
            "container 'c'.resources.limits['nvidia.com/mig-1g.5gb']: a quantity must be a string "
            "such as \"1\", got boolean"},
           {{{"limits", {{"nvidia.com/mig-1g.5gb", "5000"}}}},
            "container 'c'.resources.limits['nvidia.com/mig-1g.5gb']: 5000 instances is more than "
            "1024"},
       }) {
    auto pod = ParsePod(PodWithResources(c.resources));
    ASSERT_FALSE(pod.ok()) << c.resources.dump();
    EXPECT_EQ(pod.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(pod.status().message(), c.message);
  }
}

TEST(ParsePodTest, NotAPod) {
  EXPECT_EQ(ParsePod(json::array()).status().message(), "Pod must be an object, got array");
  EXPECT_EQ(ParsePod(json::object()).status().message(), "Pod has no metadata");
  EXPECT_EQ(ParsePod(json{{"metadata", json::object()}}).status().message(),
            "Pod has no metadata.name");
  EXPECT_EQ(ParsePod(json{{"metadata", {{"name", "p"}}}, {"spec", {{"containers", 3}}}})
                .status()
                .message(),
            "Pod spec.containers must be an array");
}

TEST(FindMemberTest, ExactFirstThenAnyLetterCaseLikeGo) {
  const json j = {{"Pod", 1}, {"nodenames", 2}};
  ASSERT_NE(FindMember(j, "Pod"), nullptr);
  EXPECT_EQ(*FindMember(j, "Pod"), 1);
  ASSERT_NE(FindMember(j, "NodeNames"), nullptr);
  EXPECT_EQ(*FindMember(j, "NodeNames"), 2);
  EXPECT_EQ(FindMember(j, "Nodes"), nullptr);
  EXPECT_EQ(FindMember(json::array(), "Pod"), nullptr);
}

}  // namespace
}  // namespace migsched::k8s
