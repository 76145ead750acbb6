// deploy/slurm/ports.sh: the ports of local clusters that come up at the same
// time. Each test uses a registry folder of its own and a small port range,
// so that a port chosen twice shows up at once (with 20 ports drawn at random
// from 40, a repeat is all but certain without the registry: the chance of
// none is 40!/(20! 40^20), about 1e-4).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "slurm/command_runner.h"
#include "testing/test_util.h"

namespace migsched::testing {
namespace {

namespace fs = std::filesystem;

class LocalClusterPortsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ = MakeTempDir("ports");
    registry_ = (tmp_ / "registry").string();
  }
  void TearDown() override { fs::remove_all(tmp_); }

  // Runs `script` with bash after sourcing ports.sh with this test's registry
  // and the range [lo, hi].
  slurm::CommandResult Bash(const std::string& script, int lo, int hi) {
    const std::string prelude = "export MIGSCHED_PORT_REGISTRY='" + registry_ +
                                "' MIGSCHED_PORT_MIN=" + std::to_string(lo) +
                                " MIGSCHED_PORT_MAX=" + std::to_string(hi) + "; . '" + SourceDir() +
                                "/deploy/slurm/ports.sh'; ";
    auto r = slurm::NewSubprocessRunner()->Run({"bash", "-c", prelude + script}, 120);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : slurm::CommandResult{};
  }
  static std::vector<int> Ints(const std::string& text) {
    std::istringstream in(text);
    std::vector<int> out;
    for (int p; in >> p;) out.push_back(p);
    return out;
  }
  std::string Owner(int port) {
    std::ifstream in(registry_ + "/" + std::to_string(port));
    std::string s;
    std::getline(in, s);
    return s;
  }

  fs::path tmp_;
  std::string registry_;
};

// The failure this guards: two clusters started together both chose the
// same free port and the second node daemon could not listen on it.
TEST_F(LocalClusterPortsTest, ConcurrentClustersNeverShareAPort) {
  // Four "clusters" at once, five ports each, from 40 ports; each line
  // of the output is "CLUSTER PORT" (a line written at once to a pipe is not
  // torn).
  slurm::CommandResult r = Bash(
      "for c in 1 2 3 4; do"
      "  ( for i in 1 2 3 4 5; do p=$(reserve_port /cluster-$c) || exit 1; echo \"$c $p\"; done ) &"
      " done; wait",
      29000, 29039);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<int> fields = Ints(r.out);
  ASSERT_EQ(fields.size(), 40u) << r.out << r.err;
  std::set<int> all;
  std::vector<int> per_cluster(5, 0);
  for (size_t i = 0; i < fields.size(); i += 2) {
    const int c = fields[i], p = fields[i + 1];
    ASSERT_TRUE(c >= 1 && c <= 4) << r.out;
    ++per_cluster[c];
    EXPECT_GE(p, 29000);
    EXPECT_LE(p, 29039);
    EXPECT_TRUE(all.insert(p).second) << "port " << p << " given twice";
    EXPECT_EQ(Owner(p), "/cluster-" + std::to_string(c)) << "port " << p;
  }
  EXPECT_EQ(per_cluster, (std::vector<int>{0, 5, 5, 5, 5}));
  EXPECT_EQ(all.size(), 20u);
}

TEST_F(LocalClusterPortsTest, ARangeHeldByOthersSaysSoAndReleaseFreesOnlyTheOwners) {
  // Three ports: A takes two, B the third; B's next one fails; once A is
  // down B gets one of A's two.
  slurm::CommandResult r = Bash(
      "reserve_port /a; reserve_port /a; reserve_port /b; "
      "if reserve_port /b; then echo UNEXPECTED; fi; "
      "release_ports /a; reserve_port /b",
      31990, 31992);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("UNEXPECTED"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("no free TCP port in 31990-31992"), std::string::npos) << r.err;
  std::vector<int> ports = Ints(r.out);
  ASSERT_EQ(ports.size(), 4u) << r.out;
  const int a1 = ports[0], a2 = ports[1], b1 = ports[2], b2 = ports[3];
  EXPECT_EQ((std::set<int>{a1, a2, b1}), (std::set<int>{31990, 31991, 31992}));
  EXPECT_TRUE(b2 == a1 || b2 == a2) << b2;
  // What is left in the registry: B's two, none of A's.
  EXPECT_EQ(Owner(b1), "/b");
  EXPECT_EQ(Owner(b2), "/b");
  const int gone = b2 == a1 ? a2 : a1;
  EXPECT_FALSE(fs::exists(registry_ + "/" + std::to_string(gone)));
}

TEST_F(LocalClusterPortsTest, AnEntryOfAClusterThatWasNeverTakenDownIsTakenOverAfterTenMinutes) {
  // One port, held by a cluster folder with no running process: a fresh
  // entry still holds it (its cluster may be starting), one 20 minutes old
  // does not.
  const fs::path old_cluster = tmp_ / "old-cluster";
  fs::create_directories(old_cluster / "pids");
  fs::create_directories(registry_);
  { std::ofstream(registry_ + "/31995") << old_cluster.string() << "\n"; }
  slurm::CommandResult fresh = Bash("reserve_port /new", 31995, 31995);
  EXPECT_NE(fresh.exit_code, 0) << fresh.out;
  EXPECT_EQ(Owner(31995), old_cluster.string());

  fs::last_write_time(registry_ + "/31995",
                      fs::file_time_type::clock::now() - std::chrono::minutes(20));
  slurm::CommandResult stale = Bash("reserve_port /new", 31995, 31995);
  ASSERT_EQ(stale.exit_code, 0) << stale.err;
  EXPECT_EQ(Ints(stale.out), std::vector<int>{31995});
  EXPECT_EQ(Owner(31995), "/new");
}

}  // namespace
}  // namespace migsched::testing
