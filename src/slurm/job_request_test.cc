#include "slurm/job_request.h"

#include <gtest/gtest.h>

#include "slurm/admin_comment.h"
#include "slurm/gres_config.h"

namespace migsched::slurm {
namespace {

TEST(MarkerTest, ReadsTheMarkerAmongOtherWords) {
  struct Case {
    std::string comment;
    Migratable migratable;
    bool latency;
    std::string error_part;
  };
  const std::vector<Case> cases = {
      {"", Migratable::kNone, false, ""},
      {"migratable=restart", Migratable::kRestart, false, ""},
      {"nightly run, migratable=restart", Migratable::kRestart, false, ""},
      {"a;migratable=restart;b", Migratable::kRestart, false, ""},
      {"migratable=none", Migratable::kNone, false, ""},
      {"migratable=restart latency-sensitive", Migratable::kRestart, true, ""},
      {"migratable=yes", Migratable::kNone, false, "'migratable=yes': expected"},
      {"migratable:restart", Migratable::kNone, false, "'migratable:restart': expected"},
      {"migratable=checkpoint", Migratable::kNone, false, "can only be restarted"},
      {"unmigratable=restart", Migratable::kNone, false, ""},
  };
  for (const Case& c : cases) {
    const Marker m = ParseMarker(c.comment);
    EXPECT_EQ(m.migratable, c.migratable) << c.comment;
    EXPECT_EQ(m.latency_sensitive, c.latency) << c.comment;
    if (c.error_part.empty()) {
      EXPECT_EQ(m.error, "") << c.comment;
    } else {
      EXPECT_NE(m.error.find(c.error_part), std::string::npos) << c.comment << ": " << m.error;
    }
  }
}

TEST(JobRequestTest, FromSlurmJob) {
  SlurmJob j;
  j.id = 42;
  j.node_count = 2;
  j.tres_per_node = {{"mig", "1g.5gb", 2}, {"gpu", "", 1}, {"mig", "3g.20gb", 2}};
  j.comment = "migratable=restart";
  j.requeue = true;
  j.required_nodes = {"n1", "n2"};
  j.eligible_time = 100;
  j.time_limit_min = 90;
  auto r = ToJobRequest(j, "mig");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->has_value());
  const ClusterJob& c = (*r)->job;
  EXPECT_EQ(c.key, "slurm:42");
  EXPECT_EQ(c.num_nodes, 2);
  EXPECT_EQ(c.per_node, (std::vector<ProfileCount>{{"1g.5gb", 2}, {"3g.20gb", 2}}));
  EXPECT_EQ(c.allowed_nodes, (std::vector<std::string>{"n1", "n2"}));
  EXPECT_EQ(c.migratable, Migratable::kRestart);
  EXPECT_EQ(c.waiting_since_s, 100);
  EXPECT_EQ(c.time_limit_s, 5400);  // 90 minutes

  j.requeue = false;
  r = ToJobRequest(j, "mig");
  EXPECT_EQ((*r)->job.migratable, Migratable::kNone);
  EXPECT_EQ((*r)->marker_error, "migratable=restart without --requeue: the job will not be moved");

  SlurmJob plain;
  plain.id = 1;
  plain.tres_per_node = {{"gpu", "a100", 1}};
  EXPECT_FALSE(ToJobRequest(plain, "mig")->has_value());

  SlurmJob untyped;
  untyped.id = 2;
  untyped.tres_per_node = {{"mig", "", 2}};
  auto bad = ToJobRequest(untyped, "mig");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "--gres=mig:2 names no MIG profile: ask for --gres=mig:<profile>:<count>, e.g. "
            "--gres=mig:3g.20gb:1");

  SlurmJob pad;
  pad.id = 3;
  pad.tres_per_node = {{"mig", "migsched-pad", 1}};
  bad = ToJobRequest(pad, "mig");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "--gres=mig:migsched-pad: not a MIG profile (it keeps the nodes' GRES totals "
            "constant); ask for --gres=mig:<profile>:<count>, e.g. --gres=mig:3g.20gb:1");
}

TEST(JobKeyTest, RoundTrips) {
  EXPECT_EQ(JobKey(7), "slurm:7");
  EXPECT_EQ(JobIdOfKey("slurm:7"), 7);
  EXPECT_EQ(JobIdOfKey("slurm:"), std::nullopt);
  EXPECT_EQ(JobIdOfKey("slurm:7x"), std::nullopt);
  EXPECT_EQ(JobIdOfKey("k8s:7"), std::nullopt);
  EXPECT_EQ(RoomKey({1, "3g.20gb", 4}), "slurm-room:1:3g.20gb:4");
}

TEST(AdminCommentTest, BindingRoundTripsAndStopsAtTheNextKey) {
  Binding b = {{"n1", {{"MIG-aa", {0, "3g.20gb", 4}}, {"MIG-bb", {1, "1g.5gb+me", 0}}}},
               {"n2", {{"MIG-GPU-cc/1/0", {0, "7g.40gb", 0}}}}};
  const std::string text = FormatBound(b);
  EXPECT_EQ(text,
            "migsched: bound n1=MIG-aa|0|3g.20gb|4,MIG-bb|1|1g.5gb+me|0 "
            "n2=MIG-GPU-cc/1/0|0|7g.40gb|0");
  auto back = ParseBound(text + "  StdErr=/tmp/slurm-1.out StdIn=/dev/null");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_TRUE(back->has_value());
  EXPECT_EQ(**back, b);
  EXPECT_FALSE(ParseBound("migsched: waiting: x")->has_value());
  EXPECT_FALSE(ParseBound("migsched: bound n1=MIG-aa|x|3g|4").ok());
}

TEST(AdminCommentTest, FailuresHoldsAndMigrations) {
  const std::string f = FormatBindFailure(2, 3, "no reservation of 3g.20gb on n1");
  EXPECT_EQ(f, "migsched: bind failed (attempt 2 of 3): no reservation of 3g.20gb on n1");
  EXPECT_EQ(ParseBindAttempt(f), 2);
  EXPECT_EQ(ParseBindAttempt(f + " StdErr=/x"), 2);
  EXPECT_EQ(ParseBindAttempt("migsched: waiting: x"), 0);
  EXPECT_TRUE(IsHeldByMigsched(FormatHeld("can never run")));
  EXPECT_FALSE(IsHeldByMigsched("held by the admin"));
  const std::string m = FormatRequeuedFor("slurm:9", "7g.40gb on n2 GPU 1");
  EXPECT_EQ(m, "migsched: requeued to open room for slurm:9 (7g.40gb on n2 GPU 1)");
  EXPECT_EQ(ParseRequeuedFor(m), "slurm:9");
  EXPECT_EQ(ParseRequeuedFor("migsched: waiting: x"), std::nullopt);
  EXPECT_EQ(FormatWaiting(std::string(2000, 'x')).size(), kMaxCommentBytes);
}

// The controller (ToJobRequest) and both prologs (hooks.cc) read a job's GRES with this one rule.
// Expected by hand: the mig entries only, in listed order. A profile listed twice is refused
// (regression: repeated_profile_got_more_than_slurm_counted: `--gres=mig:1g.5gb:1,mig:1g.5gb:1`
// got two instances while Slurm's JOB_GRES counted mig:1g.5gb:1).
TEST(MigProfilesOfTest, RefusesAProfileListedTwiceAndIgnoresOtherGres) {
  auto got = MigProfilesOf({{"mig", "3g.20gb", 1}, {"gpu", "", 2}, {"mig", "1g.5gb", 2}}, "mig");
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ((*got)[0].profile, "3g.20gb");
  EXPECT_EQ((*got)[0].count, 1);
  EXPECT_EQ((*got)[1].profile, "1g.5gb");
  EXPECT_EQ((*got)[1].count, 2);
  auto twice = MigProfilesOf(
      {{"mig", "3g.20gb", 1}, {"gpu", "", 2}, {"mig", "1g.5gb", 2}, {"mig", "3g.20gb", 1}}, "mig");
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.status().message(),
            "--gres names mig:3g.20gb twice; Slurm counts it once: ask for the total in one "
            "entry, e.g. --gres=mig:3g.20gb:2");
  auto none = MigProfilesOf({{"gpu", "", 2}}, "mig");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

// Regression (prolog_gres_rule_copied): the prologs had a copy of the rule that let the nodes'
// padding type through as if it were a profile; one rule refuses it everywhere.
TEST(MigProfilesOfTest, RegressionPrologGresRuleCopiedRefusesThePaddingType) {
  auto pad = MigProfilesOf({{"mig", std::string(kPadType), 1}}, "mig");
  ASSERT_FALSE(pad.ok());
  EXPECT_EQ(pad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(pad.status().message().find("not a MIG profile"), std::string::npos)
      << pad.status().message();
  auto no_profile = MigProfilesOf({{"mig", "", 2}}, "mig");
  ASSERT_FALSE(no_profile.ok());
  EXPECT_NE(no_profile.status().message().find("names no MIG profile"), std::string::npos);
  auto zero = MigProfilesOf({{"mig", "1g.5gb", 0}}, "mig");
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().message().find("at least 1"), std::string::npos);
}

}  // namespace
}  // namespace migsched::slurm
