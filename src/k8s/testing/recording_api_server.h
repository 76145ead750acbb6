// A loopback stand-in for the few kube-apiserver endpoints migsched calls (no
// API server can run here, docs/kubernetes.md), for tests and the one-machine
// end-to-end run. It keeps pods in memory and records every request, and it
// checks what a real API server checks for these calls:
//
//   GET   /api/v1/namespaces/{ns}/pods/{name}           the stored pod, or 404
//   GET   /api/v1/pods[?fieldSelector=spec.nodeName=X|metadata.namespace=X][&labelSelector=k=v]
//   PATCH /api/v1/namespaces/{ns}/pods/{name}           merge patch of metadata.annotations;
//         Content-Type application/merge-patch+json; metadata.uid, when given, must match (409)
//   POST  .../pods/{name}/binding   a v1 Binding: apiVersion v1, kind Binding,
//         metadata.name = the pod, target.kind Node, target.name set; 409 when the
//         pod has a spec.nodeName already (201 and spec.nodeName set otherwise)
//   POST  .../pods/{name}/eviction  a policy/v1 Eviction; 429 while `block_evictions`
//         is set (a PodDisruptionBudget), else the pod is removed (201)
//   GET   /apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}   the Lease, or 404
//   POST  /apis/coordination.k8s.io/v1/namespaces/{ns}/leases          a coordination.k8s.io/v1
//         Lease (201; 409 AlreadyExists when one of that name exists)
//   PUT   /apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}   an update whose
//         metadata.resourceVersion must be the stored one (409 Conflict otherwise, as
//         the API server's optimistic concurrency); every write sets a new resourceVersion
//
// Requests without "Authorization: Bearer <token>" get 401 when a token is set.
// A body that breaks these rules gets 400 with a Status body naming the problem,
// so a test sees the same failure a cluster would give.
//
// Thread-safety: all methods may be called from any thread.
#ifndef MIGSCHED_K8S_TESTING_RECORDING_API_SERVER_H_
#define MIGSCHED_K8S_TESTING_RECORDING_API_SERVER_H_

#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "k8s/api/kube_client.h"

namespace httplib {
class Server;
}

namespace migsched::k8s {

class RecordingApiServer {
 public:
  struct Request {
    std::string method;
    std::string path;  // without the query
    std::string query;
    std::string content_type;
    std::string authorization;
    std::string body;
  };

  // `token`: the bearer token to require ("" for none).
  explicit RecordingApiServer(std::string token = "");
  ~RecordingApiServer();
  // Listens on 127.0.0.1 (a kernel-chosen port) over HTTP, or HTTPS with the
  // given PEM files; returns the server URL ("http://127.0.0.1:PORT").
  StatusOr<std::string> Start(const std::string& cert_file = "", const std::string& key_file = "");

  // Start() and a client of the server with its token (the test fails when it cannot start).
  std::unique_ptr<KubeClient> StartWithClient();
  // Another client of the started server (its URL and token), with its own `timeout`.
  std::unique_ptr<KubeClient> NewClient(std::chrono::milliseconds timeout);

  void AddPod(const nlohmann::json& pod);  // metadata.namespace/name key it
  std::optional<nlohmann::json> Pod(const std::string& ns, const std::string& name) const;
  std::optional<nlohmann::json> Lease(const std::string& ns, const std::string& name) const;
  std::vector<Request> requests() const;
  void set_block_evictions(bool block);
  // The next `n` requests whose path ends with `suffix` (and whose method is `method`, when
  // given) answer `status` with a Status body carrying `message` (to play API server failures).
  void FailNext(const std::string& suffix, int status, const std::string& message, int n = 1,
                const std::string& method = "");
  // The next request whose path ends with `suffix` is carried out, then answered `status` (an
  // answer lost after the write, e.g. a time-out: the Binding stored, the caller told 504).
  void FailNextAfterApplying(const std::string& suffix, int status, const std::string& message);
  // The next request whose path ends with `suffix` waits `delay` before it is handled (carried
  // out and answered as usual), the server's other requests going on meanwhile: a client that
  // gives up first sees no answer, and the request still takes effect after.
  void DelayNext(const std::string& suffix, std::chrono::milliseconds delay);
  void set_token(const std::string& token);

 private:
  struct Failure {
    std::string suffix;
    int status;
    std::string message;
    int left;
    bool after_applying;
    std::string method;  // "": any
  };
  // The answer (status, JSON body) to a recorded request: the injected failures, then Apply.
  std::pair<int, std::string> Handle(const Request& r);
  // The request carried out (under mu_).
  std::pair<int, std::string> Apply(const Request& r);
  std::pair<int, std::string> HandleLease(const Request& r, const std::string& ns,
                                          const std::string& name);

  mutable std::mutex mu_;  // guards everything below
  std::string token_;
  std::string url_;                               // set by Start
  std::map<std::string, nlohmann::json> pods_;    // "ns/name"
  std::map<std::string, nlohmann::json> leases_;  // "ns/name"
  long resource_version_ = 0;                     // of the last lease write
  std::vector<Request> requests_;
  std::vector<Failure> failures_;
  std::vector<std::pair<std::string, std::chrono::milliseconds>> delays_;  // (suffix, delay)
  bool block_evictions_ = false;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
};

}  // namespace migsched::k8s

#endif  // MIGSCHED_K8S_TESTING_RECORDING_API_SERVER_H_
