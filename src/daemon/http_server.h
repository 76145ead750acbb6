// The daemon's HTTP JSON API (docs/api.md), on cpp-httplib, over a NodeApi.
//
// Routes (all but /healthz need `Authorization: Bearer <token>`):
//   POST   /v1/jobs                 submit (body: nodeapi/request_json.h) → 201 + the record
//                                   (200 + Idempotent-Replayed: true for a repeated
//                                   Idempotency-Key)
//   GET    /v1/jobs                 {"jobs": [...], "next": id|null}; ?state= &kind=
//                                   &owner_prefix= &after= &limit= (1..1000, default 100)
//   GET    /v1/jobs/{id}            the record                         (404 unknown id)
//   DELETE /v1/jobs/{id}            cancel → the record                (409 already terminal)
//   GET    /v1/jobs/{id}/log        stdout+stderr so far (text/plain); ?follow=1 streams
//                                   (chunked) until the job is terminal and the log drained
//   POST   /v1/plan                 the plan a hypothetical job would get; nothing applied
//   GET    /v1/node                 the node's state for cluster controllers
//   GET    /v1/gpus                 {"gpus": [gpu...]}
//   POST   /v1/gpus/{index}/drain   {"gpu": index, "draining": true}   (404 unmanaged index)
//   POST   /v1/gpus/{index}/undrain {"gpu": index, "draining": false}
//   POST   /v1/scheduler/pause      {"paused": true}
//   POST   /v1/scheduler/resume     {"paused": false}
//   POST   /v1/reservations         hold placements → 201 (created) / 200 (renewed); its
//                                   Location holds the owner key percent-encoded as one
//                                   path segment (a key may hold '/', ' ', '?', '%', ...;
//                                   the ids in the Location of a job or allocation are digits)
//   GET    /v1/reservations         {"reservations": [...]}; ?prefix=
//   GET    /v1/reservations/{owner} one reservation
//   DELETE /v1/reservations/{owner} release it → 204
//   POST   /v1/allocations          bind instances → 201 + the allocation's record
//   GET    /v1/allocations          {"allocations": [...], "next": ...}; ?owner_prefix= &state=
//   GET    /v1/allocations/{id}     one allocation
//   DELETE /v1/allocations/{id}     release it → the record
//   DELETE /v1/allocations?owner=K  release every allocation of owner K → {"released": [...]}
//   GET    /healthz                 {"status": "ok" | "degraded", "reason": ...}, no token
//   GET    /metrics                 Prometheus text format 0.0.4 (metrics.h)
// Errors: {"error": {"code": "<STATUS_CODE>", "message": "..."}} with the HTTP
// status of HttpStatusFor (nodeapi/request_json.h); 401 for a missing or wrong token
// (logged with the remote address and path, never the token, at most once
// per 10 s with a count of the others); 413 for a body over max_body_bytes,
// chunked or not; 405 with `Allow` for a method a route does not take; 404
// for unknown routes; 400 naming it for a query parameter a route does not
// take or one given more than once, before anything is done.
//
// Connections: each connection is served by a thread of its own from a pool
// that grows up to max_connections threads (more connections wait to be
// served); an idle keep-alive connection is closed after idle_timeout_s; a
// request's head must arrive within header_timeout_s in all and its body
// within body_timeout_s in all (and every read within request_timeout_s),
// else the connection is closed; TCP_NODELAY on every connection; listen
// backlog 1024. A log follower thus holds only its own connection's thread:
// /healthz and the API keep answering. Clients without the token cannot
// starve those with it (ConnectionGate, nodeapi/connection_gate.h): at most
// max_connections_per_peer connections per remote address and
// max_unauthenticated_connections not yet authenticated in all; beyond, the
// oldest unauthenticated one is closed, or, when a peer's are all
// authenticated, its new connection gets 503 and is closed.
//
// Thread-safety: Bind/Serve from one thread; Stop from any thread (e.g. a
// signal watcher). Requests are served concurrently; the NodeApi is thread-safe.
#ifndef MIGSCHED_DAEMON_HTTP_SERVER_H_
#define MIGSCHED_DAEMON_HTTP_SERVER_H_

#include <memory>
#include <string>

#include "core/clock.h"
#include "core/status.h"
#include "daemon/node_api.h"
#include "nodeapi/listener_limits.h"

namespace migsched {

// The daemon's listener: its limits (ListenerLimits: max_body_bytes, threads, deadlines, the
// per-peer and unauthenticated caps; the daemon's config sets them) and what only the daemon's
// API has.
struct HttpServerOptions : ListenerLimits {
  std::string token;             // required bearer token (non-empty)
  int follow_poll_ms = 100;      // how often a ?follow=1 stream looks for new output
  Clock* clock = SteadyClock();  // the 401 log's rate limit reads it
};

class HttpServer {
 public:
  // `api` is not owned and must outlive the server.
  HttpServer(NodeApi* api, HttpServerOptions options);
  ~HttpServer();  // Stop()s
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds to "HOST:PORT" (port 0: a free port; see port()). kInvalidArgument
  // for a malformed address or an empty token, kUnavailable when the address
  // cannot be bound (the message names it).
  Status Bind(const std::string& listen);
  int port() const;  // the bound port (after Bind)

  // Serves until Stop(); blocks. Requires a successful Bind.
  Status Serve();
  // Stops accepting, ends ?follow=1 streams, makes Serve return. Idempotent.
  void Stop();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// Whether `host` (of a listen address) is a loopback address: 127.0.0.0/8,
// ::1, localhost. The daemon warns when it is not (the API is plain HTTP).
bool IsLoopbackHost(const std::string& host);

}  // namespace migsched

#endif  // MIGSCHED_DAEMON_HTTP_SERVER_H_
