// `migsched slurm config`: the lines it prints, its errors, and that a real
// slurmctld + slurmd (Slurm 22.05) accept the generated slurm.conf and
// gres.conf with exactly the generated counts and drain nothing.
#include <gtest/gtest.h>

#include "e2e/slurm_testbed.h"
#include "testing/test_util.h"

namespace migsched::testing {
namespace {

bool HasLine(const std::string& text, const std::string& line) {
  return text.find(line + "\n") != std::string::npos;
}

// By hand, per A100 40GB: 1g.5gb 7, 1g.5gb+me 1, 1g.10gb 4, 2g.10gb 3, 3g.20gb 2,
// 4g.20gb 1, 7g.40gb 1; two per node; the pad their sum, 38.
const char kTwoA100Gres[] =
    "mig:1g.5gb:14,mig:1g.5gb+me:2,mig:1g.10gb:8,mig:2g.10gb:6,mig:3g.20gb:4,mig:4g.20gb:2,"
    "mig:7g.40gb:2,mig:migsched-pad:38";

TEST(SlurmConfigCliTest, PrintsTheLinesOfAThreeNodeCluster) {
  CommandResult r = RunMigsched({"slurm", "config", "--nodes", "n[1-3]", "--gpus", "2xA100-40GB"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(HasLine(r.out, "GresTypes=mig,gpu")) << r.out;
  EXPECT_TRUE(HasLine(r.out, std::string("NodeName=n[1-3] Gres=") + kTwoA100Gres)) << r.out;
  EXPECT_TRUE(HasLine(r.out, "PartitionName=mig Nodes=n[1-3],migsched-hold[1-3] State=DOWN"));
  EXPECT_TRUE(HasLine(r.out, "NodeName=n[1-3] Name=mig Type=3g.20gb Count=4"));
  CommandResult only = RunMigsched(
      {"slurm", "config", "--nodes", "gpu[01-02]", "--gpus", "1xA30", "--only", "gres.conf"});
  ASSERT_EQ(only.exit_code, 0) << only.err;
  EXPECT_EQ(only.out.find("GresTypes"), std::string::npos);
  EXPECT_TRUE(HasLine(only.out, "NodeName=gpu[01-02] Name=mig Type=2g.12gb Count=2")) << only.out;
}

TEST(SlurmConfigCliTest, BadInputGetsAClearMessage) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--nodes", "n[1-", "--gpus", "1xA100-40GB"}, "--nodes n[1-: hostlist: '[' without ']'"},
      {{"--nodes", "n1", "--gpus", "1xA999"}, "--gpus 1xA999: "},
      {{"--nodes", "n1", "--nodes", "n2", "--gpus", "1xA30", "--gpus", "1xA30", "--gpus", "1xA30"},
       "give --gpus once (for every --nodes) or once per --nodes (2 --nodes, 3 --gpus)"},
      {{"--nodes", "n1", "--gpus", "1xRTX-PRO-6000,1xH100-NVL-94GB"},
       "profiles '2g.48gb' and '3g.47gb' have the same Slurm GRES type id"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"slurm", "config"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    CommandResult r = RunMigsched(args);
    EXPECT_EQ(r.exit_code, 1) << c.message;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
  }
}

// Regression (negative_placeholders_accepted): `--placeholders -2` printed the default's lines.
TEST(SlurmConfigCliTest, PlaceholdersMustBeAWholeNumber) {
  CommandResult r = RunMigsched(
      {"slurm", "config", "--nodes", "n1", "--gpus", "1xA100-40GB", "--placeholders", "-2"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "--placeholders: must be an integer in 0..100000, got '-2'\nRun with --help for more "
            "information.\n");
  EXPECT_EQ(r.out, "");
}

// The generated lines in a real Slurm: the counts slurmctld shows for each
// node are the generated ones, slurmd registers without a drain, and
// slurmctld warns about no GRES count.
void ExpectSlurmTakesIt(SlurmTestbed& tb, const std::string& line_name,
                        const std::vector<std::string>& nodes) {
  const std::string conf = ReadFile(tb.dir() + "/slurm/slurm.conf");
  const size_t at = conf.find("\nNodeName=" + line_name + " ");
  ASSERT_NE(at, std::string::npos) << conf;
  const size_t g = conf.find(" Gres=", at) + 6;
  const std::string generated = conf.substr(g, conf.find(' ', g) - g);
  for (const std::string& node : nodes) {
    EXPECT_EQ(tb.Out("scontrol show node " + node + " | sed -n 's/^ *Gres=//p'"), generated);
    EXPECT_EQ(tb.Out("sinfo -h -N -n " + node + " -o %t"), "idle");
  }
  EXPECT_EQ(tb.Out("sinfo -h -R"), "");
  EXPECT_EQ(tb.Out("grep -c 'than expected' log/slurmctld.log || true"), "0");
  EXPECT_EQ(tb.Out("scontrol -o show partition mig | grep -o 'State=[A-Z]*'"), "State=DOWN");
}

TEST(SlurmConfigRealTest, SlurmAcceptsAThreeNodeCluster) {
  if (const std::string why = SlurmUnavailable(); !why.empty()) GTEST_SKIP() << why;
  SlurmTestbed tb({"--no-controller", "--nodes", "3", "--gpus", "2xA100-40GB"});
  ASSERT_TRUE(tb.Up());
  ExpectSlurmTakesIt(tb, "n[1-3]", {"n1", "n2", "n3"});
  EXPECT_EQ(tb.Out("scontrol show node n2 | sed -n 's/^ *Gres=//p'"), kTwoA100Gres);
}

// Regression (missing_token_hidden_behind_slurm_error): a node's token file that cannot be read
// was said only by the node's reason in a tick, and a tick that failed first on Slurm (here:
// no squeue on PATH) hid it. Now said at start, and the controller runs on (a token is read
// again at every call, so a file that appears later makes the node usable).
TEST(SlurmControllerCliTest, AMissingTokenFileIsSaidAtStart) {
  const std::string config = WriteTempFile(
      "controller.yaml",
      "nodes:\n  - {name: n1, url: \"http://127.0.0.1:9\", token_file: /nonexistent/n1.token}\n");
  const CommandResult r =
      RunProgram(MigschedBinary(), {"slurm", "controller", "--config", config, "--once"},
                 {"PATH=/nonexistent"});
  EXPECT_EQ(r.exit_code, 1) << r.err;  // the tick fails: no squeue
  EXPECT_NE(r.err.find("node n1: cannot read token file /nonexistent/n1.token: the node is not "
                       "usable until its token can be read"),
            std::string::npos)
      << r.err;
  EXPECT_LT(r.err.find("cannot read token file"), r.err.find("squeue")) << r.err;
}

// Every bundled model but H100 NVL (whose 3g.47gb collides with RTX PRO
// 6000's 2g.48gb) on one node: every profile name is a GRES type Slurm takes.
// By hand: 1g.10gb is A100 40GB's 4 + A100 80GB's 7 + H100 80GB's 7 = 18; A30's 4g.24gb 1.
TEST(SlurmConfigRealTest, SlurmAcceptsEveryProfileName) {
  if (const std::string why = SlurmUnavailable(); !why.empty()) GTEST_SKIP() << why;
  SlurmTestbed tb({"--no-controller", "--nodes", "1", "--gpus",
                   "1xA100-40GB,1xA100-80GB,1xA30,1xH100-80GB,1xH200-141GB,1xRTX-PRO-6000"});
  ASSERT_TRUE(tb.Up());
  ExpectSlurmTakesIt(tb, "n1", {"n1"});
  const std::string gres = tb.Out("scontrol show node n1 | sed -n 's/^ *Gres=//p'");
  for (const std::string part : {"mig:1g.10gb:18,", "mig:4g.24gb:1,", "mig:1g.24gb+me.all:1,",
                                 "mig:2g.48gb-me:2,", "mig:7g.141gb:1,"}) {
    EXPECT_NE(gres.find(part), std::string::npos) << part << " in " << gres;
  }
}

}  // namespace
}  // namespace migsched::testing
