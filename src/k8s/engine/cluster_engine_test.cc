// The extender's engine on node states written by hand (cluster/testing/nodes.h)
// and a node-daemon double that records reservations (cluster/testing/fake_node_daemons.h).
// A100 40GB: 8 slices; 4g.20gb only at 0-3; 3g.20gb at 0-3 or 4-7; 7 compute slices.
#include "k8s/engine/cluster_engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cluster/testing/fake_node_daemons.h"
#include "cluster/testing/nodes.h"
#include "testing/test_util.h"

namespace migsched::k8s {
namespace {

using migsched::testing::MakeNode;

PodInfo Pod(const std::string& uid, std::vector<ContainerMig> containers) {
  PodInfo p;
  p.name = "p-" + uid;
  p.ns = "ml";
  p.uid = uid;
  p.containers = std::move(containers);
  return p;
}

class ClusterEngineTest : public ::testing::Test {
 protected:
  void Make(double bind_wait_s = 0.2, std::function<bool(const std::string&)> fault = nullptr) {
    EngineOptions o;
    o.fault = std::move(fault);
    o.policy = "frag-aware";
    o.refresh_s = 0;  // every call reads the (fake) daemons again
    o.bind_wait_s = bind_wait_s;
    o.poll_s = 0.01;
    o.state_threads = 1;  // the double is not thread-safe
    o.scheduler.reuse_first = reuse_and_anchor;
    o.scheduler.anchored_together = reuse_and_anchor;
    auto e = ClusterEngine::Create(&daemons, &directory, &migsched::testing::BundledCatalog(), o);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    engine = std::move(*e);
  }
  bool reuse_and_anchor = false;  // reuse first and anchored together (full's defaults), for Make
  migsched::testing::FakeNodeDaemons daemons;
  StaticNodeDirectory directory{{{"n1", "http://n1"}, {"n2", "http://n2"}, {"n3", "http://n3"}}};
  std::unique_ptr<ClusterEngine> engine;
};

TEST_F(ClusterEngineTest, FilterSaysWhyPerNode) {
  // n1: one GPU with a busy 1g.5gb at 1 (4g.20gb's only placement 0-3 is taken);
  // n2: one empty GPU; n3 does not answer (no state); n9 has no daemon.
  daemons.states["n1"] = MakeNode("n1", 1, "A100 40GB", {"0:1g.5gb@1=alloc:k8s:a"});
  daemons.states["n2"] = MakeNode("n2", 1, "A100 40GB", {});
  Make();
  const PodInfo pod = Pod("u1", {{"c", {{"4g.20gb", 1}}}});
  const auto v = engine->Filter(pod, {"n1", "n2", "n3", "n9"});
  ASSERT_EQ(v.size(), 4u);
  EXPECT_FALSE(v[0].fits);
  EXPECT_EQ(v[0].reason,
            "no 4g.20gb placement free: GPU 0: slices 0, 2-7 free but 4g.20gb goes only at 0-3 "
            "(1g.5gb at 1 busy)");
  EXPECT_TRUE(v[1].fits);
  EXPECT_FALSE(v[2].fits);
  EXPECT_NE(v[2].reason.find("the node daemon of n3 cannot be reached: n3: connection refused"),
            std::string::npos)
      << v[2].reason;
  EXPECT_EQ(v[3].reason, "n9 has no migsched node daemon (known: n1, n2, n3)");
}

// Regression filter_answer_grows_with_nodes_times_daemons: the reason of a node without a
// daemon listed every node with one; kube-scheduler sends every node that passes its own
// filters, so on 502 daemons and 2000 CPU nodes the answer was 19 MB. At most five are named.
TEST(ClusterEngineKnownNodesTest, TheReasonNamesAtMostFiveNodesWithADaemon) {
  migsched::testing::FakeNodeDaemons daemons;
  std::vector<StaticNode> nodes;
  for (int i = 1; i <= 7; ++i) {
    const std::string name = "n" + std::to_string(i);
    nodes.push_back({name, "http://" + name});
    daemons.states[name] = MakeNode(name, 1, "A100 40GB", {});
  }
  StaticNodeDirectory directory{nodes};
  EngineOptions o;
  o.policy = "frag-aware";
  o.refresh_s = 0;
  o.state_threads = 1;
  auto e = ClusterEngine::Create(&daemons, &directory, &migsched::testing::BundledCatalog(), o);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  const auto v = (*e)->Filter(Pod("u1", {{"c", {{"1g.5gb", 1}}}}), {"cpu-1", "n1"});
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].reason,
            "cpu-1 has no migsched node daemon (known: n1, n2, n3, n4, n5, and 2 more)");
  EXPECT_TRUE(v[1].fits);
}

TEST_F(ClusterEngineTest, ADrainedGpuOffersNothingAndTheOtherNodesAreUntouched) {
  // n1: GPU 0 drained (empty), GPU 1 with a 1g.5gb at 0: a 7g.40gb fits on
  // neither. n2: one empty GPU. Trying n1 first must not leave anything on n2.
  NodeView n1 = MakeNode("n1", 2, "A100 40GB", {"1:1g.5gb@0=alloc:k8s:a"});
  n1.gpus[0].draining = true;
  daemons.states["n1"] = n1;
  daemons.states["n2"] = MakeNode("n2", 1, "A100 40GB", {});
  Make();
  const PodInfo pod = Pod("u1", {{"c", {{"7g.40gb", 1}}}});
  const auto v = engine->Filter(pod, {"n1", "n2", "n1"});
  ASSERT_EQ(v.size(), 3u);
  EXPECT_FALSE(v[0].fits);
  // GPU 1: the 1g.5gb holds one of the 7 compute slices; 7g.40gb needs all 7.
  EXPECT_EQ(v[0].reason,
            "no 7g.40gb placement free: GPU 0: drained; GPU 1: only 6 of 7 compute slices free, "
            "7g.40gb needs 7");
  EXPECT_TRUE(v[1].fits);
  EXPECT_EQ(v[2].reason, v[0].reason);  // n2's try left n1 as it was
  // Both scores from one call: n2 the policy's choice, n1 nothing.
  EXPECT_EQ(engine->Prioritize(pod, {"n1", "n2"}), (std::vector<int64_t>{0, 10}));
}

TEST_F(ClusterEngineTest, UnknownProfilesAndRequestsANodeCanNeverHold) {
  daemons.states["n1"] = MakeNode("n1", 1, "A100 40GB", {});
  Make();
  EXPECT_EQ(engine->Filter(Pod("u", {{"c", {{"9g.99gb", 1}}}}), {"n1"})[0].reason,
            "profile 9g.99gb is not offered by any GPU of n1 (profiles: 1g.5gb, 1g.10gb, 2g.10gb, "
            "3g.20gb, 4g.20gb, 7g.40gb)");
  // One A100 holds one 4g.20gb at most.
  EXPECT_EQ(engine->Filter(Pod("u", {{"c", {{"4g.20gb", 2}}}}), {"n1"})[0].reason,
            "n1 can never hold 2 4g.20gb at once (at most 1)");
}

TEST_F(ClusterEngineTest, RegressionNoFitReasonSaidNowForARequestTheNodeNeverHolds) {
  // One 4g.20gb and two 3g.20gb on a node of one A100 40GB: each profile alone fits (at most one
  // 4g.20gb, two 3g.20gb), but together they need 4 + 2 x 3 = 10 compute slices of its 7. The
  // reason said they "do not fit on n1 together now", as if waiting could help.
  daemons.states["n1"] = MakeNode("n1", 1, "A100 40GB", {});
  Make();
  EXPECT_EQ(engine->Filter(Pod("u", {{"c", {{"4g.20gb", 1}, {"3g.20gb", 2}}}}), {"n1"})[0].reason,
            "n1 can never hold 4g.20gb + 2x 3g.20gb at once (they need 10 compute slices "
            "together; it has 7)");
}

TEST_F(ClusterEngineTest, PrioritizeGivesTheOnlyNodeThatFitsTen) {
  daemons.states["n1"] = MakeNode("n1", 1, "A100 40GB", {"0:1g.5gb@1=alloc:k8s:a"});
  daemons.states["n2"] = MakeNode("n2", 1, "A100 40GB", {});
  daemons.states["n3"] = MakeNode("n3", 1, "A100 40GB", {"0:7g.40gb@0=alloc:k8s:b"});
  Make();
  const PodInfo pod = Pod("u1", {{"c", {{"4g.20gb", 1}}}});
  EXPECT_EQ(engine->Prioritize(pod, {"n1", "n2", "n3"}), (std::vector<int64_t>{0, 10, 0}));
}

TEST_F(ClusterEngineTest, ReserveHoldsThePlacementUnderThePodsKey) {
  daemons.states["n1"] = MakeNode("n1", 2, "A100 40GB", {"0:7g.40gb@0=alloc:k8s:b"});
  Make();
  const PodInfo pod = Pod("u1", {{"a", {{"1g.5gb", 1}}}, {"b", {{"2g.10gb", 1}}}});
  auto r = engine->Reserve(pod, "n1");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->key, "k8s:u1");
  ASSERT_EQ(r->instances.size(), 2u);
  // GPU 0 is full: both go to GPU 1, one per container.
  EXPECT_EQ(r->instances[0].container, "a");
  EXPECT_EQ(r->instances[0].profile, "1g.5gb");
  EXPECT_EQ(r->instances[0].gpu, NvmlIndex{1});
  EXPECT_EQ(r->instances[0].size, 1);
  EXPECT_EQ(r->instances[1].container, "b");
  EXPECT_EQ(r->instances[1].profile, "2g.10gb");
  EXPECT_EQ(r->instances[1].size, 2);
  EXPECT_EQ(r->instances[1].gpu_uuid, "GPU-n1-1");
  // The reservation, then its node read again (the next filter sees it).
  ASSERT_GE(daemons.calls.size(), 2u);
  // The pod has no migratable annotation: it can never leave its GPU, and its room says so.
  EXPECT_EQ(daemons.calls[daemons.calls.size() - 2], "reserve n1 k8s:u1 ttl=300 anchors");
  EXPECT_EQ(daemons.calls.back(), "state n1");
}

// §4 step 2 after the extender restarted (a new engine): a pod that can never leave its GPU (no
// migratable annotation) was bound before, and what says so is its allocation in the daemon's view
// (InstanceView::anchors), not this engine's memory, so it holds even with migration off. A new
// such pod goes beside it on GPU 0, although GPU 1 holds an idle 1g.5gb that reuse first would
// take; where the allocation does not say it anchors, the pod reuses GPU 1's instance. By hand:
// with the rule the anchored GPUs are tried first, and GPU 0 (1g.5gb at 0 taken) has room for a
// 1g.5gb. The pod's room says it anchors, so its allocation will too.
TEST_F(ClusterEngineTest, AnExtenderThatRestartedKnowsFromTheViewWhichPodsCannotMove) {
  for (const bool anchors : {true, false}) {
    SCOPED_TRACE(anchors ? "the allocation anchors" : "it does not say so");
    NodeView n1 = MakeNode("n1", 2, "A100 40GB", {"0:1g.5gb@0=alloc:k8s:svc", "1:1g.5gb@0=idle"});
    n1.gpus[0].instances[0].anchors = anchors;
    daemons.states["n1"] = n1;
    reuse_and_anchor = true;
    Make();
    auto r = engine->Reserve(Pod("u1", {{"c", {{"1g.5gb", 1}}}}), "n1");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->instances.size(), 1u);
    EXPECT_EQ(r->instances[0].gpu, NvmlIndex::Of(anchors ? 0 : 1));
    ASSERT_GE(daemons.calls.size(), 2u);
    EXPECT_EQ(daemons.calls[daemons.calls.size() - 2], "reserve n1 k8s:u1 ttl=300 anchors");
  }
}

TEST_F(ClusterEngineTest, ABindWaitsForAnotherPodsPendingReservationOfTheSameProfile) {
  NodeView n1 = MakeNode("n1", 1, "A100 40GB", {});
  n1.reservations.push_back(migsched::testing::Reserved(
      {.owner = "k8s:other", .placements = {{0, "1g.5gb", 0}}, .expires_at = 1e12}));
  daemons.states["n1"] = n1;
  Make(/*bind_wait_s=*/0.1);
  auto same = engine->Reserve(Pod("u1", {{"c", {{"1g.5gb", 1}}}}), "n1");
  ASSERT_FALSE(same.ok());
  EXPECT_NE(same.status().message().find("has not yet started the pod of reservation k8s:other"),
            std::string::npos)
      << same.status().message();
  // Another profile is not ambiguous: it goes ahead.
  EXPECT_TRUE(engine->Reserve(Pod("u2", {{"c", {{"3g.20gb", 1}}}}), "n1").ok());
}

// Regression (own_reservation_blocked_its_pod): the extender was killed after it reserved pod
// u1's 4g.20gb on n1 and before the Binding, so u1 is filtered again with its reservation still
// on n1. That instance counted as another's: n1 was refused ("already 1 instances of 4g.20gb"),
// the pod counted as waiting (the migration loop evicted a running pod for it), and a bind
// elsewhere left the old room held until its TTL. By hand: n1 is one A100 whose only 4g.20gb
// placement (0-3) is the pod's own reservation, n2 an empty A100. Filter: both fit. Prioritize:
// n1, the pod's room, 10. A bind on n1 keeps that room (reserve n1 again, nothing released); a
// bind on n2 reserves there and releases the room on n1.
TEST_F(ClusterEngineTest, APodsOwnRoomFromAnUnfinishedBindIsItsOwn) {
  NodeView n1 = MakeNode("n1", 1, "A100 40GB", {"0:4g.20gb@0=resv:k8s:u1"});
  migsched::testing::AddReservation(&n1, "k8s:u1", 0, "4g.20gb", 0);
  daemons.states["n1"] = n1;
  daemons.states["n2"] = MakeNode("n2", 1, "A100 40GB", {});
  Make();
  const PodInfo pod = Pod("u1", {{"c", {{"4g.20gb", 1}}}});
  const auto v = engine->Filter(pod, {"n1", "n2"});
  ASSERT_EQ(v.size(), 2u);
  EXPECT_TRUE(v[0].fits) << v[0].reason;
  EXPECT_TRUE(v[1].fits) << v[1].reason;
  EXPECT_TRUE(engine->WaitingPods(0).empty());
  EXPECT_EQ(engine->Prioritize(pod, {"n1", "n2"}), (std::vector<int64_t>{10, 0}));
  // Another pod does not get that room.
  const auto other = engine->Filter(Pod("u2", {{"c", {{"4g.20gb", 1}}}}), {"n1"});
  ASSERT_EQ(other.size(), 1u);
  EXPECT_FALSE(other[0].fits);

  daemons.calls.clear();
  auto kept = engine->Reserve(pod, "n1");
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  ASSERT_EQ(kept->instances.size(), 1u);
  EXPECT_EQ(kept->instances[0].start, 0);
  for (const std::string& c : daemons.calls) EXPECT_EQ(c.find("unreserve"), std::string::npos) << c;

  // The room on n1 is released once the pod is bound to n2 (ReleaseElsewhere, after the
  // Binding), not by the Reserve on n2: a late Binding to n1 may still land (regression:
  // trial_retried_bind_released_the_room_of_the_binding_that_landed).
  daemons.calls.clear();
  auto moved = engine->Reserve(pod, "n2");
  ASSERT_TRUE(moved.ok()) << moved.status().ToString();
  EXPECT_NE(
      std::find(daemons.calls.begin(), daemons.calls.end(), "reserve n2 k8s:u1 ttl=300 anchors"),
      daemons.calls.end());
  EXPECT_EQ(std::find(daemons.calls.begin(), daemons.calls.end(), "unreserve n1 k8s:u1"),
            daemons.calls.end());
  daemons.calls.clear();
  engine->ReleaseElsewhere(pod, "n2");
  EXPECT_NE(std::find(daemons.calls.begin(), daemons.calls.end(), "unreserve n1 k8s:u1"),
            daemons.calls.end());
  EXPECT_EQ(std::find(daemons.calls.begin(), daemons.calls.end(), "unreserve n2 k8s:u1"),
            daemons.calls.end());
}

// An internal error of the core while placing one pod (the fault drill fails pod u1's decisions)
// refuses that pod's decision only: the filter answers for every node (u1 fits none, the reason
// says why), the engine counts it and goes on, and another pod is placed on the same nodes.
TEST_F(ClusterEngineTest, AnInternalErrorRefusesOnePodsDecisionNotTheExtender) {
  daemons.states["n1"] = MakeNode("n1", 1, "A100 40GB", {});
  daemons.states["n2"] = MakeNode("n2", 1, "A100 40GB", {});
  Make(0.2, [](const std::string& key) { return key == "k8s:u1"; });
  const auto bad = engine->Filter(Pod("u1", {{"c", {{"1g.5gb", 1}}}}), {"n1", "n2"});
  ASSERT_EQ(bad.size(), 2u);
  for (const auto& v : bad) {
    EXPECT_FALSE(v.fits);
    EXPECT_NE(v.reason.find("internal error"), std::string::npos) << v.reason;
  }
  EXPECT_EQ(engine->internal_errors(), 2);
  const auto good = engine->Filter(Pod("u2", {{"c", {{"1g.5gb", 1}}}}), {"n1", "n2"});
  ASSERT_EQ(good.size(), 2u);
  EXPECT_TRUE(good[0].fits);
  EXPECT_TRUE(good[1].fits);
  EXPECT_EQ(engine->internal_errors(), 2);
}

// Node daemons where n1 answers at once and n2 hangs: a read of n2 returns (with a timeout error)
// only once the test lets it go, as a stopped daemon answers only at its client's read timeout.
class HangingDaemons : public NodeDaemons {
 public:
  StatusOr<NodeView> State(const std::string& node) override {
    if (node == "n2") {
      std::unique_lock lock(mu_);
      ++n2_reads_;
      cv_.wait(lock, [this] { return released_; });
      return UnavailableError("n2: timed out");
    }
    return MakeNode(node, 1, "A100 40GB", {});
  }
  Status Reserve(const std::string&, const std::string&, const std::vector<PlacementRef>&, double,
                 bool) override {
    return Status::Ok();
  }
  Status Unreserve(const std::string&, const std::string&) override { return Status::Ok(); }
  StatusOr<DaemonJobRecord> Allocate(const std::string&, const BindRequest&) override {
    return InternalError("not in this test");
  }
  Status Release(const std::string&, int64_t) override { return Status::Ok(); }

  // Reads of n2 begun so far (each still hangs until Let()).
  int n2_reads() {
    std::lock_guard lock(mu_);
    return n2_reads_;
  }
  // Every read of n2, under way or to come, returns.
  void Let() {
    {
      std::lock_guard lock(mu_);
      released_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int n2_reads_ = 0;
  bool released_ = false;
};

// Lets every read of n2 go at scope end (declared after the engine: before its readers are
// joined, also when an assertion returns early).
struct LetAtEnd {
  HangingDaemons& daemons;
  ~LetAtEnd() { daemons.Let(); }
};

// Runs `call` on a thread of its own and gives its result, or nullopt when it has not returned
// within 60 s: a liveness bound turning a call blocked on the hung daemon into a failure (the
// engine's own waits below are an hour or a fifth of a second), not a measure of speed.
template <typename F>
auto Returns(HangingDaemons& daemons, F call) -> std::optional<decltype(call())> {
  auto f = std::async(std::launch::async, std::move(call));
  if (f.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    daemons.Let();  // the test fails; the call ends and its thread does not outlive its captures
    f.wait();
    return std::nullopt;
  }
  return f.get();
}

// Regression one_hung_daemon_slows_every_filter: with one node's daemon stopped, a filter
// naming only the other node took 10-20 s, six concurrent filters finished at 10..40 s (they
// queued on the stopped daemon's connection one after another) and /readyz took 10-16 s. A call
// now waits only for the nodes it names, each at most node_wait_s, concurrent calls share one
// read per node, and NotReady waits for none. n2's reads hang until the end of the test.
TEST(ClusterEngineHungDaemonTest, OneHungDaemonSlowsEveryFilter) {
  HangingDaemons daemons;
  StaticNodeDirectory directory{{{"n1", "http://n1"}, {"n2", "http://n2"}}};
  EngineOptions o;
  o.policy = "frag-aware";
  o.refresh_s = 0;  // every call reads the nodes it names again
  o.state_threads = 4;
  const PodInfo pod = Pod("u1", {{"c", {{"1g.5gb", 1}}}});
  {
    // node_wait_s an hour: a call that waited for n2 at all would not return in the test.
    o.node_wait_s = 3600;
    auto e = ClusterEngine::Create(&daemons, &directory, &migsched::testing::BundledCatalog(), o);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    ClusterEngine& engine = **e;
    LetAtEnd let{daemons};
    // Only n1 named: n2 is neither read nor waited for.
    auto only_n1 = Returns(daemons, [&] { return engine.Filter(pod, {"n1"}); });
    ASSERT_TRUE(only_n1.has_value()) << "the filter of n1 waited for n2";
    ASSERT_EQ(only_n1->size(), 1u);
    EXPECT_TRUE((*only_n1)[0].fits);
    EXPECT_EQ(daemons.n2_reads(), 0);
    // Readiness waits for no daemon: n1 has answered, so the extender is ready (n2's read is
    // begun, and hangs).
    auto ready = Returns(daemons, [&] { return engine.NotReady(); });
    ASSERT_TRUE(ready.has_value()) << "NotReady waited for n2";
    EXPECT_EQ(*ready, "");
  }
  HangingDaemons hung;
  o.node_wait_s = 0.2;
  auto e = ClusterEngine::Create(&hung, &directory, &migsched::testing::BundledCatalog(), o);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  ClusterEngine& engine = **e;
  LetAtEnd let{hung};
  // Six at once, naming both: each answers once node_wait_s has passed for n2, which is refused
  // as timed out, and all six share n2's one read (none queues behind another's).
  std::vector<std::vector<PlacementEngine::Verdict>> verdicts(6);
  std::vector<std::thread> calls;
  for (int i = 0; i < 6; ++i) {
    calls.emplace_back([&, i] {
      verdicts[i] =
          engine.Filter(Pod("p" + std::to_string(i), {{"c", {{"1g.5gb", 1}}}}), {"n1", "n2"});
    });
  }
  for (auto& t : calls) t.join();
  EXPECT_EQ(hung.n2_reads(), 1);
  for (int i = 0; i < 6; ++i) {
    ASSERT_EQ(verdicts[i].size(), 2u);
    EXPECT_TRUE(verdicts[i][0].fits);
    EXPECT_FALSE(verdicts[i][1].fits);
    EXPECT_NE(verdicts[i][1].reason.find("the node daemon of n2 cannot be reached: its node "
                                         "daemon did not answer within 0.2 s (timed out"),
              std::string::npos)
        << verdicts[i][1].reason;
  }
}

}  // namespace
}  // namespace migsched::k8s
