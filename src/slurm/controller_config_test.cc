#include "slurm/controller_config.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "sched/full_policy.h"
#include "testing/test_util.h"

namespace migsched::slurm {
namespace {

TEST(ControllerConfigTest, DefaultsAndAFullConfig) {
  auto c = ParseControllerConfig(R"(
nodes:
  - name: n1
    url: http://127.0.0.1:7071
    token: abc
)",
                                 "c.yaml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->partition, "mig");
  EXPECT_EQ(c->gres_name, "mig");
  EXPECT_EQ(c->policy, "full");
  EXPECT_EQ(c->tick_ms, 1000);
  EXPECT_EQ(c->max_bind_failures, 3);
  // full's own defaults apply where the file says nothing (sched/full_policy.h).
  EXPECT_EQ(c->PolicyOptions().metric, std::string(kFullDefaultMetric));
  // The look-ahead reservation of docs/results.md section 3: guard after 1800 s, slack 1 (a
  // Slurm job's TimeLimit is its expected end), and evacuation for any waiting job.
  EXPECT_EQ(c->PolicyOptions().max_skip_seconds, 1800);
  EXPECT_EQ(c->PolicyOptions().reservation_slack, 1);
  EXPECT_EQ(c->PolicyOptions().evacuation, EvacuationScope::kQueue);
  EXPECT_EQ(*c->TokenOf(c->nodes[0]), "abc");

  auto d = ParseControllerConfig(R"(
slurm: {partition: gpu, gres_name: mg, bin_dir: /opt/slurm/bin, command_timeout_s: 5, max_bind_failures: 2}
nodes:
  - {name: n1, url: "http://10.0.0.1:7070"}
  - {name: n2, url: "http://10.0.0.2:7070", token_file: /etc/n2.token}
token_file: /etc/all.token
controller: {tick_ms: 500, reservation_ttl_s: 20, room_timeout_s: 30, reclaim_grace_s: 5, listen: "127.0.0.1:7071"}
migration: {enabled: false, after_s: 10, max_moved_jobs: 1, min_runtime_s: 0}
scheduler: {policy: lb+frag, threshold: 0.3, metric: fragcost}
)",
                                 "d.yaml");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->partition, "gpu");
  EXPECT_EQ(d->bin_dir, "/opt/slurm/bin");
  EXPECT_EQ(d->nodes.size(), 2u);
  EXPECT_EQ(d->tick_ms, 500);
  EXPECT_EQ(d->listen, "127.0.0.1:7071");
  EXPECT_EQ(c->listen, "");  // no status server unless asked for
  EXPECT_FALSE(d->migration_enabled);
  EXPECT_EQ(d->policy, "lb+frag");
  EXPECT_EQ(d->scheduler.threshold, 0.3);
  EXPECT_EQ(d->PolicyOptions().metric, "fragcost");
}

TEST(ControllerConfigTest, NodeDaemonsOfGivesEachNodeItsOwnOrTheGlobalTokenFile) {
  auto c = ParseControllerConfig(R"(
nodes:
  - {name: n1, url: "http://10.0.0.1:7070"}
  - {name: n2, url: "http://10.0.0.2:7070", token_file: /etc/n2.token}
  - {name: n3, url: "http://10.0.0.3:7070", token: abc}
token_file: /etc/all.token
controller: {node_timeout_s: 7}
)",
                                 "d.yaml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const HttpNodeDaemonsConfig d = NodeDaemonsOf(*c);
  EXPECT_EQ(d.origin, "d.yaml");
  EXPECT_EQ(d.timeout_s, 7);
  ASSERT_EQ(d.nodes.size(), 3u);
  EXPECT_EQ(d.nodes[0].name, "n1");
  EXPECT_EQ(d.nodes[0].url, "http://10.0.0.1:7070");
  EXPECT_EQ(d.nodes[0].token_file, "/etc/all.token");
  EXPECT_EQ(d.nodes[1].token_file, "/etc/n2.token");
  EXPECT_EQ(d.nodes[2].token, "abc");
  EXPECT_EQ(*c->TokenOf(c->nodes[2]), "abc");  // the token wins over the global file
}

TEST(ControllerConfigTest, ErrorsNameTheFileLineAndKey) {
  struct Case {
    std::string yaml;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"", "c.yaml: empty configuration"},
      {"nodes: []\n", "c.yaml: nodes: at least one node is required"},
      {"nodez: 1\n",
       "c.yaml:1: unknown key 'nodez' (known: controller, migration, nodes, "
       "scheduler, slurm, token_file)"},
      {"nodes:\n  - {name: n1, url: \"10.0.0.1:7070\"}\n",
       "c.yaml:2: nodes[] n1: url must start with http://, got '10.0.0.1:7070'"},
      // Regression (node_url_port_out_of_range): taken at load, refused by the node client at
      // every tick.
      {"nodes:\n  - {name: n1, url: \"http://10.0.0.1:99999\"}\n",
       "c.yaml:2: nodes[] n1: 'http://10.0.0.1:99999' is not a daemon address: port '99999' is not "
       "a number from 1 to 65535; expected http://HOST:PORT, e.g. http://127.0.0.1:7070"},
      {"nodes:\n  - {name: n1, url: \"http://a\"}\n  - {name: n1, url: \"http://b\"}\n",
       "c.yaml: node 'n1' is listed twice"},
      // Regression (two_nodes_on_one_daemon_released_a_running_job).
      {"nodes:\n  - {name: n1, url: \"http://a:7070\"}\n  - {name: n2, url: \"http://A:7070/\"}\n",
       "c.yaml: nodes 'n1' and 'n2' have the same url 'http://A:7070/': each Slurm node needs its "
       "own node daemon"},
      {"nodes:\n  - {name: n1, url: \"http://a\"}\ncontroller: {tick_ms: x}\n",
       "c.yaml:3: controller.tick_ms must be a number, got 'x'"},
      {"nodes:\n  - {name: n1, url: \"http://a\"}\nscheduler: {policy: best}\n",
       "c.yaml: scheduler.policy: unknown policy 'best' (known: first-fit, lb, lb+frag, full, "
       "best-fit, driver-default, mfi, largest-free-run, static, static-all-balanced, frag-aware "
       "(= lb+frag))"},
      {"nodes:\n  - {name: n1, url: \"http://a\"}\ncontroller: {tick_ms: 2000, "
       "reservation_ttl_s: 1}\n",
       "c.yaml: controller.reservation_ttl_s (1) must be longer than a tick (2000 ms)"},
      {"nodes:\n  - {name: n1, url: \"http://a\"}\ncontroller: {listen: \"7071\"}\n",
       "c.yaml: controller.listen: expected host:port (e.g. 127.0.0.1:7071), got '7071'"},
      {"nodes:\n  - {name: n1, url: \"http://a\"}\ncontroller: {listen: \"h:99999\"}\n",
       "c.yaml: controller.listen: expected host:port (e.g. 127.0.0.1:7071), got 'h:99999'"},
      {"nodes: [\n", "c.yaml:"},
      // Regression (controller_started_without_node_tokens): a node with no token started the
      // controller, which failed only on Slurm's first command; one with two was taken silently.
      {"nodes:\n  - {name: n1, url: \"http://a\"}\n",
       "c.yaml: node 'n1' has no token: give its token_file or token, or a top-level token_file "
       "(the token of the nodes that name none)"},
      {"nodes:\n  - {name: n1, url: \"http://a\", token: t, token_file: /t}\n",
       "c.yaml: node 'n1' gives both token and token_file; give one of them"},
      // Regression (controller_took_a_partition_name_slurm_config_refuses): 'a b' was taken and
      // passed to scontrol.
      {"slurm: {partition: 'a b'}\nnodes:\n  - {name: n1, url: \"http://a\", token: t}\n",
       "c.yaml: slurm.partition 'a b': use letters, digits, '_', '-' or '.' only"},
      // Regression (tick_ms_wrapped_negative): 3e9 ms wrapped to a negative tick and the
      // controller ticked back to back; 15.5 was cut to 15.
      {"nodes:\n  - {name: n1, url: \"http://a\", token: t}\ncontroller: {tick_ms: 3e9}\n",
       "c.yaml:3: controller.tick_ms must be a whole number of milliseconds from 10 to 3600000, "
       "got 3000000000"},
      {"nodes:\n  - {name: n1, url: \"http://a\", token: t}\ncontroller: {tick_ms: 15.5}\n",
       "c.yaml:3: controller.tick_ms must be a whole number of milliseconds from 10 to 3600000, "
       "got 15.5"},
  };
  for (const Case& c : cases) {
    auto got = ParseControllerConfig(c.yaml, "c.yaml");
    ASSERT_FALSE(got.ok()) << c.yaml;
    EXPECT_EQ(got.status().message().rfind(c.message, 0), 0u) << got.status().message();
  }
}

// Regression (config_key_given_twice): a key written twice was taken silently, the last one
// winning; now refused at every level, naming both lines.
TEST(ControllerConfigTest, KeyGivenTwiceIsRefused) {
  struct Case {
    std::string yaml;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"nodes:\n  - {name: n1, url: \"http://a\"}\ntoken_file: /a\ntoken_file: /b\n",
       "c.yaml:4: key 'token_file' is given twice (lines 3 and 4); keep one"},
      {"nodes:\n  - name: n1\n    url: \"http://a\"\n    url: \"http://b\"\n",
       "c.yaml:4: key 'nodes[].url' is given twice (lines 3 and 4); keep one"},
      {"nodes:\n  - {name: n1, url: \"http://a\"}\ncontroller:\n  tick_ms: 1\n  tick_ms: 2\n",
       "c.yaml:5: key 'controller.tick_ms' is given twice (lines 4 and 5); keep one"},
  };
  for (const auto& c : cases) {
    auto got = ParseControllerConfig(c.yaml, "c.yaml");
    ASSERT_FALSE(got.ok()) << c.yaml;
    EXPECT_EQ(got.status().message(), c.message) << c.yaml;
  }
}

// Regression: a key with no value (`tick_ms:` and then the next key) was reported at the next
// key's line.
TEST(ControllerConfigTest, KeyWithNoValueIsReportedAtItsOwnLine) {
  struct Case {
    std::string yaml;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"nodes:\n  - {name: n1, url: \"http://a\"}\ncontroller:\n  tick_ms:\n  log_level: info\n",
       "c.yaml:4: controller.tick_ms must be a number, got '(not a scalar)'"},
      {"nodes:\n  - {name: n1, url: \"http://a\"}\nslurm:\ntoken_file: /t\n",
       "c.yaml:3: slurm must be a mapping"},
      {"nodes:\n  - {name: n1, url: \"http://a\"}\nscheduler:\n  threshold:\n  policy: lb\n",
       "c.yaml:4: scheduler.threshold must be a number in [0, 1], got nothing (null)"},
  };
  for (const auto& c : cases) {
    auto got = ParseControllerConfig(c.yaml, "c.yaml");
    ASSERT_FALSE(got.ok()) << c.yaml;
    EXPECT_EQ(got.status().message(), c.message) << c.yaml;
  }
}

TEST(ControllerConfigTest, TokensFromFiles) {
  const std::string file = migsched::testing::WriteTempFile("n.token", "0123abcd\n");
  ASSERT_EQ(::chmod(file.c_str(), 0600), 0);  // a client refuses a token file others may read
  auto c = ParseControllerConfig(
      "nodes:\n  - {name: n1, url: \"http://a\"}\n  - {name: n2, url: "
      "\"http://b\", token_file: /nonexistent}\ntoken_file: " +
          file + "\n",
      "c.yaml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(*c->TokenOf(c->nodes[0]), "0123abcd");
  auto missing = c->TokenOf(c->nodes[1]);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), "node n2: cannot read token file /nonexistent");
}

}  // namespace
}  // namespace migsched::slurm
