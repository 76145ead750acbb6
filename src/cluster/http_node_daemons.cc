#include "cluster/http_node_daemons.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <fstream>
#include <map>
#include <mutex>
#include <optional>

#include "nodeapi/node_client.h"
#include "nodeapi/token.h"

namespace migsched {
namespace {

// One node: its client (one keep-alive connection, so one call at a time,
// guarded by mu).
struct Node {
  NodeDaemonEndpoint endpoint;
  std::mutex mu;
  std::optional<NodeClient> client;  // guarded by mu; nullopt: no token (token_error)
  std::string token_error;           // guarded by mu
};

class HttpNodeDaemons : public NodeDaemons {
 public:
  explicit HttpNodeDaemons(HttpNodeDaemonsConfig config) : config_(std::move(config)) {
    for (const NodeDaemonEndpoint& ep : config_.nodes) {
      auto n = std::make_unique<Node>();
      n->endpoint = ep;
      Connect(n.get());
      nodes_[ep.name] = std::move(n);
    }
  }

  StatusOr<NodeView> State(const std::string& node) override {
    return WithClient<NodeView>(node, [&](Node* n) { return n->client->Node(); });
  }

  Status Reserve(const std::string& node, const std::string& key,
                 const std::vector<PlacementRef>& placements, double ttl_s, bool anchors) override {
    return WithClient<bool>(node,
                            [&](Node* n) -> StatusOr<bool> {
                              ReservationRequest r;
                              r.owner = key;
                              r.ttl_s = ttl_s;
                              r.placements = placements;
                              r.anchors = anchors;
                              RETURN_IF_ERROR(n->client->Reserve(r).status());
                              return true;
                            })
        .status();
  }

  Status Unreserve(const std::string& node, const std::string& key) override {
    return WithClient<bool>(node,
                            [&](Node* n) -> StatusOr<bool> {
                              Status st = n->client->ReleaseReservation(key);
                              if (!st.ok() && st.code() != StatusCode::kNotFound) return st;
                              return true;
                            })
        .status();
  }

  StatusOr<DaemonJobRecord> Allocate(const std::string& node, const BindRequest& request) override {
    return WithClient<DaemonJobRecord>(node, [&](Node* n) -> StatusOr<DaemonJobRecord> {
      AllocationRequest r;
      r.owner = request.owner;
      r.reservation_prefix = request.reservation_prefix;
      r.anchors = request.anchors;
      for (const ProfileCount& pc : request.instances) {
        for (int c = 0; c < pc.count; ++c) r.instances.push_back({-1, pc.profile, -1});
      }
      ASSIGN_OR_RETURN(DaemonJobRecord rec, n->client->Allocate(r, request.idempotency_key));
      if (rec.state != JobState::kRunning) {
        // A failed bind is stored as a failed allocation with its reason.
        return FailedPreconditionError(
            fmt::format("allocation {} is {}: {}", rec.id, JobStateName(rec.state), rec.reason));
      }
      return rec;
    });
  }

  Status Release(const std::string& node, int64_t allocation_id) override {
    return WithClient<bool>(node,
                            [&](Node* n) -> StatusOr<bool> {
                              auto r = n->client->ReleaseAllocation(allocation_id);
                              // Gone, or already ended: nothing is held.
                              if (!r.ok() && r.status().code() != StatusCode::kNotFound &&
                                  r.status().code() != StatusCode::kFailedPrecondition) {
                                return r.status();
                              }
                              return true;
                            })
        .status();
  }

 private:
  // (Re)reads the node's token and makes its client. Under n->mu (or before sharing).
  void Connect(Node* n) {
    StatusOr<std::string> token = NodeDaemonToken(n->endpoint, config_.origin);
    if (!token.ok()) {
      n->client.reset();
      n->token_error = token.status().message();
      return;
    }
    NodeClientOptions o;
    o.server = n->endpoint.url;
    o.token = *token;
    o.connect_timeout_s = config_.timeout_s;
    o.read_timeout_s = config_.timeout_s;
    n->client.emplace(std::move(o));
    n->token_error.clear();
  }

  // Runs `call` with the node's client under its lock. A 401 re-reads the
  // token once (a daemon with a new token) and retries.
  template <typename T, typename F>
  StatusOr<T> WithClient(const std::string& node, F call) {
    auto it = nodes_.find(node);
    if (it == nodes_.end()) {
      return NotFoundError(fmt::format("node {} is not configured in {}", node, config_.origin));
    }
    Node* n = it->second.get();
    std::lock_guard<std::mutex> lock(n->mu);
    if (!n->client) Connect(n);
    if (!n->client) return UnavailableError(n->token_error);
    StatusOr<T> r = call(n);
    if (!r.ok() && r.status().code() == StatusCode::kUnauthenticated) {
      Connect(n);
      if (!n->client) return UnavailableError(n->token_error);
      r = call(n);
    }
    if (!r.ok()) {
      return Status(r.status().code(),
                    fmt::format("node {} ({}): {}", node, n->endpoint.url, r.status().message()));
    }
    return r;
  }

  const HttpNodeDaemonsConfig config_;
  std::map<std::string, std::unique_ptr<Node>> nodes_;  // fixed after construction
};

}  // namespace

StatusOr<std::string> NodeDaemonToken(const NodeDaemonEndpoint& node, std::string_view origin) {
  if (!node.token.empty()) return node.token;
  if (node.token_file.empty()) {
    return InvalidArgumentError(
        fmt::format("{}: node {} has no token (give token_file or token)", origin, node.name));
  }
  std::ifstream f(node.token_file);
  if (!f) {
    return UnavailableError(
        fmt::format("node {}: cannot read token file {}", node.name, node.token_file));
  }
  // The clients' rule (nodeapi/token.h): a token others may read is refused (regression:
  // world_readable_token_file_accepted: the extender used a 0644 token file that
  // `migsched reservations --token-file` refuses).
  struct stat st {};
  if (::stat(node.token_file.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return UnavailableError(
        fmt::format("node {}: token file {} is not a regular file", node.name, node.token_file));
  }
  if (Status mode = CheckClientTokenMode(node.token_file, st.st_mode); !mode.ok()) {
    return Status(mode.code(), fmt::format("node {}: {}", node.name, mode.message()));
  }
  std::string t;
  std::getline(f, t);
  while (!t.empty() && (t.back() == '\r' || t.back() == ' ')) t.pop_back();
  if (t.empty()) {
    return UnavailableError(
        fmt::format("node {}: token file {} is empty", node.name, node.token_file));
  }
  return t;
}

StatusOr<std::unique_ptr<NodeDaemons>> NewHttpNodeDaemons(HttpNodeDaemonsConfig config) {
  return std::unique_ptr<NodeDaemons>(new HttpNodeDaemons(std::move(config)));
}

}  // namespace migsched
