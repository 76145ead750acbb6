#include "daemon/config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "sched/policy.h"
#include "testing/status_matchers.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

TEST(DaemonConfigTest, MinimalConfigGetsTheDocumentedDefaults) {
  auto c = ParseDaemonConfig("state_dir: /tmp/x\n", "c.yaml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  // Defaults from config.h's key list.
  EXPECT_EQ(c->listen, "127.0.0.1:7070");
  EXPECT_EQ(c->state_dir, "/tmp/x");
  EXPECT_EQ(c->token_file, "");
  EXPECT_EQ(c->backend, "fake");
  EXPECT_EQ(c->tick_ms, 100);
  EXPECT_EQ(c->on_shutdown, "leave");
  EXPECT_EQ(c->max_body_bytes, 1u << 20);
  EXPECT_EQ(c->policy, "full");
  EXPECT_DOUBLE_EQ(c->scheduler.threshold, 1);  // full's: no lazy/busy split (policies.md)
}

TEST(DaemonConfigTest, EveryKeyIsRead) {
  const std::string yaml = R"(
listen: "0.0.0.0:8080"
state_dir: /var/lib/m
token_file: /etc/m/token
backend: fake
gpus: 4xA100-40GB
nvml_library: /opt/libnvidia-ml.so.1
tick_ms: 20
kill_grace_s: 2.5
on_shutdown: drain
max_body_bytes: 4096
checkpoint_command: [ckpt, "{pid}", "{dir}"]
restore_command: [restore, "{dir}"]
pcie_in_lazy_busy: true
pcie_saturation_gbps: 20
fake: {fail_create: 2, destroy_in_use: 3, disappear_gpu: 1}
job_user: nobody
job_users: [daemon, bin]
work_dir: /srv/work
retention_s: 3600
reservation_ttl_s: 30
reservation_max_ttl_s: 90
node_name: n7
idle_timeout_s: 2
request_timeout_s: 3
max_connections: 64
header_timeout_s: 2.5
body_timeout_s: 7
max_connections_per_peer: 9
store_check_s: 1.5
scheduler:
  policy: lb
  threshold: 0.3
  metric: blocked-placements
  reserve-full: 1
  max_skip_seconds: 60
  max-wait: 600
  idle_ttl: 30
  defrag-interval: 0
  max_moves_per_pass: 2
  migration-cooldown: 10
)";
  auto c = ParseDaemonConfig(yaml, "c.yaml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->listen, "0.0.0.0:8080");
  EXPECT_EQ(c->token_file, "/etc/m/token");
  EXPECT_EQ(c->token,
            "");  // token and token_file exclude each other: InlineTokensMustBeLongAndPlain
  EXPECT_EQ(c->job_user, "nobody");
  EXPECT_EQ(c->job_users, (std::vector<std::string>{"daemon", "bin"}));
  EXPECT_EQ(c->WorkDir(), "/srv/work");
  EXPECT_DOUBLE_EQ(c->retention_s, 3600);
  EXPECT_DOUBLE_EQ(c->reservation_ttl_s, 30);
  EXPECT_DOUBLE_EQ(c->reservation_max_ttl_s, 90);
  EXPECT_EQ(c->node_name, "n7");
  EXPECT_DOUBLE_EQ(c->idle_timeout_s, 2);
  EXPECT_DOUBLE_EQ(c->request_timeout_s, 3);
  EXPECT_EQ(c->max_connections, 64);
  EXPECT_DOUBLE_EQ(c->header_timeout_s, 2.5);
  EXPECT_DOUBLE_EQ(c->body_timeout_s, 7);
  EXPECT_EQ(c->max_connections_per_peer, 9);
  EXPECT_EQ(c->max_unauthenticated_connections, 16);  // not given: 64 / 4
  EXPECT_DOUBLE_EQ(c->store_check_s, 1.5);
  EXPECT_EQ(c->fake_gpus, "4xA100-40GB");
  EXPECT_EQ(c->nvml_library, "/opt/libnvidia-ml.so.1");
  EXPECT_EQ(c->tick_ms, 20);
  EXPECT_DOUBLE_EQ(c->kill_grace_s, 2.5);
  EXPECT_EQ(c->on_shutdown, "drain");
  EXPECT_EQ(c->max_body_bytes, 4096u);
  EXPECT_EQ(c->checkpoint_command, (std::vector<std::string>{"ckpt", "{pid}", "{dir}"}));
  EXPECT_EQ(c->restore_command, (std::vector<std::string>{"restore", "{dir}"}));
  EXPECT_TRUE(c->pcie_in_lazy_busy);
  EXPECT_DOUBLE_EQ(c->pcie_saturation_gbps, 20);
  EXPECT_EQ(c->fake.fail_create, 2);
  EXPECT_EQ(c->fake.destroy_in_use, 3);
  EXPECT_EQ(c->fake.disappear_gpu, 1);
  EXPECT_EQ(c->policy, "lb");
  EXPECT_DOUBLE_EQ(c->scheduler.threshold, 0.3);
  EXPECT_EQ(c->scheduler.metric, "blocked-placements");
  EXPECT_EQ(c->scheduler.reserve_full, 1);
  EXPECT_DOUBLE_EQ(c->scheduler.max_skip_seconds, 60);
  EXPECT_DOUBLE_EQ(c->scheduler.max_wait_s, 600);
  EXPECT_DOUBLE_EQ(c->scheduler.idle_ttl_s, 30);
  EXPECT_DOUBLE_EQ(c->scheduler.migration.defrag_interval_s, 0);
  EXPECT_EQ(c->scheduler.migration.max_moves_per_pass, 2);
  EXPECT_DOUBLE_EQ(c->scheduler.migration.cooldown_s, 10);
}

TEST(DaemonConfigTest, NvmlGpusAreAListOrAllOrCommaSeparated) {
  struct Case {
    std::string gpus;
    std::vector<std::string> want;
  } cases[] = {
      {"[0, 2]", {"0", "2"}},
      {"[\"GPU-abc\"]", {"GPU-abc"}},
      {"all", {}},  // "all" = every GPU = the empty selection
      {"\"1, 3\"", {"1", "3"}},
  };
  for (const Case& k : cases) {
    auto c = ParseDaemonConfig("state_dir: /s\nbackend: nvml\ngpus: " + k.gpus + "\n", "c.yaml");
    ASSERT_TRUE(c.ok()) << k.gpus << ": " << c.status().ToString();
    EXPECT_EQ(c->nvml_gpus, k.want) << k.gpus;
  }
}

TEST(DaemonConfigTest, BadConfigsNameTheFileLineAndKey) {
  struct Case {
    std::string yaml;
    std::string want;  // the exact message
  } cases[] = {
      {"", "c.yaml: the config is empty; state_dir is required"},
      {"listen: x\n", "c.yaml: state_dir is required (e.g. state_dir: /var/lib/migsched)"},
      {"state_dir: /s\nfoo: 1\n",
       "c.yaml:2: unknown key 'foo' (known: allow_root_jobs, backend, body_timeout_s, "
       "checkpoint_command, fake, gpus, header_timeout_s, idle_timeout_s, job_uids, job_user, "
       "job_users, kill_grace_s, listen, "
       "max_body_bytes, max_connections, max_connections_per_peer, "
       "max_unauthenticated_connections, node_name, nvml_library, on_shutdown, "
       "pcie_in_lazy_busy, pcie_saturation_gbps, request_timeout_s, reservation_max_ttl_s, "
       "reservation_ttl_s, restore_command, retention_s, scheduler, state_dir, store_check_s, "
       "tick_ms, token, token_file, work_dir)"},
      {"state_dir: /s\ntick_ms: fast\n", "c.yaml:2: key 'tick_ms' must be an integer, got 'fast'"},
      // Regression: work_dir equal to state_dir was taken; the work dir is made 0711 for the
      // jobs' users, and the next start refused the state dir's mode.
      {"state_dir: /s\nwork_dir: /s/\n",
       "c.yaml:2: work_dir /s/ and state_dir /s must be apart: jobs' users pass through the work "
       "dir, and the state dir is the daemon's alone (mode 0700); e.g. work_dir: /s-work"},
      {"state_dir: /s/state\nwork_dir: /s\n",
       "c.yaml:2: work_dir /s and state_dir /s/state must be apart: jobs' users pass through the "
       "work dir, and the state dir is the daemon's alone (mode 0700); e.g. work_dir: "
       "/s/state-work"},
      {"state_dir: /s\nwork_dir: /s/jobs\n",
       "c.yaml:2: work_dir /s/jobs and state_dir /s must be apart: jobs' users pass through the "
       "work dir, and the state dir is the daemon's alone (mode 0700); e.g. work_dir: /s-work"},
      {"state_dir: /s\ntick_ms: 1.5\n", "c.yaml:2: key 'tick_ms' must be an integer, got '1.5'"},
      {"state_dir: /s\nkill_grace_s: [1]\n",
       "c.yaml:2: key 'kill_grace_s' must be a number, got a list"},
      {"state_dir: /s\npcie_in_lazy_busy: maybe\n",
       "c.yaml:2: key 'pcie_in_lazy_busy' must be true or false, got 'maybe'"},
      {"state_dir: [a]\n", "c.yaml:1: key 'state_dir' must be a string, got a list"},
      {"state_dir: /s\ncheckpoint_command: ckpt\n",
       "c.yaml:2: key 'checkpoint_command' must be a list of strings, got a scalar"},
      {"state_dir: /s\ncheckpoint_command: [a, [b]]\n",
       "c.yaml:2: key 'checkpoint_command[1]' must be a string, got a list"},
      {"state_dir: /s\nbackend: cuda\n", "c.yaml:2: backend must be fake or nvml, got 'cuda'"},
      {"state_dir: /s\nlisten: 7070\n",
       "c.yaml:2: listen must be HOST:PORT (e.g. 127.0.0.1:7070), got '7070'"},
      {"state_dir: /s\nlisten: \"h:70000\"\n",
       "c.yaml:2: listen: port must be an integer from 0 to 65535, got '70000'"},
      // Regression (config_range_error_without_line): a value out of its range named the file
      // and not the line of its key.
      {"state_dir: /s\ntick_ms: 0\n", "c.yaml:2: tick_ms must be from 1 to 60000, got 0"},
      {"state_dir: /s\non_shutdown: wait\n",
       "c.yaml:2: on_shutdown must be leave or drain, got 'wait'"},
      // Regression (config_integer_range_read_as_type): an integer out of the key's range was
      // called "not an integer".
      {"state_dir: /s\nmax_body_bytes: -1\n",
       "c.yaml:2: key 'max_body_bytes' must be an integer >= 0, got '-1'"},
      {"state_dir: /s\ntick_ms: 99999999999\n",
       "c.yaml:2: key 'tick_ms' must be an integer from -2147483648 to 2147483647, got "
       "'99999999999'"},
      {"state_dir: /s\ntick_ms: 99999999999999999999\n",
       "c.yaml:2: key 'tick_ms' must be an integer from -2147483648 to 2147483647, got "
       "'99999999999999999999'"},
      {"state_dir: /s\nfake: {fail: 1}\n",
       "c.yaml:2: unknown key 'fake.fail' (known: destroy_in_use, disappear_gpu, fail_create)"},
      {"state_dir: /s\nfake: 3\n", "c.yaml:2: key 'fake' must be a mapping, got a scalar"},
      {"state_dir: /s\nscheduler: {policy: magic}\n",
       "c.yaml: scheduler.policy: unknown policy 'magic' (known: first-fit, lb, lb+frag, full, "
       "best-fit, driver-default, mfi, largest-free-run, static, static-all-balanced, frag-aware "
       "(= lb+frag))"},
      {"state_dir: /s\nreservation_ttl_s: 900\n",
       "c.yaml:2: reservation_ttl_s must be > 0 and at most reservation_max_ttl_s, got 900 and "
       "600"},
      {"state_dir: /s\nmax_connections: 0\n", "c.yaml:2: max_connections must be >= 1, got 0"},
      {"state_dir: /s\nmax_connections: 8\nmax_unauthenticated_connections: 9\n",
       "c.yaml:3: max_unauthenticated_connections must be from 1 to max_connections (8), got 9"},
      {"state_dir: /s\nheader_timeout_s: 0\n",
       "c.yaml:2: header_timeout_s and body_timeout_s must be > 0 and at most 86400, got 0 and 30"},
      // Regression absurd_time_spans_accepted: a grace of 1e30 s never sent the SIGKILL.
      {"state_dir: /s\nkill_grace_s: 1e30\n",
       "c.yaml:2: kill_grace_s must be from 0 to 86400 (a day), got 1e+30"},
      {"state_dir: /s\nbody_timeout_s: 1e30\n",
       "c.yaml:2: header_timeout_s and body_timeout_s must be > 0 and at most 86400, got 5 and "
       "1e+30"},
      {"state_dir: /s\njob_uids: 5-4\n",
       "c.yaml:2: job_uids must be FIRST-LAST with 1000 <= FIRST <= LAST < 2147483647 (e.g. "
       "61184-65519), got '5-4'"},
      {"state_dir: /s\nmax_connections_per_peer: 0\n",
       "c.yaml:2: max_connections_per_peer must be >= 1, got 0"},
      // The table of scheduler options' checks (sched/option_table.h), the key as written.
      {"state_dir: /s\nscheduler: {threshold: high}\n",
       "c.yaml:2: scheduler.threshold must be a number in [0, 1], got 'high'"},
      {"state_dir: /s\nscheduler: {max_moves_per_pass: 1.5}\n",
       "c.yaml:2: scheduler.max_moves_per_pass must be an integer in 0..2147483647, got '1.5'"},
      {"state_dir: /s\nscheduler: {migration-gbps: 0}\n",
       "c.yaml:2: scheduler.migration-gbps must be a finite number > 0, got '0'"},
      {"state_dir: /s\nscheduler: {metric: entropy}\n",
       "c.yaml:2: scheduler.metric must be one of fragcost, blocked-placements, demand-weighted, "
       "got 'entropy'"},
      {"state_dir: /s\n  bad: [\n", ""},  // a YAML syntax error: only the prefix is checked
      // Regression (trial_unclosed_quote_swallowed_keys): yaml-cpp took the rest of the file
      // into the node's name, and on_shutdown stayed leave without a word.
      {"listen: \"127.0.0.1:18110\"\nstate_dir: /s\nnode_name: \"n1\nkill_grace_s: 2\n"
       "on_shutdown: drain\n",
       "c.yaml:3: the quoted value that opens at column 12 is not closed on its line; close it (a "
       "value of this file is written on one line)"},
  };
  for (const Case& k : cases) {
    auto c = ParseDaemonConfig(k.yaml, "c.yaml");
    ASSERT_FALSE(c.ok()) << k.yaml;
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument) << k.yaml;
    if (k.want.empty()) {
      EXPECT_EQ(c.status().message().rfind("c.yaml:", 0), 0u) << c.status().message();
      EXPECT_NE(c.status().message().find("YAML syntax error"), std::string::npos)
          << c.status().message();
    } else {
      EXPECT_EQ(c.status().message(), k.want) << k.yaml;
    }
  }
}

// Where(key): the file and the line the key was written on, for the errors only the start can
// find (a cluster spec against the catalog, a user against the system). Regression
// (trial_start_errors_without_line): `gpus: 2xA100-41GB` said "config key gpus (fake backend)"
// without the file or the line.
TEST(DaemonConfigTest, KeysKeepTheirLinesForTheStartsErrors) {
  auto c = ParseDaemonConfig("# a comment\nstate_dir: /s\n\ngpus: 2xA100-41GB\nnode_name: n1\n",
                             "c.yaml");
  ASSERT_OK(c);
  EXPECT_EQ(c->Where("gpus"), "c.yaml:4");
  EXPECT_EQ(c->Where("state_dir"), "c.yaml:2");
  EXPECT_EQ(c->Where("node_name"), "c.yaml:5");
  EXPECT_EQ(c->Where("listen"), "c.yaml");  // not written
  EXPECT_EQ(DaemonConfig().Where("gpus"), "config");
}

// Regression work_dir_symlinked_to_state_dir: a work_dir that is a symlink to the state dir
// passed the lexical check; the first job made the state dir 0711 and the next start refused it.
TEST(DaemonConfigTest, WorkDirThatLinksToTheStateDirIsRefused) {
  const std::filesystem::path dir = migsched::testing::MakeTempDir("workdir-link");
  std::filesystem::create_directory(dir / "state");
  std::filesystem::create_directory_symlink(dir / "state", dir / "work");
  const std::string state = (dir / "state").string(), work = (dir / "work").string();
  auto c = ParseDaemonConfig("state_dir: " + state + "\nwork_dir: " + work + "\n", "c.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(),
            "c.yaml:2: work_dir " + work + " and state_dir " + state +
                " must be apart: jobs' users pass through the work dir, and the state dir is the "
                "daemon's alone (mode 0700); e.g. work_dir: " +
                state + "-work");
  // A link to a directory beside it is fine.
  std::filesystem::create_directory(dir / "jobs");
  std::filesystem::create_directory_symlink(dir / "jobs", dir / "jobs-link");
  EXPECT_TRUE(
      ParseDaemonConfig(
          "state_dir: " + state + "\nwork_dir: " + (dir / "jobs-link").string() + "\n", "c.yaml")
          .ok());
}

TEST(DaemonConfigTest, SchedulerKeysInKebabAndSnakeCaseAreTheSame) {
  const std::pair<std::string, std::string> pairs[] = {
      {"reserve-full: 2", "reserve_full: 2"},
      {"max-skip-seconds: 5", "max_skip_seconds: 5"},
      {"max-wait: 7", "max_wait: 7"},
      {"idle-ttl: 9", "idle_ttl: 9"},
      {"defrag-interval: 11", "defrag_interval: 11"},
      {"max-moves-per-pass: 3", "max_moves_per_pass: 3"},
      {"migration-cooldown: 13", "migration_cooldown: 13"},
  };
  for (const auto& [kebab, snake] : pairs) {
    auto a = ParseDaemonConfig("state_dir: /s\nscheduler:\n  " + kebab + "\n", "c.yaml");
    auto b = ParseDaemonConfig("state_dir: /s\nscheduler:\n  " + snake + "\n", "c.yaml");
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    const SchedulerOptions& x = a->scheduler;
    const SchedulerOptions& y = b->scheduler;
    EXPECT_EQ(x.reserve_full, y.reserve_full) << kebab;
    EXPECT_EQ(x.max_skip_seconds, y.max_skip_seconds) << kebab;
    EXPECT_EQ(x.max_wait_s, y.max_wait_s) << kebab;
    EXPECT_EQ(x.idle_ttl_s, y.idle_ttl_s) << kebab;
    EXPECT_EQ(x.migration.defrag_interval_s, y.migration.defrag_interval_s) << kebab;
    EXPECT_EQ(x.migration.max_moves_per_pass, y.migration.max_moves_per_pass) << kebab;
    EXPECT_EQ(x.migration.cooldown_s, y.migration.cooldown_s) << kebab;
    // And the option actually changed from its default (the value is odd on purpose).
    const SchedulerOptions d;
    EXPECT_FALSE(x.reserve_full == d.reserve_full && x.max_skip_seconds == d.max_skip_seconds &&
                 x.max_wait_s == d.max_wait_s && x.idle_ttl_s == d.idle_ttl_s &&
                 x.migration.defrag_interval_s == d.migration.defrag_interval_s &&
                 x.migration.max_moves_per_pass == d.migration.max_moves_per_pass &&
                 x.migration.cooldown_s == d.migration.cooldown_s)
        << kebab;
  }
}

TEST(DaemonConfigTest, DefaultConfigParsesToTheDefaults) {
  auto c = ParseDaemonConfig(DefaultDaemonConfigYaml(), "default");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const DaemonConfig d;
  EXPECT_EQ(c->listen, d.listen);
  EXPECT_EQ(c->state_dir, "/var/lib/migsched");
  EXPECT_EQ(c->token_file, d.token_file);
  EXPECT_EQ(c->backend, d.backend);
  EXPECT_EQ(c->fake_gpus, d.fake_gpus);
  EXPECT_EQ(c->nvml_library, d.nvml_library);
  EXPECT_EQ(c->tick_ms, d.tick_ms);
  EXPECT_EQ(c->kill_grace_s, d.kill_grace_s);
  EXPECT_EQ(c->on_shutdown, d.on_shutdown);
  EXPECT_EQ(c->max_body_bytes, d.max_body_bytes);
  EXPECT_EQ(c->pcie_in_lazy_busy, d.pcie_in_lazy_busy);
  EXPECT_EQ(c->pcie_saturation_gbps, d.pcie_saturation_gbps);
  EXPECT_EQ(c->fake.fail_create, d.fake.fail_create);
  EXPECT_EQ(c->fake.destroy_in_use, d.fake.destroy_in_use);
  EXPECT_EQ(c->fake.disappear_gpu, d.fake.disappear_gpu);
  EXPECT_EQ(c->policy, d.policy);
  EXPECT_EQ(c->job_user, d.job_user);
  EXPECT_EQ(c->retention_s, d.retention_s);
  EXPECT_EQ(c->reservation_ttl_s, d.reservation_ttl_s);
  EXPECT_EQ(c->reservation_max_ttl_s, d.reservation_max_ttl_s);
  EXPECT_EQ(c->idle_timeout_s, d.idle_timeout_s);
  EXPECT_EQ(c->request_timeout_s, d.request_timeout_s);
  EXPECT_EQ(c->max_connections, d.max_connections);
  EXPECT_EQ(c->scheduler.threshold, 1);  // full's, as the registry completes it
  // The printed scheduler section is `full`'s as the registry completes it
  // (docs/results.md section 3: the demand-weighted metric).
  EXPECT_EQ(c->scheduler.metric, "demand-weighted");
  EXPECT_EQ(c->scheduler.reserve_full, d.scheduler.reserve_full);
  EXPECT_EQ(c->scheduler.migration.defrag_interval_s, d.scheduler.migration.defrag_interval_s);
  EXPECT_EQ(c->scheduler.migration.max_moves_per_pass, d.scheduler.migration.max_moves_per_pass);
  EXPECT_EQ(c->scheduler.migration.cooldown_s, d.scheduler.migration.cooldown_s);
}

// Regression (full_in_the_daemon_is_not_full_in_the_simulator): the daemon
// ran `full` with fragcost while the simulator applied full's own defaults
// (demand-weighted). Both now take them from the policy registry; a key the
// file gives keeps its value.
TEST(DaemonConfigTest, PolicyDefaultsComeFromTheRegistry) {
  auto full = ParseDaemonConfig("state_dir: /s\n", "c.yaml");
  ASSERT_TRUE(full.ok()) << full.status().ToString();
  const SchedulerOptions sim = OptionsForPolicy("full", SchedulerOptions{}, ExplicitOptions{});
  EXPECT_EQ(full->scheduler.metric, sim.metric);
  EXPECT_EQ(full->scheduler.metric, "demand-weighted");
  EXPECT_EQ(full->scheduler.reserve_full, sim.reserve_full);
  EXPECT_EQ(full->scheduler.max_skip_seconds, sim.max_skip_seconds);
  EXPECT_EQ(full->scheduler.reservation_slack, sim.reservation_slack);
  // full_policy.h, docs/results.md section 3: evacuation queue, guard after 1800 s, slack 1.
  EXPECT_EQ(full->scheduler.evacuation, EvacuationScope::kQueue);
  EXPECT_EQ(full->scheduler.max_skip_seconds, 1800);
  EXPECT_EQ(full->scheduler.reservation_slack, 1);
  auto given = ParseDaemonConfig(
      "state_dir: /s\nscheduler: {metric: fragcost, evacuation: off, max-skip-seconds: -1}\n",
      "c.yaml");
  ASSERT_TRUE(given.ok());
  EXPECT_EQ(given->scheduler.metric, "fragcost");
  EXPECT_EQ(given->scheduler.evacuation, EvacuationScope::kOff);
  EXPECT_TRUE(given->explicit_options.evacuation);
  EXPECT_LT(given->scheduler.max_skip_seconds, 0);  // the guard turned off stays off
  EXPECT_EQ(given->scheduler.reservation_slack, 1);
  auto lb = ParseDaemonConfig("state_dir: /s\nscheduler: {policy: lb+frag}\n", "c.yaml");
  ASSERT_TRUE(lb.ok());
  EXPECT_EQ(lb->scheduler.metric, "fragcost");  // only `full` has defaults of its own
  EXPECT_EQ(lb->scheduler.evacuation, EvacuationScope::kOff);
  EXPECT_LT(lb->scheduler.max_skip_seconds, 0);
  EXPECT_EQ(lb->scheduler.reservation_slack, 0);
}

// Regression (inline_token_of_any_length): an inline token of any length, or
// blank, was accepted.
TEST(DaemonConfigTest, InlineTokensMustBeLongAndPlain) {
  for (const char* token : {"\"\"", "abc", "\"0123456789abcdef0123456789abcde\""}) {
    auto c = ParseDaemonConfig(std::string("state_dir: /s\ntoken: ") + token + "\n", "c.yaml");
    ASSERT_FALSE(c.ok()) << token;
    EXPECT_NE(c.status().message().find("a token needs at least 32"), std::string::npos)
        << c.status().message();
  }
  auto spaced =
      ParseDaemonConfig("state_dir: /s\ntoken: \"0123456789abcdef 0123456789abcdef\"\n", "c.yaml");
  ASSERT_FALSE(spaced.ok());
  EXPECT_NE(spaced.status().message().find("a character not allowed"), std::string::npos);
  auto inline_token =
      ParseDaemonConfig("state_dir: /s\ntoken: 0123456789abcdef0123456789abcdef\n", "c.yaml");
  ASSERT_TRUE(inline_token.ok());
  EXPECT_EQ(inline_token->token, "0123456789abcdef0123456789abcdef");
  // Regression token_and_token_file: with both, the inline token was served and the file ignored,
  // so `migsched jobs --token-file` with that file got 401. Refused now.
  auto both = ParseDaemonConfig(
      "state_dir: /s\ntoken_file: /etc/m/token\ntoken: 0123456789abcdef0123456789abcdef\n",
      "c.yaml");
  ASSERT_FALSE(both.ok());
  EXPECT_EQ(both.status().message(),
            "c.yaml:2: token and token_file are both given (/etc/m/token): give one; the daemon "
            "serves the inline token and a client reading the file would be refused");
}

// Regression (config_key_given_twice): a key written twice (listen: twice) was taken silently,
// the last one winning; now refused at every level, naming both lines.
// A review found the daemon's own switches refused `ON` and `Yes` while the scheduler's options in
// the same file took them: one rule now (OnOffWord, core/text.h), in any case.
TEST(DaemonConfigTest, SwitchesTakeTheWordsOfTheSchedulerOptions) {
  for (const char* yes : {"true", "ON", "Yes", "TRUE"}) {
    auto c = ParseDaemonConfig(std::string("state_dir: /s\npcie_in_lazy_busy: ") + yes +
                                   "\nscheduler: {migration: " + yes + "}\n",
                               "c.yaml");
    ASSERT_TRUE(c.ok()) << yes << ": " << c.status().message();
    EXPECT_TRUE(c->pcie_in_lazy_busy) << yes;
  }
  for (const char* no : {"false", "OFF", "No"}) {
    auto c =
        ParseDaemonConfig(std::string("state_dir: /s\npcie_in_lazy_busy: ") + no + "\n", "c.yaml");
    ASSERT_TRUE(c.ok()) << no << ": " << c.status().message();
    EXPECT_FALSE(c->pcie_in_lazy_busy) << no;
  }
  EXPECT_FALSE(ParseDaemonConfig("state_dir: /s\npcie_in_lazy_busy: y\n", "c.yaml").ok());
}

TEST(DaemonConfigTest, KeyGivenTwiceIsRefused) {
  struct Case {
    std::string yaml;
    std::string want;  // the exact message
  } cases[] = {
      {"state_dir: /s\nlisten: 127.0.0.1:1\nlisten: 127.0.0.1:2\n",
       "c.yaml:3: key 'listen' is given twice (lines 2 and 3); keep one"},
      {"state_dir: /s\nfake:\n  fail_create: 1\n  fail_create: 2\n",
       "c.yaml:4: key 'fake.fail_create' is given twice (lines 3 and 4); keep one"},
      {"{state_dir: /s, tick_ms: 5, state_dir: /t}\n",
       "c.yaml:1: key 'state_dir' is given twice (both on line 1); keep one"},
      // The scheduler section's own check (one option, two spellings) still answers there.
      {"state_dir: /s\nscheduler:\n  policy: lb\n  policy: full\n",
       "c.yaml:4: scheduler.policy is given twice (as 'policy' and 'policy'); keep one"},
  };
  for (const Case& k : cases) {
    auto c = ParseDaemonConfig(k.yaml, "c.yaml");
    ASSERT_FALSE(c.ok()) << k.yaml;
    EXPECT_EQ(c.status().message(), k.want) << k.yaml;
  }
}

// Regression: a key with no value (`tick_ms:` and then the next key) was reported at the next
// key's line, or past the end of the file when it was the last; yaml-cpp marks an empty value
// where the next token begins. Now at the key's own line, at every level.
TEST(DaemonConfigTest, KeyWithNoValueIsReportedAtItsOwnLine) {
  struct Case {
    std::string yaml;
    std::string want;  // the exact message
  } cases[] = {
      {"state_dir: /s\ntick_ms:\nlisten: 127.0.0.1:7070\n",
       "c.yaml:2: key 'tick_ms' must be an integer, got nothing (null)"},
      {"state_dir: /s\ntick_ms:\n\n\n# the end\n",
       "c.yaml:2: key 'tick_ms' must be an integer, got nothing (null)"},
      {"state_dir: /s\nfake:\nlisten: 127.0.0.1:7070\n",
       "c.yaml:2: key 'fake' must be a mapping, got nothing (null)"},
      {"state_dir: /s\nfake:\n  fail_create:\n  destroy_in_use: 1\n",
       "c.yaml:3: key 'fake.fail_create' must be an integer, got nothing (null)"},
      {"state_dir: /s\nscheduler:\n  threshold:\n  metric: fragcost\n",
       "c.yaml:3: scheduler.threshold must be a number in [0, 1], got nothing (null)"},
      // A value written on the key's line keeps its own mark.
      {"state_dir: /s\ntick_ms: ~\nlisten: 127.0.0.1:7070\n",
       "c.yaml:2: key 'tick_ms' must be an integer, got nothing (null)"},
      {"state_dir: /s\nkill_grace_s:\n  [1]\n",
       "c.yaml:3: key 'kill_grace_s' must be a number, got a list"},
  };
  for (const Case& k : cases) {
    auto c = ParseDaemonConfig(k.yaml, "c.yaml");
    ASSERT_FALSE(c.ok()) << k.yaml;
    EXPECT_EQ(c.status().message(), k.want) << k.yaml;
  }
}

TEST(DaemonConfigTest, LoadNamesAMissingFile) {
  auto c = LoadDaemonConfig("/nonexistent/migsched.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(c.status().message(), "cannot open config file /nonexistent/migsched.yaml");
  const std::string path = testing::WriteTempFile("d.yaml", "state_dir: /s\nbogus: 1\n");
  auto d = LoadDaemonConfig(path);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().message().rfind(path + ":2: unknown key 'bogus'", 0), 0u)
      << d.status().message();
}

}  // namespace
}  // namespace migsched
