#include "k8s/engine/node_directory.h"

#include <gtest/gtest.h>

#include "k8s/testing/recording_api_server.h"

namespace migsched::k8s {
namespace {

using nlohmann::json;

json AgentPod(const std::string& name, const std::string& node, const std::string& ip,
              const std::string& phase, const std::string& created,
              const std::string& ns = "migsched-system") {
  return {{"metadata",
           {{"name", name},
            {"namespace", ns},
            {"creationTimestamp", created},
            {"labels", {{"app.kubernetes.io/name", "migsched-node-agent"}}}}},
          {"spec", {{"nodeName", node}}},
          {"status", {{"phase", phase}, {"podIP", ip}}}};
}

TEST(PodNodeDirectoryTest, TheNewestRunningAgentOfEachNode) {
  RecordingApiServer api;
  auto url = api.Start();
  ASSERT_TRUE(url.ok());
  api.AddPod(AgentPod("a1", "gpu-node-2", "10.244.2.7", "Running", "2026-05-01T00:00:00Z"));
  api.AddPod(AgentPod("a2", "gpu-node-1", "10.244.1.5", "Running", "2026-05-01T00:00:00Z"));
  // A rolling update: the newer pod of gpu-node-1 wins.
  api.AddPod(AgentPod("a3", "gpu-node-1", "10.244.1.9", "Running", "2026-05-02T00:00:00Z"));
  api.AddPod(AgentPod("a4", "gpu-node-3", "10.244.3.3", "Pending", "2026-05-02T00:00:00Z"));
  api.AddPod(AgentPod("x", "gpu-node-3", "10.244.3.4", "Running", "2026-05-02T00:00:00Z", "other"));
  KubeCredentials c;
  c.server = *url;
  KubeClient client(c);
  PodNodeDirectory dir(&client, "migsched-system", "app.kubernetes.io/name=migsched-node-agent",
                       7070);
  auto nodes = dir.Nodes();
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  ASSERT_EQ(nodes->size(), 2u);
  EXPECT_EQ((*nodes)[0].name, "gpu-node-1");
  EXPECT_EQ((*nodes)[0].url, "http://10.244.1.9:7070");
  EXPECT_EQ((*nodes)[1].name, "gpu-node-2");
  EXPECT_EQ((*nodes)[1].url, "http://10.244.2.7:7070");
  EXPECT_EQ(api.requests().back().query,
            "fieldSelector=metadata.namespace%3Dmigsched-system&labelSelector=app.kubernetes.io%"
            "2Fname%3Dmigsched-node-agent&limit=500");
}

TEST(StaticNodeDirectoryTest, SortedByName) {
  StaticNodeDirectory dir({{"n2", "http://b"}, {"n1", "http://a"}});
  auto nodes = dir.Nodes();
  ASSERT_TRUE(nodes.ok());
  EXPECT_EQ((*nodes)[0].name, "n1");
}

}  // namespace
}  // namespace migsched::k8s
