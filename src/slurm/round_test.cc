#include "slurm/round.h"

#include <gtest/gtest.h>

#include "cluster/testing/nodes.h"
#include "slurm/admin_comment.h"
#include "testing/test_util.h"

namespace migsched::slurm {
namespace {

using migsched::testing::AddReservation;
using migsched::testing::BundledCatalog;
using migsched::testing::MakeNode;
using migsched::testing::ReadFile;
using migsched::testing::TestDataDir;

std::vector<SlurmJob> CapturedJobs() {
  auto jobs = ParseSqueueJson(ReadFile(TestDataDir() + "/slurm/squeue.json"));
  EXPECT_TRUE(jobs.ok()) << jobs.status().ToString();
  return jobs.ok() ? *jobs : std::vector<SlurmJob>{};
}

std::vector<int64_t> Ids(const std::vector<ClassifiedJob>& v) {
  std::vector<int64_t> out;
  for (const ClassifiedJob& c : v) out.push_back(c.slurm->id);
  return out;
}

// The captured queue (tests/data/slurm/README.md): waiting for migsched are
// the pending MIG jobs Slurm may start now: 3 (c) and 5 (e), in priority
// order (3 was submitted first, higher priority); 7 is held, 8 waits for its
// BeginTime, 4 failed. Active MIG jobs: 1, 2, 6, 11 (CONFIGURING); 9 and 10
// have no GRES.
TEST(RoundTest, ClassifiesTheCapturedQueue) {
  const std::vector<SlurmJob> jobs = CapturedJobs();
  const double now = 1796116000;  // after the capture, before job 8's BeginTime
  Classified c = ClassifyJobs(jobs, "mig", "mig", now);
  EXPECT_EQ(Ids(c.waiting), (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(Ids(c.active), (std::vector<int64_t>{1, 2, 6, 11}));
  EXPECT_TRUE(c.invalid.empty());
  EXPECT_EQ(c.waiting[0].request.job.num_nodes, 2);
  EXPECT_EQ(c.waiting[1].request.job.excluded_nodes, std::vector<std::string>{"n1"});
  // Another partition: nothing.
  EXPECT_TRUE(ClassifyJobs(jobs, "gpu", "mig", now).active.empty());
  // Job 1's marker says migratable=restart; job 2's is malformed.
  EXPECT_EQ(c.active[0].request.job.migratable, Migratable::kRestart);
  EXPECT_NE(c.active[1].request.marker_error.find("'migratable=bogus'"), std::string::npos);
}

TEST(RoundTest, InFlightMigrationsAndTheirEnd) {
  std::vector<SlurmJob> jobs(3);
  jobs[0].id = 5;  // moved for slurm:9, waiting for its BeginTime
  jobs[0].state = "PENDING";
  jobs[0].reason = "BeginTime";
  jobs[0].partition = "mig";
  jobs[0].tres_per_node = {{"mig", "1g.5gb", 1}};
  jobs[0].admin_comment = FormatRequeuedFor("slurm:9", "7g.40gb on n1 GPU 0");
  jobs[1] = jobs[0];
  jobs[1].id = 6;
  jobs[1].admin_comment = FormatRequeuedFor("slurm:10", "7g.40gb on n2 GPU 0");
  jobs[2].id = 9;  // still waiting
  jobs[2].state = "PENDING";
  jobs[2].reason = "Resources";
  jobs[2].partition = "mig";
  jobs[2].tres_per_node = {{"mig", "7g.40gb", 1}};
  Classified c = ClassifyJobs(jobs, "mig", "mig", 0);
  ASSERT_EQ(c.in_flight.size(), 1u);
  EXPECT_EQ(c.in_flight[0].for_job, "slurm:9");
  EXPECT_EQ(c.in_flight[0].moved, std::vector<std::string>{"slurm:5"});
  // slurm:10 is not waiting (started or gone): job 6 may start.
  ASSERT_EQ(c.release_begin_time.size(), 1u);
  EXPECT_EQ(c.release_begin_time[0]->id, 6);
  EXPECT_EQ(Ids(c.waiting), std::vector<int64_t>{9});
}

TEST(RoundTest, JobsMigschedCanNeverPlaceAreListedOnce) {
  std::vector<SlurmJob> jobs(2);
  jobs[0].id = 1;
  jobs[0].state = "PENDING";
  jobs[0].partition = "mig";
  jobs[0].tres_per_node = {{"mig", "", 2}};
  jobs[1] = jobs[0];
  jobs[1].id = 2;
  jobs[1].admin_comment = FormatHeld("can never run: x");
  Classified c = ClassifyJobs(jobs, "mig", "mig", 0);
  ASSERT_EQ(c.invalid.size(), 1u);
  EXPECT_EQ(c.invalid[0].first->id, 1);
}

// Rooms: n1 holds two 1g.5gb rooms and one 3g.20gb room; a started job not
// yet bound on n1 with 1g.5gb x1 claims one 1g.5gb room (the first in key
// order); the 3g.20gb room, first seen 200 s ago, times out (120 s).
TEST(RoundTest, RoomsClaimedAndTimedOut) {
  ConfigTableCache tables;
  NodeView n1 = MakeNode("n1", 1, "A100 40GB", {});
  AddReservation(&n1, "slurm-room:0:1g.5gb:1", 0, "1g.5gb", 1);
  AddReservation(&n1, "slurm-room:0:1g.5gb:0", 0, "1g.5gb", 0);
  AddReservation(&n1, "slurm-room:0:3g.20gb:4", 0, "3g.20gb", 4);
  AddReservation(&n1, "k8s:pod", 0, "1g.5gb", 2);  // not a room of ours
  auto view = ClusterView::Build({{"n1", n1, ""}}, BundledCatalog(), &tables);
  SlurmJob started;
  started.id = 12;
  started.state = "CONFIGURING";
  started.nodes = {"n1"};
  ClassifiedJob cj{&started, {}};
  cj.request.job.key = "slurm:12";
  cj.request.job.per_node = {{"1g.5gb", 1}};
  const ActiveCounts counts = CountActive({cj}, *view);
  EXPECT_EQ(counts.unbound.at({"n1", "1g.5gb"}), 1);
  EXPECT_EQ(counts.all.at({"n1", "1g.5gb"}), 1);
  const std::map<std::string, double> seen = {{"n1/slurm-room:0:3g.20gb:4", 800},
                                              {"n2/slurm-room:0:1g.5gb:1", 0}};
  const std::vector<EngineReservation> rooms = Rooms(*view, counts, seen, 1000, 120);
  ASSERT_EQ(rooms.size(), 3u);
  EXPECT_EQ(rooms[0].key, "slurm-room:0:1g.5gb:0");
  EXPECT_TRUE(rooms[0].claimed);
  EXPECT_FALSE(rooms[1].claimed);
  EXPECT_FALSE(rooms[1].timed_out);  // never seen before: its clock starts now
  EXPECT_EQ(rooms[2].key, "slurm-room:0:3g.20gb:4");
  EXPECT_TRUE(rooms[2].timed_out);
}

// By hand: job 12 (CONFIGURING on n1, unbound) asks for 2x 1g.5gb + 1x
// 3g.20gb; n1 holds one 1g.5gb room (claimed by it) and no 3g.20gb room; a
// room for another node's name and a bound job count for nothing. Left: 1x
// 1g.5gb and 1x 3g.20gb on n1, one planner job each (profile order), pinned
// to n1, waiting since now; n9 (not in the view) is left out.
TEST(RoundTest, StartedWithoutRoomIsTheUnclaimedDemandPerNodeAndProfile) {
  ConfigTableCache tables;
  NodeView n1 = MakeNode("n1", 2, "A100 40GB", {});
  AddReservation(&n1, "slurm-room:0:1g.5gb:0", 0, "1g.5gb", 0);
  auto view = ClusterView::Build({{"n1", n1, ""}}, BundledCatalog(), &tables);
  SlurmJob started;
  started.id = 12;
  started.state = "CONFIGURING";
  started.nodes = {"n1", "n9"};
  ClassifiedJob cj{&started, {}};
  cj.request.job.key = "slurm:12";
  cj.request.job.num_nodes = 2;
  cj.request.job.per_node = {{"1g.5gb", 2}, {"3g.20gb", 1}};
  const ActiveCounts counts = CountActive({cj}, *view);
  const std::vector<EngineReservation> rooms = Rooms(*view, counts, {}, 1000, 120);
  const std::vector<ClusterJob> left = StartedWithoutRoom(counts, rooms, *view, 1000);
  ASSERT_EQ(left.size(), 2u);
  EXPECT_EQ(left[0].key, "slurm-started:n1:1g.5gb");
  EXPECT_EQ(left[0].per_node, (std::vector<ProfileCount>{{"1g.5gb", 1}}));
  EXPECT_EQ(left[0].allowed_nodes, std::vector<std::string>{"n1"});
  EXPECT_EQ(left[0].num_nodes, 1);
  EXPECT_EQ(left[0].waiting_since_s, 1000);
  EXPECT_EQ(left[1].key, "slurm-started:n1:3g.20gb");
  EXPECT_EQ(left[1].per_node, (std::vector<ProfileCount>{{"3g.20gb", 1}}));
  // Once bound (an allocation of its key on n1), nothing is left.
  NodeView bound = MakeNode("n1", 2, "A100 40GB", {"1:3g.20gb@0=alloc:slurm:12"});
  auto bound_view = ClusterView::Build({{"n1", bound, ""}}, BundledCatalog(), &tables);
  const ActiveCounts after = CountActive({cj}, *bound_view);
  EXPECT_TRUE(StartedWithoutRoom(after, Rooms(*bound_view, after, {}, 1000, 120), *bound_view, 1000)
                  .empty());
}

// Jobs Slurm shows running whose allocations are gone (item: a node reboot
// took the fake backend's instances; the daemon failed the allocation). Job
// 20 RUNNING, bound on n1 by its AdminComment, no allocation there: lost, and
// not unbound (no room is claimed for it). Job 21 CONFIGURING with no
// binding yet: unbound, not lost. Job 22 RUNNING and bound in the view:
// neither. Job 23 RUNNING, bound on n2 whose daemon cannot be read: neither
// (its allocations are unknown).
TEST(RoundTest, ARunningJobWhoseAllocationIsGoneIsLostNotUnbound) {
  ConfigTableCache tables;
  auto view = ClusterView::Build(
      {{"n1", MakeNode("n1", 1, "A100 40GB", {"0:3g.20gb@0=alloc:slurm:22"}), ""},
       {"n2", std::nullopt, "connection refused"}},
      BundledCatalog(), &tables);
  Binding on_n1;
  on_n1["n1"] = {{"MIG-a", {0, "3g.20gb", 4}}};
  Binding on_n2;
  on_n2["n2"] = {{"MIG-b", {0, "3g.20gb", 4}}};
  std::vector<SlurmJob> jobs(4);
  const std::vector<std::string> states = {"RUNNING", "CONFIGURING", "RUNNING", "RUNNING"};
  for (int i = 0; i < 4; ++i) {
    jobs[i].id = 20 + i;
    jobs[i].state = states[i];
    jobs[i].nodes = {i == 3 ? "n2" : "n1"};
  }
  jobs[0].admin_comment = FormatBound(on_n1);
  jobs[2].admin_comment = FormatBound(on_n1);
  jobs[3].admin_comment = FormatBound(on_n2);
  std::vector<ClassifiedJob> active;
  for (const SlurmJob& j : jobs) {
    ClassifiedJob cj{&j, {}};
    cj.request.job.key = JobKey(j.id);
    cj.request.job.per_node = {{"3g.20gb", 1}};
    active.push_back(cj);
  }
  const ActiveCounts c = CountActive(active, *view);
  EXPECT_EQ(c.lost, (std::vector<std::pair<std::string, std::string>>{{"slurm:20", "n1"}}));
  // Unbound: 21 on n1, and 23 on n2 (unusable: not known to be bound).
  EXPECT_EQ(c.unbound, (std::map<std::pair<std::string, std::string>, int>{
                           {{"n1", "3g.20gb"}, 1}, {{"n2", "3g.20gb"}, 1}}));
  EXPECT_EQ(c.all.at({"n1", "3g.20gb"}), 3);
}

// Counts: Slurm's active jobs plus the rooms held for waiting jobs, at most
// the ceiling (2 A100: 3g.20gb 4), other GRES untouched; when unusable, only
// the active jobs' count (n2 runs a 7g.40gb Slurm started there).
TEST(RoundTest, CountsToPublish) {
  ConfigTableCache tables;
  auto view = ClusterView::Build(
      {{"n1", MakeNode("n1", 2, "A100 40GB", {}), ""}, {"n2", std::nullopt, "connection refused"}},
      BundledCatalog(), &tables);
  SlurmNode n1;
  n1.name = "n1";
  n1.gres = {{"gpu", "t4", 1}, {"mig", "1g.5gb", 14}, {"mig", "3g.20gb", 4}, {"mig", "7g.40gb", 2}};
  ActiveCounts active;
  active.all[{"n1", "3g.20gb"}] = 3;
  active.all[{"n1", "1g.5gb"}] = 1;
  active.all[{"n2", "7g.40gb"}] = 1;
  const std::map<std::pair<std::string, std::string>, int> rooms = {{{"n1", "3g.20gb"}, 2},
                                                                    {{"n1", "7g.40gb"}, 1}};
  EXPECT_EQ(
      CountsToPublish(n1, "mig", 0, *view, active, rooms),
      (std::vector<GresCount>{
          {"gpu", "t4", 1}, {"mig", "1g.5gb", 1}, {"mig", "3g.20gb", 4}, {"mig", "7g.40gb", 1}}));
  SlurmNode n2 = n1;
  n2.name = "n2";
  EXPECT_EQ(
      CountsToPublish(n2, "mig", 1, *view, active, rooms),
      (std::vector<GresCount>{
          {"gpu", "t4", 1}, {"mig", "1g.5gb", 0}, {"mig", "3g.20gb", 0}, {"mig", "7g.40gb", 1}}));
}

// Regression: a node whose daemon went away was published at 0 under the
// jobs running there; Slurm then dropped their GRES from its books ("GRES
// count underflow") and, once the daemon was back and the count restored,
// started waiting jobs on GPUs those jobs still held (the bind failed).
TEST(RoundTest, AnUnusableNodeIsNeverPublishedUnderItsRunningJobs) {
  ConfigTableCache tables;
  auto view =
      ClusterView::Build({{"n2", std::nullopt, "connection refused"}}, BundledCatalog(), &tables);
  SlurmNode n2;
  n2.name = "n2";
  n2.gres = {{"mig", "3g.20gb", 4}, {"mig", "7g.40gb", 2}};
  ActiveCounts active;
  active.all[{"n2", "7g.40gb"}] = 2;
  active.all[{"n2", "3g.20gb"}] = 0;
  const std::vector<GresCount> got = CountsToPublish(n2, "mig", 0, *view, active, {});
  EXPECT_EQ(got, (std::vector<GresCount>{{"mig", "3g.20gb", 0}, {"mig", "7g.40gb", 2}}));
}

// Regression (slurmd_restart_with_running_mig_jobs_drains_the_node): Slurm
// checks a registering slurmd's MIG GRES by the node's total; when the total
// differed from the one found at the last registration while a job held some
// of it, Slurm drained the node ("gres/mig count changed and jobs are using
// them (19 != 1)"). The pad takes what the profiles leave of the node's
// current total, so the total never changes.
TEST(RoundTest, ThePadKeepsTheNodesMigTotal) {
  ConfigTableCache tables;
  auto view = ClusterView::Build(
      {{"n1", MakeNode("n1", 1, "A100 40GB", {}), ""}, {"n2", std::nullopt, "connection refused"}},
      BundledCatalog(), &tables);
  // slurm.conf of one A100 40GB: 1g.5gb 7, 3g.20gb 2, 7g.40gb 1 (others left
  // out here), the pad their sum 10: total 20.
  SlurmNode n1;
  n1.name = "n1";
  n1.gres = {{"mig", "1g.5gb", 7},
             {"mig", "3g.20gb", 2},
             {"mig", "7g.40gb", 1},
             {"mig", "migsched-pad", 10},
             {"gpu", "t4", 1}};
  ActiveCounts active;
  active.all[{"n1", "3g.20gb"}] = 1;
  const std::map<std::pair<std::string, std::string>, int> rooms = {{{"n1", "1g.5gb"}, 2}};
  // Profiles 2 + 1 + 0 = 3; the pad 20 - 3 = 17.
  EXPECT_EQ(CountsToPublish(n1, "mig", 0, *view, active, rooms),
            (std::vector<GresCount>{{"mig", "1g.5gb", 2},
                                    {"mig", "3g.20gb", 1},
                                    {"mig", "7g.40gb", 0},
                                    {"mig", "migsched-pad", 17},
                                    {"gpu", "t4", 1}}));
  // From counts published before (total 20 still): the same.
  SlurmNode again = n1;
  again.gres = {{"mig", "1g.5gb", 0},
                {"mig", "3g.20gb", 0},
                {"mig", "7g.40gb", 1},
                {"mig", "migsched-pad", 19},
                {"gpu", "t4", 1}};
  EXPECT_EQ(CountsToPublish(again, "mig", 0, *view, active, rooms),
            CountsToPublish(n1, "mig", 0, *view, active, rooms));
  // An unusable node (only its running jobs' 3g.20gb 1): the pad 19.
  SlurmNode n2 = n1;
  n2.name = "n2";
  active.all[{"n2", "3g.20gb"}] = 1;
  EXPECT_EQ(CountsToPublish(n2, "mig", 1, *view, active, rooms),
            (std::vector<GresCount>{{"mig", "1g.5gb", 0},
                                    {"mig", "3g.20gb", 1},
                                    {"mig", "7g.40gb", 0},
                                    {"mig", "migsched-pad", 19},
                                    {"gpu", "t4", 1}}));
}

}  // namespace
}  // namespace migsched::slurm
