// The API server client against a loopback server that records each request
// and checks its body as kube-apiserver would (k8s/testing/recording_api_server.h).
#include "k8s/api/kube_client.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "k8s/testing/recording_api_server.h"
#include "k8s/testing/test_pki.h"
#include "testing/test_util.h"

namespace migsched::k8s {
namespace {

using nlohmann::json;

json TestPod(const std::string& name = "train-0", const std::string& uid = "uid-0") {
  return {{"metadata", {{"name", name}, {"namespace", "ml"}, {"uid", uid}}},
          {"spec", {{"containers", json::array()}}}};
}

class KubeClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto url = api.Start();
    ASSERT_TRUE(url.ok()) << url.status().ToString();
    KubeCredentials c;
    c.server = *url;
    c.token = "t0ken";
    client = std::make_unique<KubeClient>(c);
    api.AddPod(TestPod());
  }
  RecordingApiServer api{"t0ken"};
  std::unique_ptr<KubeClient> client;
};

TEST_F(KubeClientTest, TheBindingBodyIsTheOneKubeSchedulerPosts) {
  ASSERT_TRUE(client->PostBinding("ml", "train-0", "uid-0", "gpu-node-2").ok());
  const auto reqs = api.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].method, "POST");
  EXPECT_EQ(reqs[0].path, "/api/v1/namespaces/ml/pods/train-0/binding");
  EXPECT_EQ(reqs[0].content_type, "application/json");
  EXPECT_EQ(reqs[0].authorization, "Bearer t0ken");
  EXPECT_EQ(json::parse(reqs[0].body), json::parse(R"({
      "apiVersion": "v1", "kind": "Binding",
      "metadata": {"name": "train-0", "namespace": "ml", "uid": "uid-0"},
      "target": {"apiVersion": "v1", "kind": "Node", "name": "gpu-node-2"}})"));
  EXPECT_EQ(api.Pod("ml", "train-0")->at("spec").at("nodeName"), "gpu-node-2");

  // Bound already: the API server's 409 and message come back.
  Status again = client->PostBinding("ml", "train-0", "uid-0", "gpu-node-1");
  EXPECT_EQ(again.code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(again.message(),
            "POST /api/v1/namespaces/ml/pods/train-0/binding: HTTP 409: Operation cannot be "
            "fulfilled on pods/binding \"train-0\": pod train-0 is already assigned to node "
            "\"gpu-node-2\"");
}

TEST_F(KubeClientTest, AnnotationsAreAMergePatchGuardedByTheUid) {
  ASSERT_TRUE(client
                  ->PatchPodAnnotations("ml", "train-0", "uid-0",
                                        {{"migsched.io/placement", "{\"node\":\"n1\"}"}})
                  .ok());
  const auto reqs = api.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].method, "PATCH");
  EXPECT_EQ(reqs[0].content_type, "application/merge-patch+json");
  EXPECT_EQ(json::parse(reqs[0].body), json::parse(R"({"metadata": {"uid": "uid-0",
                           "annotations": {"migsched.io/placement": "{\"node\":\"n1\"}"}}})"));
  EXPECT_EQ(api.Pod("ml", "train-0")->at("metadata").at("annotations").at("migsched.io/placement"),
            "{\"node\":\"n1\"}");
  // Removing is a null in the patch.
  ASSERT_TRUE(
      client->PatchPodAnnotations("ml", "train-0", "", {{"migsched.io/placement", std::nullopt}})
          .ok());
  EXPECT_FALSE(
      api.Pod("ml", "train-0")->at("metadata").at("annotations").contains("migsched.io/placement"));
  // Another pod of the same name (recreated): the uid precondition refuses.
  Status st = client->PatchPodAnnotations("ml", "train-0", "uid-OLD", {{"a", "b"}});
  EXPECT_EQ(st.code(), StatusCode::kAlreadyExists);
  EXPECT_NE(st.message().find("Precondition failed: UID in precondition: uid-OLD"),
            std::string::npos);
}

TEST_F(KubeClientTest, EvictionRespectsDisruptionBudgets) {
  std::string message;
  api.set_block_evictions(true);
  auto blocked = client->Evict("ml", "train-0", "uid-0", &message);
  ASSERT_TRUE(blocked.ok()) << blocked.status().ToString();
  EXPECT_EQ(*blocked, KubeClient::Eviction::kBlockedByBudget);
  EXPECT_EQ(message, "Cannot evict pod as it would violate the pod's disruption budget.");
  EXPECT_TRUE(api.Pod("ml", "train-0").has_value());

  api.set_block_evictions(false);
  auto evicted = client->Evict("ml", "train-0", "uid-0");
  ASSERT_TRUE(evicted.ok());
  EXPECT_EQ(*evicted, KubeClient::Eviction::kEvicted);
  EXPECT_FALSE(api.Pod("ml", "train-0").has_value());
  const auto reqs = api.requests();
  EXPECT_EQ(reqs.back().path, "/api/v1/namespaces/ml/pods/train-0/eviction");
  EXPECT_EQ(json::parse(reqs.back().body), json::parse(R"({
      "apiVersion": "policy/v1", "kind": "Eviction",
      "metadata": {"name": "train-0", "namespace": "ml"},
      "deleteOptions": {"preconditions": {"uid": "uid-0"}}})"));

  auto gone = client->Evict("ml", "train-0", "uid-0");
  ASSERT_TRUE(gone.ok());
  EXPECT_EQ(*gone, KubeClient::Eviction::kGone);
}

TEST_F(KubeClientTest, GetAndListPods) {
  api.AddPod(TestPod("other", "uid-1"));
  ASSERT_TRUE(client->PostBinding("ml", "other", "uid-1", "gpu-node-3").ok());
  auto pod = client->GetPod("ml", "train-0");
  ASSERT_TRUE(pod.ok());
  EXPECT_EQ((*pod)["metadata"]["uid"], "uid-0");
  auto missing = client->GetPod("ml", "nope");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(),
            "GET /api/v1/namespaces/ml/pods/nope: HTTP 404: pods \"nope\" not found");

  auto on3 = client->ListPods("spec.nodeName=gpu-node-3", "");
  ASSERT_TRUE(on3.ok()) << on3.status().ToString();
  ASSERT_EQ(on3->size(), 1u);
  EXPECT_EQ((*on3)[0]["metadata"]["name"], "other");
  EXPECT_EQ(api.requests().back().query, "fieldSelector=spec.nodeName%3Dgpu-node-3&limit=500");
  auto all = client->ListPods("", "");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 2u);
}

TEST_F(KubeClientTest, AWrongTokenIsUnauthenticated) {
  KubeCredentials c = client->credentials();
  c.token = "wrong";
  KubeClient bad(c);
  auto pod = bad.GetPod("ml", "train-0");
  EXPECT_EQ(pod.status().code(), StatusCode::kUnauthenticated);
}

TEST_F(KubeClientTest, ATokenFileIsReadBeforeEveryRequest) {
  // Projected service-account tokens rotate: the next request must send the new one.
  const std::string file = migsched::testing::WriteTempFile("token", "t0ken\n");
  KubeCredentials c = client->credentials();
  c.token.clear();
  c.token_file = file;
  KubeClient rotating(c);
  ASSERT_TRUE(rotating.GetPod("ml", "train-0").ok());
  std::ofstream(file) << "rotated";
  api.set_token("rotated");
  ASSERT_TRUE(rotating.GetPod("ml", "train-0").ok());
  EXPECT_EQ(api.requests().back().authorization, "Bearer rotated");
}

TEST(KubeClientNoServerTest, NoAnswerIsUnavailableWithTheReason) {
  KubeCredentials c;
  c.server = "http://127.0.0.1:1";  // nothing listens on port 1
  KubeClient client(c, std::chrono::milliseconds(500));
  auto pod = client.GetPod("ml", "p");
  EXPECT_EQ(pod.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(pod.status().message().find("GET http://127.0.0.1:1/api/v1/namespaces/ml/pods/p"),
            std::string::npos)
      << pod.status().message();
}

// A self-signed certificate for 127.0.0.1 made with the openssl command.
bool MakeCertificate(const std::string& dir, const std::string& name) {
  return MakeSelfSignedCert(dir, name, "IP:127.0.0.1");
}

TEST(KubeClientTlsTest, TheConfiguredCaIsRequired) {
  const std::string dir = migsched::testing::MakeTempDir("tls").string();
  ASSERT_TRUE(MakeCertificate(dir, "apiserver")) << "the openssl command is needed (setup.sh)";
  ASSERT_TRUE(MakeCertificate(dir, "other"));
  RecordingApiServer api("t");
  auto url = api.Start(dir + "/apiserver.crt", dir + "/apiserver.key");
  ASSERT_TRUE(url.ok()) << url.status().ToString();
  api.AddPod(TestPod());

  KubeCredentials c;
  c.server = *url;
  c.token = "t";
  c.ca_file = dir + "/apiserver.crt";  // the in-cluster ca.crt case
  EXPECT_TRUE(KubeClient(c).GetPod("ml", "train-0").ok());

  c.ca_file.clear();
  c.ca_pem = migsched::testing::ReadFile(dir + "/apiserver.crt");  // certificate-authority-data
  EXPECT_TRUE(KubeClient(c).GetPod("ml", "train-0").ok());

  c.ca_pem = migsched::testing::ReadFile(dir + "/other.crt");  // a CA that did not sign it
  auto refused = KubeClient(c).GetPod("ml", "train-0");
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(refused.status().message().find("not signed by the configured CA"), std::string::npos)
      << refused.status().message();

  c.insecure_skip_tls_verify = true;
  EXPECT_TRUE(KubeClient(c).GetPod("ml", "train-0").ok());
}

TEST(ApiMessageTest, StatusBodiesAndOthers) {
  EXPECT_EQ(ApiMessage(R"({"kind":"Status","message":"pods \"x\" not found"})"),
            "pods \"x\" not found");
  EXPECT_EQ(ApiMessage("<html>\nbad gateway</html>"), "<html> bad gateway</html>");
  EXPECT_EQ(ApiMessage(""), "(empty body)");
  EXPECT_EQ(QueryEscape("spec.nodeName=n 1"), "spec.nodeName%3Dn%201");
}

}  // namespace
}  // namespace migsched::k8s
