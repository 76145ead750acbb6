#include "slurm/gres_config.h"

#include <gtest/gtest.h>

#include "testing/test_util.h"

namespace migsched::slurm {
namespace {

using migsched::testing::Model;

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

bool Contains(const std::string& text, const std::string& line) {
  return text.find(line + "\n") != std::string::npos;
}

// 3 nodes x 2 A100 40GB. Per GPU (by hand from the placement grid): 1g.5gb 7,
// 1g.5gb+me 1, 1g.10gb 4, 2g.10gb 3, 3g.20gb 2, 4g.20gb 1, 7g.40gb 1; per node
// twice that; the pad (gres_config.h) their sum, 2 x 19 = 38.
TEST(GresConfigTest, ThreeNodesOfTwoA100s) {
  const GpuModel* a100 = &Model("A100-40GB");
  std::vector<NodeGroup> groups = {{{"n1", "n2", "n3"}, {a100, a100}, "2xA100-40GB"}};
  GresConfigOptions o;
  ConfigTableCache tables;
  auto conf = SlurmConfLines(groups, o, &tables);
  ASSERT_TRUE(conf.ok()) << conf.status().ToString();
  const std::string gres =
      "mig:1g.5gb:14,mig:1g.5gb+me:2,mig:1g.10gb:8,mig:2g.10gb:6,mig:3g.20gb:4,mig:4g.20gb:2,"
      "mig:7g.40gb:2,mig:migsched-pad:38";
  // gpu too: the clients check --gres names against GresTypes before job_submit.lua runs.
  EXPECT_TRUE(Contains(*conf, "GresTypes=mig,gpu")) << *conf;
  EXPECT_TRUE(Contains(*conf, "NodeName=n[1-3] Gres=" + gres)) << *conf;
  EXPECT_TRUE(Contains(*conf, "NodeName=migsched-hold[1-3] Gres=" + gres + " State=FUTURE"))
      << *conf;
  EXPECT_TRUE(Contains(*conf, "PartitionName=mig Nodes=n[1-3],migsched-hold[1-3] State=DOWN"))
      << *conf;
  EXPECT_TRUE(Contains(*conf, "PrologSlurmctld=/usr/local/lib/migsched/prolog-slurmctld"));
  EXPECT_TRUE(Contains(*conf, "EpilogSlurmctld=/usr/local/lib/migsched/epilog-slurmctld"));
  EXPECT_TRUE(Contains(*conf, "TaskProlog=/usr/local/lib/migsched/task-prolog"));
  // Never the node Prolog/Epilog (their failures drain the node).
  EXPECT_EQ(conf->find("\nProlog="), std::string::npos);
  EXPECT_EQ(conf->find("\nEpilog="), std::string::npos);

  auto gconf = GresConfLines(groups, o, &tables);
  ASSERT_TRUE(gconf.ok());
  EXPECT_TRUE(Contains(*gconf, "NodeName=n[1-3] Name=mig Type=1g.5gb Count=14")) << *gconf;
  EXPECT_TRUE(Contains(*gconf, "NodeName=n[1-3] Name=mig Type=3g.20gb Count=4"));
  EXPECT_TRUE(Contains(*gconf, "NodeName=n[1-3] Name=mig Type=7g.40gb Count=2"));
  EXPECT_TRUE(Contains(*gconf, "NodeName=n[1-3] Name=mig Type=migsched-pad Count=38"));
}

// Two groups with other GPUs: each its own lines; the placeholders hold the
// larger count of each profile; options change names and add attributes.
TEST(GresConfigTest, GroupsWithOtherGpusAndOptions) {
  const GpuModel* a100 = &Model("A100-40GB");
  const GpuModel* a30 = &Model("A30");
  std::vector<NodeGroup> groups = {{{"gpu01", "gpu02"}, {a100}, "1xA100-40GB"},
                                   {{"a30n1"}, {a30, a30, a30, a30}, "4xA30"}};
  GresConfigOptions o;
  o.gres_name = "mg";
  o.partition = "gpu";
  o.placeholders = 2;
  o.node_attrs = "CPUs=8 RealMemory=64000";
  ConfigTableCache tables;
  auto conf = SlurmConfLines(groups, o, &tables);
  ASSERT_TRUE(conf.ok()) << conf.status().ToString();
  EXPECT_TRUE(
      Contains(*conf,
               "NodeName=gpu[01-02] Gres=mg:1g.5gb:7,mg:1g.5gb+me:1,mg:1g.10gb:4,"
               "mg:2g.10gb:3,mg:3g.20gb:2,mg:4g.20gb:1,mg:7g.40gb:1,mg:migsched-pad:19 CPUs=8 "
               "RealMemory=64000"))
      << *conf;
  // 4 x A30: 1g.6gb 4x4, 1g.6gb+me 4x1, 2g.12gb 4x2, 2g.12gb+me 4x1, 4g.24gb 4x1;
  // the pad 16 + 4 + 8 + 4 + 4 = 36.
  EXPECT_TRUE(Contains(*conf,
                       "NodeName=a30n1 Gres=mg:1g.6gb:16,mg:1g.6gb+me:4,mg:2g.12gb:8,"
                       "mg:2g.12gb+me:4,mg:4g.24gb:4,mg:migsched-pad:36 CPUs=8 RealMemory=64000"))
      << *conf;
  EXPECT_TRUE(Contains(*conf,
                       "NodeName=migsched-hold[1-2] Gres=mg:1g.5gb:7,mg:1g.5gb+me:1,mg:1g.10gb:4,"
                       "mg:2g.10gb:3,mg:3g.20gb:2,mg:4g.20gb:1,mg:7g.40gb:1,mg:1g.6gb:16,"
                       "mg:1g.6gb+me:4,mg:2g.12gb:8,mg:2g.12gb+me:4,mg:4g.24gb:4,"
                       "mg:migsched-pad:55 CPUs=8 RealMemory=64000 State=FUTURE"))
      << *conf;
  EXPECT_TRUE(Contains(*conf,
                       "PartitionName=gpu Nodes=gpu[01-02],a30n1,migsched-hold[1-2] "
                       "State=DOWN"))
      << *conf;
}

TEST(GresConfigTest, RefusesBadInputWithTheReason) {
  const GpuModel* a100 = &Model("A100-40GB");
  ConfigTableCache tables;
  struct Case {
    std::vector<NodeGroup> groups;
    GresConfigOptions options;
    std::string message_part;
  };
  GresConfigOptions bad_gres;
  bad_gres.gres_name = "mig gpu";
  GresConfigOptions bad_part;
  bad_part.partition = "";
  GresConfigOptions two_lines;  // regression trial_node_attrs_wrote_a_line_of_its_own
  two_lines.node_attrs = "CPUs=4\nSlurmUser=root";
  GresConfigOptions blank_dir;  // regression trial_hooks_dir_unquoted
  blank_dir.hooks_dir = "/tmp/a b'c";
  const std::vector<Case> cases = {
      {{}, {}, "no nodes given"},
      {{{{"n1"}, {a100}, ""}, {{"n1"}, {a100}, ""}}, {}, "node 'n1' is given twice"},
      {{{{"n1"}, {}, ""}}, {}, "nodes n1: no GPUs"},
      {{{{"migsched-hold1"}, {a100}, ""}}, {}, "starts with the placeholder prefix"},
      {{{{"n1"}, {a100}, ""}}, bad_gres, "GRES name 'mig gpu'"},
      {{{{"n1"}, {a100}, ""}}, bad_part, "partition name ''"},
      {{{{"n1"}, {a100}, ""}},
       two_lines,
       "--node-attrs 'CPUs=4\\nSlurmUser=root': a line break or control character"},
      {{{{"n1"}, {a100}, ""}}, blank_dir, "--hooks-dir '/tmp/a b'c': slurm.conf takes a path"},
  };
  for (const Case& c : cases) {
    auto conf = SlurmConfLines(c.groups, c.options, &tables);
    ASSERT_FALSE(conf.ok()) << c.message_part;
    EXPECT_NE(conf.status().message().find(c.message_part), std::string::npos)
        << conf.status().message();
  }
}

// Slurm's number of "gpu" is 7696487 (the GRES_PLUGIN_GPU constant other
// Slurm-compatible code uses): 'g' 103 + ('p' 112 << 8) + ('u' 117 << 16).
TEST(GresConfigTest, SlurmGresIdIsSlurmsNumber) {
  EXPECT_EQ(SlurmGresId("gpu"), 7696487u);
  // 5 bytes: the fifth is shifted by 0 again ('a' 97 + 'b' 98 << 8 + ... + 'e' 101).
  EXPECT_EQ(SlurmGresId("abcde"), 97u + (98u << 8) + (99u << 16) + (100u << 24) + 101u);
  EXPECT_EQ(SlurmGresId("2g.48gb"), SlurmGresId("3g.47gb"));
}

// RTX PRO 6000's 2g.48gb and H100 NVL's 3g.47gb collide (slurmctld merged
// their counts when both were configured): refused, unless one is skipped.
TEST(GresConfigTest, RefusesProfilesSlurmCannotTellApart) {
  ConfigTableCache tables;
  std::vector<NodeGroup> groups = {{{"n1"}, {&Model("RTX-PRO-6000")}, ""},
                                   {{"n2"}, {&Model("H100-NVL-94GB")}, ""}};
  GresConfigOptions o;
  auto conf = SlurmConfLines(groups, o, &tables);
  ASSERT_FALSE(conf.ok());
  EXPECT_NE(conf.status().message().find("profiles '2g.48gb' and '3g.47gb' have the same Slurm "
                                         "GRES type id (0x3490ce6a)"),
            std::string::npos)
      << conf.status().message();
  o.skip_profiles = {"3g.47gb"};
  conf = SlurmConfLines(groups, o, &tables);
  ASSERT_TRUE(conf.ok()) << conf.status().ToString();
  EXPECT_EQ(conf->find("3g.47gb"), std::string::npos);
  EXPECT_NE(conf->find("mig:2g.48gb:2"), std::string::npos);
  o.skip_profiles = {"9g.1gb"};
  conf = SlurmConfLines(groups, o, &tables);
  ASSERT_FALSE(conf.ok());
  EXPECT_NE(conf.status().message().find("skip profile '9g.1gb': no GPU of these nodes has it"),
            std::string::npos);
}

// job_submit.lua's data: the cluster's profiles (lower-case keys), its
// full-GPU profiles (A100 40GB: 7g.40gb; A30: 4g.24gb) and the MIG nodes;
// slurm.conf turns the plugin on. (What the script does is tested on a real
// slurmctld: SlurmClusterTest.TheDocsExamplesAndWhatUsersWriteRun.)
TEST(GresConfigTest, JobSubmitLuaKnowsTheProfilesFullGpusAndNodes) {
  const GpuModel* a100 = &Model("A100-40GB");
  const GpuModel* a30 = &Model("A30");
  std::vector<NodeGroup> groups = {{{"gpu01", "gpu02"}, {a100}, "1xA100-40GB"},
                                   {{"a30n1"}, {a30}, "1xA30"}};
  GresConfigOptions o;
  ConfigTableCache tables;
  auto lua = JobSubmitLua(groups, o, &tables);
  ASSERT_TRUE(lua.ok()) << lua.status().ToString();
  EXPECT_TRUE(Has(*lua, "local PARTITION = \"mig\"\nlocal GRES = \"mig\"\n")) << *lua;
  EXPECT_TRUE(Has(*lua, "[\"3g.20gb\"] = \"3g.20gb\"")) << *lua;
  EXPECT_TRUE(Has(*lua, "[\"1g.6gb+me\"] = \"1g.6gb+me\"")) << *lua;
  EXPECT_TRUE(Has(*lua, "local FULL = {\"7g.40gb\", \"4g.24gb\"}\n")) << *lua;
  EXPECT_TRUE(Has(*lua, "local NODES = {\"gpu01\", \"gpu02\", \"a30n1\"}\n")) << *lua;
  EXPECT_TRUE(Has(*lua, "function slurm_job_submit(job_desc, part_list, submit_uid)"));
  auto conf = SlurmConfLines(groups, o, &tables);
  ASSERT_TRUE(conf.ok());
  EXPECT_TRUE(Has(*conf, "\nJobSubmitPlugins=lua\n")) << *conf;
}

TEST(GresConfigTest, HookScriptsExecTheHookWithTheConfig) {
  const auto scripts = HookScripts("/usr/bin/migsched", "/etc/migsched/slurm.yaml", "mig");
  ASSERT_EQ(scripts.size(), 3u);
  EXPECT_EQ(scripts[0].first, "prolog-slurmctld");
  EXPECT_NE(scripts[0].second.find(
                "exec '/usr/bin/migsched' slurm prolog --config '/etc/migsched/slurm.yaml'\n"),
            std::string::npos);
  EXPECT_EQ(scripts[1].first, "epilog-slurmctld");
  EXPECT_NE(scripts[1].second.find("slurm epilog --config"), std::string::npos);
  EXPECT_EQ(scripts[2].first, "task-prolog");
  EXPECT_NE(scripts[2].second.find("exec '/usr/bin/migsched' slurm task-prolog --gres-name mig\n"),
            std::string::npos);
  for (const auto& [name, content] : scripts) {
    EXPECT_EQ(content.rfind("#!/bin/sh\n", 0), 0u);
    EXPECT_EQ(content.find("SLURM_CONF"), std::string::npos) << name;  // Slurm's default path
  }
}

// slurmctld runs PrologSlurmctld/EpilogSlurmctld without SLURM_CONF: a
// slurm.conf elsewhere must be named in the scripts or scontrol cannot find it.
TEST(GresConfigTest, HookScriptsExportASlurmConfOutsideTheDefaultPath) {
  const auto scripts = HookScripts("/usr/bin/migsched", "/c.yaml", "mig", "/opt/slurm/slurm.conf");
  for (const auto& [name, content] : scripts) {
    EXPECT_NE(content.find("\nexport SLURM_CONF='/opt/slurm/slurm.conf'\nexec '/usr/bin/migsched'"),
              std::string::npos)
        << name << ":\n"
        << content;
  }
}

}  // namespace
}  // namespace migsched::slurm
