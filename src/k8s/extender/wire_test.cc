// The extender/v1 bodies: requests in the exact shape kube-scheduler sends
// (tests/data/k8s/filter-args*.json, bind-args.json) and answers in the shape
// its HTTPExtender decodes.
#include "k8s/extender/wire.h"

#include <gtest/gtest.h>

#include "testing/test_util.h"

namespace migsched::k8s {
namespace {

using nlohmann::json;

std::string FixtureText(const std::string& name) {
  return migsched::testing::ReadFile(migsched::testing::TestDataDir() + "/k8s/" + name);
}

TEST(ExtenderArgsTest, NodeNamesWhenNodeCacheCapable) {
  auto args = ParseExtenderArgs(FixtureText("filter-args.json"));
  ASSERT_TRUE(args.ok()) << args.status().ToString();
  EXPECT_TRUE(args->node_names_given);
  EXPECT_EQ(args->node_names, (std::vector<std::string>{"gpu-node-1", "gpu-node-2", "gpu-node-3"}));
  EXPECT_EQ(args->pod.name, "train-x7k2p");
  EXPECT_TRUE(args->node_items.empty());
}

TEST(ExtenderArgsTest, NodeListWhenNotNodeCacheCapable) {
  auto args = ParseExtenderArgs(FixtureText("filter-args-nodelist.json"));
  ASSERT_TRUE(args.ok()) << args.status().ToString();
  EXPECT_FALSE(args->node_names_given);
  EXPECT_EQ(args->node_names, (std::vector<std::string>{"gpu-node-1", "gpu-node-2", "gpu-node-3"}));
  ASSERT_EQ(args->node_items.size(), 3u);
}

TEST(ExtenderArgsTest, UnreadableBodiesSayWhatIsWrong) {
  struct Case {
    std::string body, message;
  };
  for (const Case& c : std::vector<Case>{
           {"{\"Pod\": ", "ExtenderArgs is not valid JSON (8 bytes)"},
           {"[]", "ExtenderArgs must be a JSON object, got array"},
           {"{}", "ExtenderArgs has no Pod"},
           {R"({"Pod": null, "NodeNames": ["a"]})", "ExtenderArgs has no Pod"},
           {R"({"Pod": {"metadata": {"name": "p"}}, "NodeNames": "a"})",
            "ExtenderArgs.NodeNames must be an array"},
           {R"({"Pod": {"metadata": {"name": "p"}}, "NodeNames": [1]})",
            "ExtenderArgs.NodeNames holds a non-string"},
           {R"({"Pod": {"metadata": {"name": "p"}}, "Nodes": {"items": [{}]}})",
            "ExtenderArgs.Nodes.items holds a Node without metadata.name"},
           {R"({"Pod": {"metadata": {}}, "NodeNames": []})",
            "ExtenderArgs.Pod: Pod has no metadata.name"},
       }) {
    auto args = ParseExtenderArgs(c.body);
    ASSERT_FALSE(args.ok()) << c.body;
    EXPECT_EQ(args.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(args.status().message(), c.message) << c.body;
  }
  // No candidates at all is not an error.
  auto none = ParseExtenderArgs(
      R"({"Pod": {"metadata": {"name": "p"}}, "Nodes": null, "NodeNames": null})");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->node_names.empty());
}

TEST(FilterResultTest, NodeNamesFormHasGoFieldNames) {
  auto args = ParseExtenderArgs(FixtureText("filter-args.json"));
  ASSERT_TRUE(args.ok());
  FilterOutcome outcome;
  outcome.passed = {"gpu-node-2"};
  outcome.unresolvable = {{"gpu-node-1", "no 4g.20gb placement free"},
                          {"gpu-node-3", "no 4g.20gb placement free"}};
  const json expected = json::parse(R"({
    "Nodes": null, "NodeNames": ["gpu-node-2"], "FailedNodes": {},
    "FailedAndUnresolvableNodes": {"gpu-node-1": "no 4g.20gb placement free",
                                   "gpu-node-3": "no 4g.20gb placement free"},
    "Error": ""})");
  EXPECT_EQ(FilterResultJson(outcome, *args), expected);
}

TEST(FilterResultTest, NodesFormEchoesTheNodeObjects) {
  auto args = ParseExtenderArgs(FixtureText("filter-args-nodelist.json"));
  ASSERT_TRUE(args.ok());
  FilterOutcome outcome;
  outcome.passed = {"gpu-node-3", "gpu-node-1"};
  const json out = FilterResultJson(outcome, *args);
  EXPECT_TRUE(out["NodeNames"].is_null());
  ASSERT_EQ(out["Nodes"]["items"].size(), 2u);
  // Request order, whole objects.
  EXPECT_EQ(out["Nodes"]["items"][0], args->node_items[0]);
  EXPECT_EQ(out["Nodes"]["items"][1], args->node_items[2]);
}

TEST(FilterResultTest, AnErrorNullsBothNodeForms) {
  const json out = FilterErrorJson("migsched: ExtenderArgs has no Pod");
  EXPECT_EQ(out, json::parse(R"({"Nodes": null, "NodeNames": null, "FailedNodes": {},
                                 "FailedAndUnresolvableNodes": {},
                                 "Error": "migsched: ExtenderArgs has no Pod"})"));
}

TEST(HostPriorityListTest, ScoresAreClampedToZeroToTen) {
  EXPECT_EQ(HostPriorityListJson({{"a", 7}, {"b", 15}, {"c", -3}}),
            json::parse(R"([{"Host": "a", "Score": 7}, {"Host": "b", "Score": 10},
                            {"Host": "c", "Score": 0}])"));
  EXPECT_EQ(HostPriorityListJson({}), json::array());
}

TEST(BindingArgsTest, TheFourFieldsKubeSchedulerSends) {
  auto args = ParseBindingArgs(FixtureText("bind-args.json"));
  ASSERT_TRUE(args.ok()) << args.status().ToString();
  EXPECT_EQ(args->pod_name, "train-x7k2p");
  EXPECT_EQ(args->pod_namespace, "ml");
  EXPECT_EQ(args->pod_uid, "5d0c6a7e-3f4b-4c1d-9e2a-6b7c8d9e0f11");
  EXPECT_EQ(args->node, "gpu-node-2");
  EXPECT_EQ(ParseBindingArgs(R"({"PodName": "p", "PodNamespace": "d"})").status().message(),
            "ExtenderBindingArgs has no Node");
  EXPECT_EQ(ParseBindingArgs(R"({"PodName": 3})").status().message(),
            "ExtenderBindingArgs.PodName must be a string");
  EXPECT_EQ(BindingResultJson(""), json::parse(R"({"Error": ""})"));
}

}  // namespace
}  // namespace migsched::k8s
