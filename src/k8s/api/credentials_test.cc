#include "k8s/api/credentials.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "testing/test_util.h"

namespace migsched::k8s {
namespace {

void Write(const std::filesystem::path& p, const std::string& text) { std::ofstream(p) << text; }

TEST(InClusterCredentialsTest, FromTheServiceAccountDirAndTheEnvironment) {
  const auto dir = migsched::testing::MakeTempDir("sa");
  Write(dir / "token", "abc\n");
  Write(dir / "ca.crt", "PEM");
  Write(dir / "namespace", "migsched-system");
  auto c = InClusterCredentials(
      {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}}, dir);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->server, "https://10.96.0.1:443");
  EXPECT_EQ(c->ca_file, (dir / "ca.crt").string());
  EXPECT_EQ(c->token_file, (dir / "token").string());
  EXPECT_EQ(c->ns, "migsched-system");
  auto token = c->CurrentToken();
  ASSERT_TRUE(token.ok());
  EXPECT_EQ(*token, "abc");  // the newline is not part of it

  auto v6 = InClusterCredentials(
      {{"KUBERNETES_SERVICE_HOST", "fd00::1"}, {"KUBERNETES_SERVICE_PORT", "443"}}, dir);
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->server, "https://[fd00::1]:443");
}

TEST(InClusterCredentialsTest, OutsideAPodSaysSo) {
  auto c = InClusterCredentials({}, "/nonexistent");
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
  EXPECT_NE(c.status().message().find("not running in a pod"), std::string::npos);
  auto no_token = InClusterCredentials(
      {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}},
      "/nonexistent");
  EXPECT_EQ(no_token.status().message(), "no service account file /nonexistent/token");
}

constexpr char kKubeconfig[] = R"(apiVersion: v1
kind: Config
current-context: admin@lab
clusters:
- name: lab
  cluster:
    server: https://192.168.10.5:6443
    certificate-authority-data: TFMwdExTMUNSVWRKVGc9PQ==
- name: other
  cluster:
    server: https://other:6443
    insecure-skip-tls-verify: true
contexts:
- name: admin@lab
  context:
    cluster: lab
    user: admin
    namespace: ml
- name: ci
  context:
    cluster: other
    user: robot
users:
- name: admin
  user:
    client-certificate-data: Q0VSVA==
    client-key-data: S0VZ
- name: robot
  user:
    tokenFile: robot.token
- name: sso
  user:
    exec:
      command: kubelogin
)";

TEST(KubeconfigCredentialsTest, CurrentContextWithEmbeddedData) {
  const std::string path = migsched::testing::WriteTempFile("kubeconfig", kKubeconfig);
  auto c = KubeconfigCredentials(path);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->server, "https://192.168.10.5:6443");
  EXPECT_EQ(c->ca_pem, "LS0tLS1CRUdJTg==");  // base64 of base64: decoded once
  EXPECT_EQ(c->client_cert_pem, "CERT");
  EXPECT_EQ(c->client_key_pem, "KEY");
  EXPECT_EQ(c->ns, "ml");
  EXPECT_FALSE(c->insecure_skip_tls_verify);
}

TEST(KubeconfigCredentialsTest, ANamedContextWithATokenFileRelativeToTheKubeconfig) {
  const std::string path = migsched::testing::WriteTempFile("kubeconfig2", kKubeconfig);
  auto c = KubeconfigCredentials(path, "ci");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->server, "https://other:6443");
  EXPECT_TRUE(c->insecure_skip_tls_verify);
  EXPECT_EQ(c->token_file, (std::filesystem::path(path).parent_path() / "robot.token").string());
  EXPECT_EQ(c->ns, "default");
  EXPECT_EQ(c->CurrentToken().status().code(), StatusCode::kUnauthenticated);  // no such file yet
}

TEST(KubeconfigCredentialsTest, ProblemsNameTheFileAndTheEntry) {
  const std::string path = migsched::testing::WriteTempFile("kubeconfig3", kKubeconfig);
  EXPECT_EQ(KubeconfigCredentials(path, "nope").status().message(),
            path + ": no entry 'nope' in contexts");
  // The ci context's user authenticates with an exec plugin.
  std::string text = kKubeconfig;
  text.replace(text.find("user: robot"), 11, "user: sso");
  const std::string exec_cfg = migsched::testing::WriteTempFile("kubeconfig4", text);
  EXPECT_EQ(KubeconfigCredentials(exec_cfg, "ci").status().message(),
            exec_cfg +
                ": user 'sso' authenticates with 'exec', which migsched does not support; use a "
                "token, a token file or a client certificate");
  const std::string bad = migsched::testing::WriteTempFile("kubeconfig5", "clusters: [\n");
  EXPECT_EQ(KubeconfigCredentials(bad).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(KubeconfigCredentials("/nonexistent/kubeconfig").status().code(),
            StatusCode::kNotFound);
}

TEST(Base64Test, DecodesWithAndWithoutPadding) {
  EXPECT_EQ(*Base64Decode("aGVsbG8="), "hello");
  EXPECT_EQ(*Base64Decode("aGVsbG8"), "hello");
  EXPECT_EQ(*Base64Decode("aGVs\nbG8h"), "hello!");
  EXPECT_EQ(*Base64Decode(""), "");
  EXPECT_FALSE(Base64Decode("a$").ok());
  EXPECT_FALSE(Base64Decode("a").ok());  // 6 bits: truncated
}

}  // namespace
}  // namespace migsched::k8s
