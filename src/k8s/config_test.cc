#include "k8s/config.h"

#include <gtest/gtest.h>

namespace migsched::k8s {
namespace {

TEST(ExtenderConfigTest, DiscoveryWithDefaults) {
  auto c = ParseExtenderConfig(R"(
node_agents: {namespace: migsched-system, label_selector: app=agent, port: 7071}
token_file: /var/run/migsched/token
scheduler: {policy: frag-aware, threshold: 0.5}
)",
                               "extender.yaml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->discovers());
  EXPECT_EQ(c->agents_namespace, "migsched-system");
  EXPECT_EQ(c->agents_label_selector, "app=agent");
  EXPECT_EQ(c->agents_port, 7071);
  EXPECT_EQ(c->listen, "0.0.0.0:8888");
  EXPECT_EQ(c->reservation_ttl_s, 300);
  EXPECT_TRUE(c->migration);
  EXPECT_NE(c->scheduler_yaml.find("policy: frag-aware"), std::string::npos) << c->scheduler_yaml;
}

TEST(ExtenderConfigTest, PolicyOfReadsTheSchedulerKeysAsTheDaemonDoes) {
  auto c = ParseExtenderConfig(R"(
node_agents: {namespace: ns, label_selector: app=agent}
token: t
scheduler: {policy: frag-aware, threshold: 0.25}
)",
                               "extender.yaml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  auto p = PolicyOf(*c, "extender.yaml");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->policy, "frag-aware");
  EXPECT_EQ(p->scheduler.threshold, 0.25);
  // No scheduler mapping: the daemon's default policy.
  c->scheduler_yaml.clear();
  p = PolicyOf(*c, "extender.yaml");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->policy, "full");
  // ... with full's registry defaults (sched/full_policy.h, docs/results.md section 3): pods have
  // no expected ends, so the reservation after 1800 s is strict for them.
  EXPECT_EQ(p->scheduler.metric, "demand-weighted");
  EXPECT_EQ(p->scheduler.max_skip_seconds, 1800);
  EXPECT_EQ(p->scheduler.reservation_slack, 1);
  EXPECT_EQ(p->scheduler.evacuation, EvacuationScope::kQueue);
  // Mistakes name the file and the key.
  c->scheduler_yaml = "{policy: frag-aware, threshold: -1}";
  p = PolicyOf(*c, "extender.yaml");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("extender.yaml"), std::string::npos) << p.status().message();
  EXPECT_NE(p.status().message().find("threshold"), std::string::npos) << p.status().message();
  c->scheduler_yaml = "{policy: nope}";
  p = PolicyOf(*c, "extender.yaml");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("nope"), std::string::npos) << p.status().message();
}

TEST(ExtenderConfigTest, StaticNodes) {
  auto c = ParseExtenderConfig(R"(
listen: 127.0.0.1:0
nodes:
- {name: n1, url: "http://127.0.0.1:7001"}
- {name: n2, url: "http://127.0.0.1:7002"}
token: abc
migration: false
)",
                               "x");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_FALSE(c->discovers());
  ASSERT_EQ(c->nodes.size(), 2u);
  EXPECT_EQ(c->nodes[1].url, "http://127.0.0.1:7002");
  EXPECT_FALSE(c->migration);
}

TEST(ExtenderConfigTest, TlsProbesBodyBoundAndLeaderElection) {
  auto c = ParseExtenderConfig(R"(
nodes: [{name: n1, url: 'http://a:1'}]
token: t
tls: {cert_file: /tls/tls.crt, key_file: /tls/tls.key, client_ca_file: /tls/ca.crt}
probe_listen: 0.0.0.0:8889
max_body_bytes: 1048576
leader_election: {enabled: true, identity: extender-a, lease_duration_s: 30}
)",
                               "extender.yaml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->tls_cert_file, "/tls/tls.crt");
  EXPECT_EQ(c->tls_key_file, "/tls/tls.key");
  EXPECT_EQ(c->tls_client_ca_file, "/tls/ca.crt");
  EXPECT_EQ(c->probe_listen, "0.0.0.0:8889");
  EXPECT_EQ(c->max_body_bytes, 1048576);
  EXPECT_TRUE(c->leader_elect);
  EXPECT_EQ(c->lease_identity, "extender-a");
  EXPECT_EQ(c->lease_namespace, "migsched-system");  // the defaults of config.h
  EXPECT_EQ(c->lease_name, "migsched-extender");
  EXPECT_EQ(c->lease_duration_s, 30);
  EXPECT_EQ(c->renew_deadline_s, 10);
  // Without the keys: plain HTTP, no probe listener, 16 MiB, one replica.
  auto d = ParseExtenderConfig("nodes: [{name: n1, url: 'http://a:1'}]\ntoken: t\n", "x");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->tls_cert_file, "");
  EXPECT_EQ(d->probe_listen, "");
  EXPECT_EQ(d->max_body_bytes, 16 * 1024 * 1024);
  EXPECT_FALSE(d->leader_elect);
}

TEST(ExtenderConfigTest, MistakesNameTheKey) {
  struct Case {
    std::string yaml, message;
  };
  const std::string ok_nodes = "nodes: [{name: n1, url: 'http://a:1'}]\ntoken: t\n";
  for (const Case& c : std::vector<Case>{
           {ok_nodes + "listn: 1",
            "x: listn: unknown key (known: bind_wait_s, daemon_timeout_s, kube_context, "
            "kubeconfig, leader_election, listen, max_body_bytes, migrate_after_s, migration, "
            "node_agents, nodes, probe_listen, reclaim_interval_s, refresh_s, "
            "reservation_ttl_s, scheduler, tls, token, token_file)"},
           {ok_nodes + "tls: {cert_file: a.crt, key_file: a.key}",
            "x: tls: give cert_file, key_file and client_ca_file (all three)"},
           {ok_nodes + "tls: {cert: a.crt}",
            "x: tls.cert: unknown key (known: cert_file, client_ca_file, key_file)"},
           {ok_nodes + "probe_listen: 8889", "x: probe_listen: must be host:port"},
           {ok_nodes + "daemon_timeout_s: 0.01",
            "x: daemon_timeout_s: must be from 0.1 to 60 seconds"},
           {ok_nodes + "max_body_bytes: 100", "x: max_body_bytes: must be a number >= 1024"},
           {ok_nodes + "leader_election: {enabled: true, renew_deadline_s: 20}",
            "x: leader_election: needs retry_s < renew_deadline_s < lease_duration_s (the "
            "leader must stop before another replica may take over)"},
           {ok_nodes + "leader_election: {enabled: true, name: ''}",
            "x: leader_election: needs a namespace and a name"},
           {"token: t\n",
            "x: node_agents: the node daemons are missing: give node_agents or nodes"},
           {"nodes: [{name: n1}]\ntoken: t\n", "x: nodes[0]: needs a name and a url"},
           {"nodes: [{name: n1, url: 'http://u:1'}, {name: n1, url: 'http://v:1'}]\ntoken: t\n",
            "x: nodes[1]: node 'n1' is listed twice"},
           {"nodes: [{name: n1, url: 'http://u:1'}]\n",
            "x: token_file: the node daemons' token is missing: "
            "give token_file or token"},
           {ok_nodes + "reservation_ttl_s: 0", "x: reservation_ttl_s: must be a number >= 1"},
           {ok_nodes + "migration: maybe", "x: migration: must be true or false"},
           {ok_nodes + "listen: nowhere", "x: listen: must be host:port"},
           {ok_nodes + "node_agents: {namespace: a, label_selector: b}",
            "x: nodes: give either node_agents (discovery) or nodes (a list), not both"},
           {"node_agents: {port: 1}\ntoken: t",
            "x: node_agents: needs a namespace and a label_selector"},
           {"[1, 2]", "x: (top): must be a mapping"},
           // Regression (daemon_url_port_out_of_range): a url the node client refuses at its
           // first call (port 99999: not a TCP port) was taken at load.
           {"nodes: [{name: n1, url: 'http://a:99999'}]\ntoken: t\n",
            "x: nodes[0].url: 'http://a:99999' is not a daemon address: port '99999' is not a "
            "number from 1 to 65535; expected http://HOST:PORT, e.g. http://127.0.0.1:7070"},
           {"nodes: [{name: n1, url: 'http://a:1/api'}]\ntoken: t\n",
            "x: nodes[0].url: 'http://a:1/api' is not a daemon address: it has a path or query "
            "('/api'): the client adds the API's paths; expected http://HOST:PORT, e.g. "
            "http://127.0.0.1:7070"},
       }) {
    auto got = ParseExtenderConfig(c.yaml, "x");
    ASSERT_FALSE(got.ok()) << c.yaml;
    EXPECT_EQ(got.status().message(), c.message) << c.yaml;
  }
}

// Regression (config_key_given_twice): a key written twice was taken silently, the last one
// winning; now refused at every level of the extender's and the node agent's configs.
TEST(ExtenderConfigTest, KeyGivenTwiceIsRefused) {
  const std::string nodes = "nodes: [{name: n1, url: 'http://a:1'}]\n";  // line 1
  EXPECT_EQ(ParseExtenderConfig(nodes + "token: t\ntoken: u\n", "x").status().message(),
            "x:3: key 'token' is given twice (lines 2 and 3); keep one");
  EXPECT_EQ(ParseExtenderConfig(nodes + "token: t\ntls:\n  cert_file: a\n  cert_file: b\n", "x")
                .status()
                .message(),
            "x:5: key 'tls.cert_file' is given twice (lines 4 and 5); keep one");
  EXPECT_EQ(
      ParseExtenderConfig("token: t\nnodes:\n  - name: n1\n    name: n2\n", "x").status().message(),
      "x:4: key 'nodes[0].name' is given twice (lines 3 and 4); keep one");
  EXPECT_EQ(ParseNodeAgentConfig("token: t\ntoken: u\n", "a").status().message(),
            "a:2: key 'token' is given twice (lines 1 and 2); keep one");
}

TEST(NodeAgentConfigTest, DefaultsAndMistakes) {
  auto c = ParseNodeAgentConfig("token_file: /t\n", "agent.yaml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->daemon_url, "http://127.0.0.1:7070");
  EXPECT_EQ(c->device_plugin_dir, "/var/lib/kubelet/device-plugins");
  EXPECT_EQ(c->device_nodes, (std::vector<std::string>{"/dev/nvidiactl", "/dev/nvidia-uvm",
                                                       "/dev/nvidia-uvm-tools"}));
  EXPECT_FALSE(c->cdi);
  EXPECT_EQ(c->probe_listen, "");
  auto p = ParseNodeAgentConfig("token: t\nprobe_listen: 0.0.0.0:7071\n", "a");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->probe_listen, "0.0.0.0:7071");
  EXPECT_EQ(ParseNodeAgentConfig("token: t\nprobe_listen: x\n", "a").status().message(),
            "a: probe_listen: must be host:port");
  EXPECT_EQ(ParseNodeAgentConfig("token: t\ndevice_nodes: [dev/x]\n", "a").status().message(),
            "a: device_nodes: 'dev/x' is not an absolute path");
  EXPECT_EQ(ParseNodeAgentConfig("token: t\ndaemon_url: 127.0.0.1:7070\n", "a").status().message(),
            "a: daemon_url: must start with http:// or https://");
  EXPECT_EQ(
      ParseNodeAgentConfig("token: t\ndaemon_url: http://127.0.0.1:0\n", "a").status().message(),
      "a: daemon_url: 'http://127.0.0.1:0' is not a daemon address: port '0' is not a number "
      "from 1 to 65535; expected http://HOST:PORT, e.g. http://127.0.0.1:7070");
  EXPECT_EQ(ParseNodeAgentConfig("", "a").status().message(),
            "a: token_file: the daemon's token is missing: give token_file or token");
  EXPECT_EQ(LoadNodeAgentConfig("/nonexistent.yaml").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace migsched::k8s
