// NodeDaemonToken: which token a node daemon is called with (the calls
// themselves are tested end to end against a real daemon in
// tests/e2e/http_node_daemons_test.cc).
#include "cluster/http_node_daemons.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "testing/status_matchers.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::testing::HasSubstr;

TEST(NodeDaemonTokenTest, AGivenTokenWinsOverTheFile) {
  EXPECT_EQ(*NodeDaemonToken({"n1", "http://a", "abc", "/nonexistent"}, "c.yaml"), "abc");
}

TEST(NodeDaemonTokenTest, TheFilesFirstLineWithoutTrailingCrAndSpaces) {
  const std::string file = testing::WriteTempFile("t.token", "0123abcd \r\nsecond line\n");
  ASSERT_EQ(::chmod(file.c_str(), 0600), 0);
  EXPECT_EQ(*NodeDaemonToken({"n1", "http://a", "", file}, "c.yaml"), "0123abcd");
}

TEST(NodeDaemonTokenTest, ErrorsNameTheNodeAndTheFile) {
  StatusOr<std::string> none = NodeDaemonToken({"n1", "http://a", "", ""}, "c.yaml");
  EXPECT_EQ(none.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(none.status().message(), "c.yaml: node n1 has no token (give token_file or token)");

  StatusOr<std::string> missing = NodeDaemonToken({"n2", "http://b", "", "/nonexistent"}, "c");
  EXPECT_EQ(missing.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(missing.status().message(), "node n2: cannot read token file /nonexistent");

  const std::string empty = testing::WriteTempFile("empty.token", "\n");
  ASSERT_EQ(::chmod(empty.c_str(), 0600), 0);
  StatusOr<std::string> e = NodeDaemonToken({"n3", "http://c", "", empty}, "c");
  EXPECT_EQ(e.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(e.status().message(), HasSubstr("is empty"));
}

// Regression (world_readable_token_file_accepted): the extender called the node daemons with a
// token file of mode 0644 (others may read it), which `migsched reservations --token-file`
// refuses; the clients' rule applies (nodeapi/token.h): others no access, the group may read.
TEST(NodeDaemonTokenTest, WorldReadableTokenFileIsRefused) {
  const std::string file = testing::WriteTempFile("shared.token", "0123abcd\n");
  ASSERT_EQ(::chmod(file.c_str(), 0644), 0);
  StatusOr<std::string> t = NodeDaemonToken({"n1", "http://a", "", file}, "c.yaml");
  EXPECT_EQ(t.status().code(), StatusCode::kFailedPrecondition);
  // 0644 & 07777 printed as 4 octal digits.
  EXPECT_EQ(t.status().message(), "node n1: token file " + file +
                                      " has mode 0644: others may access it, or its group " +
                                      "write it; run `chmod 600 " + file +
                                      "` (or 440 to share it with the file's group)");
  ASSERT_EQ(::chmod(file.c_str(), 0620), 0);  // the group may write: refused too
  EXPECT_EQ(NodeDaemonToken({"n1", "http://a", "", file}, "c.yaml").status().code(),
            StatusCode::kFailedPrecondition);
  ASSERT_EQ(::chmod(file.c_str(), 0440), 0);  // a Secret shared through fsGroup: accepted
  EXPECT_EQ(*NodeDaemonToken({"n1", "http://a", "", file}, "c.yaml"), "0123abcd");
}

TEST(NewHttpNodeDaemonsTest, AnUnknownNodeIsNotFoundNamingTheOrigin) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<NodeDaemons> d,
                       NewHttpNodeDaemons({"c.yaml", {{"n1", "http://127.0.0.1:1", "t", ""}}, 1}));
  StatusOr<NodeView> s = d->State("n9");
  EXPECT_EQ(s.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(s.status().message(), "node n9 is not configured in c.yaml");
}

// Regression (token_error_node_named_twice): a node's token error reached its calls as
// "node n1: node n1: cannot read token file ..."; NodeDaemonToken's message names the node already.
TEST(NewHttpNodeDaemonsTest, ATokenErrorNamesTheNodeOnce) {
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<NodeDaemons> d,
      NewHttpNodeDaemons({"c.yaml", {{"n1", "http://127.0.0.1:1", "", "/nonexistent"}}, 1}));
  StatusOr<NodeView> s = d->State("n1");
  EXPECT_EQ(s.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(s.status().message(), "node n1: cannot read token file /nonexistent");
}

}  // namespace
}  // namespace migsched
