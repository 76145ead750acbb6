#include "nodeapi/connection_gate.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vector>

namespace migsched {
namespace {

// A connected socket pair: [0] is the server's end the gate may shut down,
// [1] the client's, which then reads EOF.
struct Pair {
  int fd[2] = {-1, -1};
  Pair() { EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fd), 0); }
  ~Pair() {
    ::close(fd[0]);
    ::close(fd[1]);
  }
  // Whether the server's end was shut down (the client reads EOF at once).
  bool ShutDown() const {
    pollfd p{fd[1], POLLIN, 0};
    if (::poll(&p, 1, 0) <= 0) return false;
    char b;
    return ::recv(fd[1], &b, 1, MSG_DONTWAIT) == 0;
  }
};

TEST(ConnectionGateTest, ThePerPeerCapRefusesTheNPlusFirstWhenAllAreAuthenticated) {
  ConnectionGate gate(/*max_per_peer=*/2, /*max_unauthenticated=*/100);
  Pair a, b, c, other;
  const uint64_t ta = gate.Admit(a.fd[0], "10.0.0.1");
  const uint64_t tb = gate.Admit(b.fd[0], "10.0.0.1");
  ASSERT_NE(ta, 0u);
  ASSERT_NE(tb, 0u);
  gate.Authenticated(ta);
  gate.Authenticated(tb);
  EXPECT_EQ(gate.Admit(c.fd[0], "10.0.0.1"), 0u);      // the third of the same peer
  EXPECT_NE(gate.Admit(other.fd[0], "10.0.0.2"), 0u);  // another peer is not affected
  EXPECT_FALSE(a.ShutDown());
  EXPECT_FALSE(b.ShutDown());
  ConnectionGate::Counts n = gate.counts();
  EXPECT_EQ(n.connections, 3);
  EXPECT_EQ(n.unauthenticated, 1);
  EXPECT_EQ(n.refused, 1);
  // One leaves: room again.
  gate.Release(ta);
  EXPECT_NE(gate.Admit(c.fd[0], "10.0.0.1"), 0u);
}

TEST(ConnectionGateTest, APeerAtItsCapEvictsItsOwnOldestUnauthenticatedConnection) {
  ConnectionGate gate(2, 100);
  Pair a, b, c;
  const uint64_t ta = gate.Admit(a.fd[0], "p");
  gate.Admit(b.fd[0], "p");
  gate.Authenticated(ta);  // a is authenticated: b is the oldest unauthenticated
  EXPECT_NE(gate.Admit(c.fd[0], "p"), 0u);
  EXPECT_FALSE(a.ShutDown());
  EXPECT_TRUE(b.ShutDown());
  EXPECT_FALSE(c.ShutDown());
  EXPECT_EQ(gate.counts().evicted, 1);
  EXPECT_EQ(gate.counts().connections, 2);
}

TEST(ConnectionGateTest, TheUnauthenticatedCapEvictsTheOldestOfAnyPeer) {
  ConnectionGate gate(100, 2);
  Pair a, b, c, d;
  const uint64_t td = gate.Admit(d.fd[0], "x");
  gate.Authenticated(td);
  const uint64_t ta = gate.Admit(a.fd[0], "x");
  gate.Admit(b.fd[0], "y");
  gate.Admit(c.fd[0], "z");  // a third unauthenticated one: a (the oldest) goes
  EXPECT_TRUE(a.ShutDown());
  EXPECT_FALSE(b.ShutDown());
  EXPECT_FALSE(c.ShutDown());
  EXPECT_FALSE(d.ShutDown());  // authenticated ones are never evicted
  EXPECT_EQ(gate.counts().unauthenticated, 2);
  // The evicted connection's thread releases it later: counted once.
  gate.Release(ta);
  EXPECT_EQ(gate.counts().connections, 3);
  EXPECT_EQ(gate.counts().unauthenticated, 2);
}

// Regression evicted_request_carried_out: a connection evicted after its request had been read
// into the server's buffer was still authenticated, and the request carried out (a job stored)
// although its answer could not reach the client. Authenticated now says false for it.
TEST(ConnectionGateTest, AnEvictedConnectionIsNotAuthenticated) {
  ConnectionGate gate(/*max_per_peer=*/1, /*max_unauthenticated=*/100);
  Pair a, b;
  const uint64_t ta = gate.Admit(a.fd[0], "10.0.0.1");
  const uint64_t tb = gate.Admit(b.fd[0], "10.0.0.1");  // evicts a, the peer's oldest
  ASSERT_NE(tb, 0u);
  EXPECT_TRUE(a.ShutDown());
  EXPECT_FALSE(gate.Authenticated(ta));
  EXPECT_TRUE(gate.Authenticated(tb));
  EXPECT_TRUE(gate.Authenticated(tb));  // a second request on the same connection
  EXPECT_EQ(gate.counts().unauthenticated, 0);
  gate.Release(ta);
  gate.Release(tb);
}

}  // namespace
}  // namespace migsched
