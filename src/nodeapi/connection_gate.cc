#include "nodeapi/connection_gate.h"

#include <sys/socket.h>

#include <algorithm>

namespace migsched {

ConnectionGate::ConnectionGate(int max_per_peer, int max_unauthenticated)
    : max_per_peer_(std::max(1, max_per_peer)),
      max_unauthenticated_(std::max(1, max_unauthenticated)) {}

bool ConnectionGate::EvictOldest(const std::string& peer) {
  for (auto& [ticket, e] : entries_) {
    if (e.evicted || e.authenticated || (!peer.empty() && e.peer != peer)) continue;
    e.evicted = true;
    ::shutdown(e.fd, SHUT_RDWR);
    --counts_.connections;
    --counts_.unauthenticated;
    if (--per_peer_[e.peer] <= 0) per_peer_.erase(e.peer);
    ++counts_.evicted;
    return true;
  }
  return false;
}

uint64_t ConnectionGate::Admit(int fd, const std::string& peer) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = per_peer_.find(peer);
  if (it != per_peer_.end() && it->second >= max_per_peer_ && !EvictOldest(peer)) {
    ++counts_.refused;
    return 0;
  }
  if (counts_.unauthenticated >= max_unauthenticated_) (void)EvictOldest("");
  const uint64_t ticket = next_ticket_++;
  entries_[ticket] = Entry{fd, peer, false, false};
  ++per_peer_[peer];
  ++counts_.connections;
  ++counts_.unauthenticated;
  return ticket;
}

bool ConnectionGate::Authenticated(uint64_t ticket) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(ticket);
  if (it == entries_.end() || it->second.evicted) return false;
  if (it->second.authenticated) return true;
  it->second.authenticated = true;
  --counts_.unauthenticated;
  return true;
}

void ConnectionGate::Release(uint64_t ticket) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(ticket);
  if (it == entries_.end()) return;
  const Entry& e = it->second;
  if (!e.evicted) {
    --counts_.connections;
    if (!e.authenticated) --counts_.unauthenticated;
    if (--per_peer_[e.peer] <= 0) per_peer_.erase(e.peer);
  }
  entries_.erase(it);
}

ConnectionGate::Counts ConnectionGate::counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counts_;
}

}  // namespace migsched
