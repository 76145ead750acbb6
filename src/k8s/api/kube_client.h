// The few Kubernetes API calls migsched makes (core/v1 and policy/v1), over
// cpp-httplib with the credentials of k8s/api/credentials.h:
//
//   GET   /api/v1/namespaces/{ns}/pods/{name}           the pod (bind needs its requests)
//   GET   /api/v1/pods?fieldSelector=...&labelSelector=...
//   PATCH /api/v1/namespaces/{ns}/pods/{name}           annotations, merge patch with
//                                                       metadata.uid as precondition
//   POST  /api/v1/namespaces/{ns}/pods/{name}/binding   v1 Binding (the extender binds)
//   POST  /api/v1/namespaces/{ns}/pods/{name}/eviction  policy/v1 Eviction (migration)
//
// Every error names the method, the path, the HTTP status and the API
// server's own message (its Status body), e.g.
//   "POST /api/v1/namespaces/ml/pods/train-0/binding: HTTP 409: pod train-0 is already assigned to
//   node \"n2\"".
// HTTP statuses map to codes: 400/422 kInvalidArgument, 401/403
// kUnauthenticated, 404 kNotFound, 409 kAlreadyExists (a conflict), 429
// kResourceExhausted, anything else (and no answer) kUnavailable.
//
// Thread-safety: every method may be called from any thread; each request
// opens its own connection.
#ifndef MIGSCHED_K8S_API_KUBE_CLIENT_H_
#define MIGSCHED_K8S_API_KUBE_CLIENT_H_

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "k8s/api/credentials.h"

namespace migsched::k8s {

class KubeClient {
 public:
  explicit KubeClient(KubeCredentials credentials,
                      std::chrono::milliseconds timeout = std::chrono::seconds(10));

  struct Response {
    int status = 0;
    std::string body;
    std::string retry_after;  // the Retry-After header, "" if none
  };
  // One request; kUnavailable when no HTTP answer came (connection, TLS,
  // timeout), with httplib's reason. Any HTTP status is a Response.
  StatusOr<Response> Send(const std::string& method, const std::string& path,
                          const std::string& body = "", const std::string& content_type = "");

  StatusOr<nlohmann::json> GetPod(const std::string& ns, const std::string& name);
  // Pods matching the selectors (each "" for none), across namespaces.
  StatusOr<std::vector<nlohmann::json>> ListPods(const std::string& field_selector,
                                                 const std::string& label_selector);
  // Sets (value) or removes (nullopt) annotations. With a non-empty `uid` the
  // API server refuses (409) a pod of that name with another uid.
  Status PatchPodAnnotations(const std::string& ns, const std::string& name, const std::string& uid,
                             const std::map<std::string, std::optional<std::string>>& annotations);
  // The same for annotations and labels in one patch.
  Status PatchPodMetadata(const std::string& ns, const std::string& name, const std::string& uid,
                          const std::map<std::string, std::optional<std::string>>& annotations,
                          const std::map<std::string, std::optional<std::string>>& labels);
  // Binds the pod to `node`, as kube-scheduler's default binder does.
  Status PostBinding(const std::string& ns, const std::string& name, const std::string& uid,
                     const std::string& node);

  enum class Eviction {
    kEvicted,          // 200/201: the pod is being deleted
    kBlockedByBudget,  // 429: a PodDisruptionBudget forbids it now; try again later
    kGone,             // 404: the pod no longer exists
  };
  // Asks for the pod's eviction (the API server checks its PodDisruptionBudgets).
  // `message` (optional) receives the API server's message, `retry_after_s`
  // (optional) the Retry-After of a 429 in seconds (-1 when absent).
  StatusOr<Eviction> Evict(const std::string& ns, const std::string& name, const std::string& uid,
                           std::string* message = nullptr, double* retry_after_s = nullptr);

  const KubeCredentials& credentials() const { return credentials_; }

 private:
  Status ErrorOf(const std::string& method, const std::string& path, const Response& r) const;

  KubeCredentials credentials_;
  std::chrono::milliseconds timeout_;
};

// The message of an API server Status body ({"kind":"Status","message":...}),
// or the body itself (shortened) when it is not one.
std::string ApiMessage(const std::string& body);
// Percent-encoding for a query parameter value.
std::string QueryEscape(const std::string& s);

}  // namespace migsched::k8s

#endif  // MIGSCHED_K8S_API_KUBE_CLIENT_H_
