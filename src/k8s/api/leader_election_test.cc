// Leader election against the loopback API server's Lease endpoints, on a
// simulated clock (seconds passed to each round).
#include "k8s/api/leader_election.h"

#include <gtest/gtest.h>

#include "k8s/testing/recording_api_server.h"

namespace migsched::k8s {
namespace {

using nlohmann::json;

LeaseOptions Replica(const std::string& identity) {
  LeaseOptions o;
  o.identity = identity;  // lease_duration_s 15, renew_deadline_s 10
  return o;
}

json StoredLease(const RecordingApiServer& api) {
  auto l = api.Lease("migsched-system", "migsched-extender");
  return l ? *l : json();
}

TEST(LeaderElectorTest, OneReplicaLeadsAndAnotherTakesOverWhenItStopsRenewing) {
  RecordingApiServer api("t");
  auto client = api.StartWithClient();
  ASSERT_NE(client, nullptr);
  LeaderElector a(client.get(), Replica("extender-a"));
  LeaderElector b(client.get(), Replica("extender-b"));

  // t=0: a creates the Lease; b finds it held.
  EXPECT_TRUE(*a.TryAcquireOrRenew(0));
  EXPECT_FALSE(*b.TryAcquireOrRenew(0));
  EXPECT_EQ(StoredLease(api)["spec"]["holderIdentity"], "extender-a");
  EXPECT_EQ(StoredLease(api)["spec"]["leaseDurationSeconds"], 15);
  EXPECT_EQ(StoredLease(api)["spec"]["leaseTransitions"], 0);
  EXPECT_EQ(a.NotLeaderReason(0), "");
  EXPECT_EQ(b.NotLeaderReason(0),
            "not the leader (the lease migsched-system/migsched-extender is held by extender-a)");

  // a renews at t=2; b sees the renewal at t=2 and waits 15 s from then.
  EXPECT_TRUE(*a.TryAcquireOrRenew(2));
  EXPECT_FALSE(*b.TryAcquireOrRenew(2));
  EXPECT_FALSE(*b.TryAcquireOrRenew(16.9));  // 2 + 15 not reached
  // a stops (e.g. its node is gone): it leads until its renew deadline, 2 + 10.
  EXPECT_TRUE(a.IsLeader(11.9));
  EXPECT_FALSE(a.IsLeader(12));
  EXPECT_EQ(a.NotLeaderReason(12),
            "not the leader (the lease migsched-system/migsched-extender was not renewed for 10 "
            "s)");
  // t=17: b takes over, a transition.
  EXPECT_TRUE(*b.TryAcquireOrRenew(17));
  EXPECT_TRUE(b.IsLeader(17));
  EXPECT_EQ(StoredLease(api)["spec"]["holderIdentity"], "extender-b");
  EXPECT_EQ(StoredLease(api)["spec"]["leaseTransitions"], 1);
  // a comes back: it sees b's lease and stays a follower.
  EXPECT_FALSE(*a.TryAcquireOrRenew(18));
  EXPECT_FALSE(a.IsLeader(18));
  EXPECT_TRUE(*b.TryAcquireOrRenew(19));
}

TEST(LeaderElectorTest, ReleaseHandsTheLeaseOverAtOnce) {
  RecordingApiServer api("t");
  auto client = api.StartWithClient();
  ASSERT_NE(client, nullptr);
  LeaderElector a(client.get(), Replica("extender-a"));
  LeaderElector b(client.get(), Replica("extender-b"));
  ASSERT_TRUE(*a.TryAcquireOrRenew(0));
  ASSERT_FALSE(*b.TryAcquireOrRenew(1));
  ASSERT_TRUE(a.Release().ok());
  EXPECT_FALSE(a.IsLeader(1));
  EXPECT_EQ(StoredLease(api)["spec"]["holderIdentity"], "");
  // Without the release b would wait until 1 + 15.
  EXPECT_TRUE(*b.TryAcquireOrRenew(2));
  EXPECT_EQ(StoredLease(api)["spec"]["holderIdentity"], "extender-b");
}

TEST(LeaderElectorTest, AFailedRenewalKeepsLeadershipOnlyUntilTheDeadline) {
  RecordingApiServer api("t");
  auto client = api.StartWithClient();
  ASSERT_NE(client, nullptr);
  LeaderElector a(client.get(), Replica("extender-a"));
  ASSERT_TRUE(*a.TryAcquireOrRenew(0));
  api.FailNext("/leases/migsched-extender", 500, "etcdserver: request timed out", 10);
  auto r = a.TryAcquireOrRenew(2);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "GET /apis/coordination.k8s.io/v1/namespaces/migsched-system/leases/migsched-extender: "
            "HTTP 500: etcdserver: request timed out");
  EXPECT_TRUE(a.IsLeader(9.9));
  EXPECT_FALSE(a.IsLeader(10));
}

// The test API server's optimistic concurrency, which makes two replicas'
// simultaneous takeovers safe: the second PUT with the same resourceVersion is a 409.
TEST(LeaderElectorTest, TheTestApiServerRefusesAStaleResourceVersion) {
  RecordingApiServer api("t");
  auto client = api.StartWithClient();
  ASSERT_NE(client, nullptr);
  LeaderElector a(client.get(), Replica("extender-a"));
  ASSERT_TRUE(*a.TryAcquireOrRenew(0));
  const std::string path =
      "/apis/coordination.k8s.io/v1/namespaces/migsched-system/leases/migsched-extender";
  json lease = StoredLease(api);
  lease["spec"]["holderIdentity"] = "extender-b";
  auto first = client->Send("PUT", path, lease.dump(), "application/json");
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->status, 200);
  lease["spec"]["holderIdentity"] = "extender-c";  // the same, now stale, resourceVersion
  auto second = client->Send("PUT", path, lease.dump(), "application/json");
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->status, 409);
  EXPECT_EQ(StoredLease(api)["spec"]["holderIdentity"], "extender-b");
  // a's next renewal finds b's record: a new observation, so a follows.
  EXPECT_FALSE(*a.TryAcquireOrRenew(1));
}

}  // namespace
}  // namespace migsched::k8s
