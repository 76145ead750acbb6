// Every driver runs the same defaults: the scheduler options of a minimal configuration of the
// node daemon, the Slurm controller and the Kubernetes extender, and of `migsched simulate`
// without options, are those the policy registry gives `full` (sched/policy.h PolicyOptions),
// option by option through the one table (sched/option_table.h). Independent reference: the
// registry's own answer for an empty set of explicit options, never one driver's output.
#include <gtest/gtest.h>

#include <string>

#include "cli/sim_flags.h"
#include "daemon/config.h"
#include "k8s/config.h"
#include "sched/option_table.h"
#include "sched/policy.h"
#include "slurm/controller_config.h"

namespace migsched {
namespace {

// The options of `got` that differ from `want`, as "name: got != want" (empty: none).
std::string Differences(const SchedulerOptions& got, const SchedulerOptions& want) {
  std::string out;
  for (const SchedulerOptionSpec& s : SchedulerOptionTable()) {
    if (s.get(got) != s.get(want)) {
      out += s.name + ": " + s.get(got) + " != " + s.get(want) + "; ";
    }
  }
  return out;
}

TEST(DriverDefaultsTest, EveryDriverRunsTheRegistrysDefaultsOfFull) {
  StatusOr<SchedulerOptions> want = PolicyOptions("full", SchedulerOptions{}, ExplicitOptions{});
  ASSERT_TRUE(want.ok()) << want.status().ToString();

  StatusOr<DaemonConfig> daemon = ParseDaemonConfig("state_dir: /tmp/x\n", "serve.yaml");
  ASSERT_TRUE(daemon.ok()) << daemon.status().ToString();
  EXPECT_EQ(daemon->policy, "full");
  EXPECT_EQ(Differences(daemon->scheduler, *want), "") << "the node daemon";

  StatusOr<slurm::ControllerConfig> controller = slurm::ParseControllerConfig(
      "nodes:\n  - {name: n1, url: \"http://a\", token: t}\n", "c.yaml");
  ASSERT_TRUE(controller.ok()) << controller.status().ToString();
  EXPECT_EQ(controller->policy, "full");
  EXPECT_EQ(Differences(controller->PolicyOptions(), *want), "") << "the Slurm controller";

  StatusOr<k8s::ExtenderConfig> extender = k8s::ParseExtenderConfig(
      "node_agents: {namespace: ns, label_selector: app=agent}\ntoken: t\n", "extender.yaml");
  ASSERT_TRUE(extender.ok()) << extender.status().ToString();
  StatusOr<k8s::ExtenderPolicy> policy = k8s::PolicyOf(*extender, "extender.yaml");
  ASSERT_TRUE(policy.ok()) << policy.status().ToString();
  EXPECT_EQ(policy->policy, "full");
  EXPECT_EQ(Differences(policy->scheduler, *want), "") << "the Kubernetes extender";

  // `migsched simulate --policy full` without options: the setup's options as the simulator's
  // commands take them (SimSetup::SchedulerFor).
  EXPECT_EQ(Differences(cli::SimSetup{}.SchedulerFor("full"), *want), "") << "the simulator";
}

}  // namespace
}  // namespace migsched
