#include "slurm/hostlist.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>

namespace migsched::slurm {
namespace {

using Names = std::vector<std::string>;

TEST(HostlistTest, ExpandsTheFormsSlurmWrites) {
  struct Case {
    std::string expr;
    Names want;
  };
  const std::vector<Case> cases = {
      {"n1", {"n1"}},
      {"n[1-3]", {"n1", "n2", "n3"}},
      {"n[1-3,7]", {"n1", "n2", "n3", "n7"}},
      {"gpu[01-03]", {"gpu01", "gpu02", "gpu03"}},
      {"gpu[08-10]", {"gpu08", "gpu09", "gpu10"}},
      {"n[9-11]", {"n9", "n10", "n11"}},
      {"login,n[1-2]", {"login", "n1", "n2"}},
      {"r[1-2]n[1-2]", {"r1n1", "r1n2", "r2n1", "r2n2"}},
      {"n[1-2]-ib", {"n1-ib", "n2-ib"}},
      {"n[3],n[1]", {"n3", "n1"}},
      {"localhost", {"localhost"}},
  };
  for (const Case& c : cases) {
    auto got = ExpandHostlist(c.expr);
    ASSERT_TRUE(got.ok()) << c.expr << ": " << got.status().ToString();
    EXPECT_EQ(*got, c.want) << c.expr;
  }
}

TEST(HostlistTest, RefusesMalformedExpressionsNamingThePosition) {
  struct Case {
    std::string expr;
    std::string message_part;
  };
  const std::vector<Case> cases = {
      {"", "empty"},
      {"n1,,n2", "position 3: empty name"},
      {"n[1-3", "'[' without ']'"},
      {"n1-3]", "']' without '['"},
      {"n[3-1]", "descending range '3-1'"},
      {"n[a-b]", "'a-b' is not a number"},
      {"n[1-]", "'1-' is not a number"},
      {"n[]", "'' is not a number"},
      {"n 1", "contains a space"},
      {"n[1-999999999]", "more than 1000000 names"},
  };
  for (const Case& c : cases) {
    auto got = ExpandHostlist(c.expr);
    ASSERT_FALSE(got.ok()) << c.expr;
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument) << c.expr;
    EXPECT_NE(got.status().message().find(c.message_part), std::string::npos)
        << c.expr << ": " << got.status().message();
  }
}

TEST(HostlistTest, CompressesAsSlurmDoes) {
  struct Case {
    Names hosts;
    std::string want;
  };
  const std::vector<Case> cases = {
      {{"n1"}, "n1"},
      {{"n1", "n2", "n3"}, "n[1-3]"},
      {{"n1", "n2", "n3", "n5"}, "n[1-3,5]"},
      {{"n1", "n5"}, "n[1,5]"},
      {{"gpu01", "gpu02"}, "gpu[01-02]"},
      {{"gpu09", "gpu10"}, "gpu[09-10]"},
      {{"n9", "n10"}, "n[9-10]"},
      {{"n1", "n01"}, "n[1,01]"},
      {{"login", "n1", "n2"}, "login,n[1-2]"},
      {{"n1", "m1", "n2"}, "n1,m1,n2"},
      {{"a", "b"}, "a,b"},
      {{}, ""},
  };
  for (const Case& c : cases) EXPECT_EQ(CompressHostlist(c.hosts), c.want);
}

// Randomized: compressing then expanding gives the names back, for lists of
// names drawn from a few prefixes, widths and numbers (seed printed).
TEST(HostlistTest, CompressThenExpandRoundTrips) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  const std::vector<std::string> prefixes = {"n", "gpu", "node-", "x"};
  for (int round = 0; round < 500; ++round) {
    Names hosts;
    const int len = 1 + static_cast<int>(rng() % 12);
    for (int i = 0; i < len; ++i) {
      const std::string& p = prefixes[rng() % prefixes.size()];
      const int v = static_cast<int>(rng() % 15);
      const int width = static_cast<int>(rng() % 3);  // 0: natural
      if (rng() % 10 == 0) {
        hosts.push_back(p + "login");
      } else {
        hosts.push_back(p + fmt::format("{:0{}}", v, width));
      }
    }
    const std::string expr = CompressHostlist(hosts);
    auto back = ExpandHostlist(expr);
    ASSERT_TRUE(back.ok()) << expr << ": " << back.status().ToString();
    EXPECT_EQ(*back, hosts) << expr;
  }
}

}  // namespace
}  // namespace migsched::slurm
