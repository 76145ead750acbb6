// End-to-end: the cluster core's NodeDaemons over HTTP
// (cluster/http_node_daemons.h, used by the Slurm and Kubernetes adapters)
// against a real `migsched serve` (fake backend, 2 x A100 40GB): node state
// with every kind of holder, a room reserved and bound by profile under the
// room prefix, release, the errors a controller must tell apart, and a token
// re-read after a 401.
#include "cluster/http_node_daemons.h"

#include <csignal>

#include "e2e/daemon_fixture.h"
#include "testing/status_matchers.h"

namespace migsched {
namespace {

using ::testing::HasSubstr;

class HttpNodeDaemonsE2eTest : public DaemonApiTest {
 protected:
  HttpNodeDaemonsConfig Config(const std::string& token_file) {
    HttpNodeDaemonsConfig c;
    c.origin = "test.yaml";
    c.timeout_s = 2;
    c.nodes = {{"n1", "http://127.0.0.1:" + std::to_string(daemon_->port()), "", token_file}};
    return c;
  }
};

TEST_F(HttpNodeDaemonsE2eTest, StateRoomBindAndRelease) {
  StartDaemon();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<NodeDaemons> nodes,
                       NewHttpNodeDaemons(Config(token_file_.string())));
  ASSERT_OK_AND_ASSIGN(NodeView s0, nodes->State("n1"));
  ASSERT_EQ(s0.gpus.size(), 2u);
  EXPECT_EQ(s0.gpus[1].index, NvmlIndex{1});
  EXPECT_EQ(s0.gpus[1].model, "A100 40GB");
  EXPECT_EQ(s0.gpus[1].uuid, "GPU-fake-00000000-0000-0000-0000-000000000001");
  EXPECT_TRUE(TakesPlacements(s0.gpus[0]));
  EXPECT_TRUE(s0.gpus[0].instances.empty());
  EXPECT_TRUE(s0.gpus[1].instances.empty());
  EXPECT_EQ(s0.policy, "full");

  // A daemon job of its own: a 7g.40gb fills one GPU (full takes the first, GPU 0).
  const int64_t job = Submit({{"profile", "7g.40gb"}, {"command", {"sleep", "30"}}});
  WaitRunning(job);
  // A room on GPU 1: 3g.20gb at start 4 (units 4-7).
  const PlacementRef room{1, "3g.20gb", 4};
  ASSERT_OK(nodes->Reserve("n1", "slurm-room:1:3g.20gb:4", {room}, 60, /*anchors=*/false));
  ASSERT_OK(nodes->Reserve("n1", "slurm-room:1:3g.20gb:4", {room}, 60,
                           /*anchors=*/false));  // renewed, not doubled
  ASSERT_OK_AND_ASSIGN(NodeView s1, nodes->State("n1"));
  EXPECT_GT(s1.generation, s0.generation);
  ASSERT_EQ(s1.reservations.size(), 1u);
  EXPECT_EQ(s1.reservations[0].record.owner, "slurm-room:1:3g.20gb:4");
  EXPECT_EQ(s1.reservations[0].record.placements, std::vector<PlacementRef>{room});
  // The job's 7g on GPU 0, the room's on GPU 1.
  ASSERT_EQ(s1.gpus[0].instances.size(), 1u);
  ASSERT_EQ(s1.gpus[1].instances.size(), 1u);
  const InstanceView& job_in = s1.gpus[0].instances[0];
  const InstanceView& room_in = s1.gpus[1].instances[0];
  EXPECT_EQ(HolderOf(job_in), HolderKind::kJob);
  EXPECT_EQ(HolderKey(job_in), std::to_string(job));
  EXPECT_EQ(job_in.profile, "7g.40gb");
  EXPECT_EQ(HolderOf(room_in), HolderKind::kReservation);
  EXPECT_EQ(HolderKey(room_in), "slurm-room:1:3g.20gb:4");

  // The prolog's bind: any room of the profile; the placement is the room's.
  BindRequest b;
  b.owner = "slurm:7";
  b.idempotency_key = "slurm:7:0:n1:0";
  b.instances = {{"3g.20gb", 1}};
  b.reservation_prefix = "slurm-room:";
  ASSERT_OK_AND_ASSIGN(DaemonJobRecord a, nodes->Allocate("n1", b));
  EXPECT_EQ(a.owner(), "slurm:7");
  EXPECT_EQ(a.state, JobState::kRunning);
  ASSERT_EQ(a.instances.size(), 1u);
  EXPECT_EQ(a.instances[0].placement(), room);
  EXPECT_EQ(a.instances[0].mig_uuid.rfind("MIG-", 0), 0u) << a.instances[0].mig_uuid;
  ASSERT_OK_AND_ASSIGN(DaemonJobRecord again, nodes->Allocate("n1", b));  // a retried prolog
  EXPECT_EQ(again.id, a.id);
  ASSERT_OK_AND_ASSIGN(NodeView s2, nodes->State("n1"));
  EXPECT_TRUE(s2.reservations.empty());  // consumed
  EXPECT_EQ(AllocationsOn(s2), (std::vector<AllocationOnNode>{{a.id, "slurm:7"}}));
  ASSERT_EQ(s2.gpus[1].instances.size(), 1u);
  EXPECT_EQ(HolderOf(s2.gpus[1].instances[0]), HolderKind::kAllocation);
  EXPECT_EQ(s2.gpus[1].instances[0].mig_uuid, a.instances[0].mig_uuid);

  // No room of the profile left: kFailedPrecondition, naming what is held.
  b.idempotency_key = "slurm:8:0:n1:0";
  b.owner = "slurm:8";
  StatusOr<DaemonJobRecord> none = nodes->Allocate("n1", b);
  EXPECT_EQ(none.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(none.status().message(), HasSubstr("no reservation under 'slurm-room:'"));

  // Release: the instance is idle again; twice is fine; so is an unknown room.
  ASSERT_OK(nodes->Release("n1", a.id));
  ASSERT_OK(nodes->Release("n1", a.id));
  ASSERT_OK(nodes->Unreserve("n1", "slurm-room:0:1g.5gb:0"));
  ASSERT_OK_AND_ASSIGN(NodeView s3, nodes->State("n1"));
  EXPECT_TRUE(AllocationsOn(s3).empty());
  for (const InstanceView& in : s3.gpus[1].instances) EXPECT_EQ(HolderOf(in), HolderKind::kIdle);
  // A placement that is not free: kFailedPrecondition with the daemon's reason.
  Status taken =
      nodes->Reserve("n1", "slurm-room:0:1g.5gb:0", {{0, "1g.5gb", 0}}, 60, /*anchors=*/false);
  EXPECT_EQ(taken.code(), StatusCode::kFailedPrecondition) << taken.ToString();
  EXPECT_THAT(taken.message(), HasSubstr("node n1"));
}

TEST_F(HttpNodeDaemonsE2eTest, ErrorsNameTheNodeAndWhy) {
  StartDaemon();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<NodeDaemons> nodes,
                       NewHttpNodeDaemons(Config(token_file_.string())));
  StatusOr<NodeView> unknown = nodes->State("n9");
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(unknown.status().message(), HasSubstr("node n9 is not configured in test.yaml"));

  ASSERT_OK_AND_ASSIGN(std::unique_ptr<NodeDaemons> no_token,
                       NewHttpNodeDaemons(Config((dir_ / "missing-token").string())));
  StatusOr<NodeView> t = no_token->State("n1");
  EXPECT_EQ(t.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(t.status().message(), HasSubstr("cannot read token file"));

  const std::string wrong = WriteSecret("wrong-token", "not-the-token\n");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<NodeDaemons> bad, NewHttpNodeDaemons(Config(wrong)));
  EXPECT_EQ(bad->State("n1").status().code(), StatusCode::kUnauthenticated);
  // The token file now holds the daemon's token (a rotated token): the 401
  // makes the client read it again and the retried call succeeds.
  WriteSecret("wrong-token", Token() + "\r\n");
  ASSERT_OK(bad->State("n1").status());

  // A daemon that does not answer (stopped): kUnavailable within timeout_s.
  ASSERT_EQ(::kill(daemon_->pid(), SIGSTOP), 0);
  StatusOr<NodeView> stopped = nodes->State("n1");
  ::kill(daemon_->pid(), SIGCONT);
  EXPECT_EQ(stopped.status().code(), StatusCode::kUnavailable) << stopped.status().ToString();
  EXPECT_THAT(stopped.status().message(), HasSubstr("node n1 (http://127.0.0.1:"));
  ASSERT_OK(nodes->State("n1").status());  // and back
}

// §4 step 2 over HTTP: a room made with `anchors` (the Kubernetes extender's, for a pod that
// cannot be evicted) shows its instance anchoring; the allocation that binds it without saying so
// again anchors too, as does one bound with `anchors` (the Slurm prolog's, for a job that cannot
// be requeued); a bind without it does not. What every controller's view reads (GET /v1/node).
TEST_F(HttpNodeDaemonsE2eTest, AnchorsTravelFromRoomsAndBindsToTheView) {
  StartDaemon();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<NodeDaemons> nodes,
                       NewHttpNodeDaemons(Config(token_file_.string())));
  ASSERT_OK(nodes->Reserve("n1", "k8s:ns/svc", {{1, "3g.20gb", 4}}, 60, /*anchors=*/true));
  ASSERT_OK_AND_ASSIGN(NodeView s1, nodes->State("n1"));
  ASSERT_EQ(s1.reservations.size(), 1u);
  EXPECT_TRUE(s1.reservations[0].record.anchors);
  ASSERT_EQ(s1.gpus[1].instances.size(), 1u);
  EXPECT_TRUE(s1.gpus[1].instances[0].anchors);
  EXPECT_TRUE(s1.gpus[1].anchored);
  EXPECT_FALSE(s1.gpus[0].anchored);

  BindRequest pod;  // the node agent's bind: the pod's room, by its profile
  pod.owner = "k8s:ns/svc";
  pod.idempotency_key = "k8s:ns/svc/3g.20gb/0";
  pod.instances = {{"3g.20gb", 1}};
  pod.reservation_prefix = "k8s:ns/svc";
  ASSERT_OK_AND_ASSIGN(DaemonJobRecord a, nodes->Allocate("n1", pod));
  EXPECT_TRUE(a.allocation.anchors);
  BindRequest fixed;  // a prolog's bind of a job that cannot move, placed by the daemon
  fixed.owner = "slurm:5";
  fixed.idempotency_key = "slurm:5:0:n1:0";
  fixed.instances = {{"1g.5gb", 1}};
  fixed.anchors = true;
  ASSERT_OK_AND_ASSIGN(DaemonJobRecord f, nodes->Allocate("n1", fixed));
  EXPECT_TRUE(f.allocation.anchors);
  BindRequest movable = fixed;
  movable.owner = "slurm:6";
  movable.idempotency_key = "slurm:6:0:n1:0";
  movable.anchors = false;
  ASSERT_OK_AND_ASSIGN(DaemonJobRecord m, nodes->Allocate("n1", movable));
  EXPECT_FALSE(m.allocation.anchors);

  ASSERT_OK_AND_ASSIGN(NodeView s2, nodes->State("n1"));
  int anchoring = 0, seen = 0;
  for (const GpuView& g : s2.gpus) {
    for (const InstanceView& in : g.instances) {
      if (!in.busy) continue;
      ++seen;
      const bool want = in.owner == "k8s:ns/svc" || in.owner == "slurm:5";
      EXPECT_EQ(in.anchors, want) << in.owner;
      anchoring += in.anchors ? 1 : 0;
    }
  }
  EXPECT_EQ(seen, 3);
  EXPECT_EQ(anchoring, 2);
}

}  // namespace
}  // namespace migsched
