// HttpNodeDaemons over a changing node list, without daemons (the calls to
// real daemons are in tests/e2e/k8s_cluster_test.cc): which node is known
// when, and what an unknown or unreachable one answers.
#include "k8s/engine/node_daemons_http.h"

#include <gtest/gtest.h>

namespace migsched::k8s {
namespace {

// A loopback port nothing listens on (1 is privileged and unused here).
constexpr char kClosed[] = "http://127.0.0.1:1";

TEST(HttpNodeDaemonsTest, OnlyTheNodesOfTheLastListAreCalled) {
  HttpNodeDaemons d("extender.yaml", "token-0123456789abcdef0123456789ab", "", 0.5);
  auto none = d.State("n1");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_NE(none.status().message().find("no node daemon is known yet"), std::string::npos);

  ASSERT_TRUE(d.Update({{"n1", kClosed}}).ok());
  auto refused = d.State("n1");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable) << refused.status().ToString();
  auto other = d.State("n2");
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().code(), StatusCode::kNotFound) << other.status().ToString();

  // n1's agent gone, n2's there.
  ASSERT_TRUE(d.Update({{"n2", kClosed}}).ok());
  EXPECT_EQ(d.State("n1").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(d.State("n2").status().code(), StatusCode::kUnavailable);
}

class ListedNodes : public NodeDirectory {
 public:
  StatusOr<std::vector<StaticNode>> Nodes() override { return nodes; }
  std::vector<StaticNode> nodes;
};

TEST(HttpNodeDaemonsTest, AnUpdatingDirectoryHandsItsListOn) {
  HttpNodeDaemons d("extender.yaml", "token-0123456789abcdef0123456789ab", "", 0.5);
  ListedNodes listed;
  UpdatingDirectory dir(&listed, &d);
  listed.nodes = {{"n7", kClosed}};
  auto got = dir.Nodes();
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ(d.State("n7").status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace migsched::k8s
