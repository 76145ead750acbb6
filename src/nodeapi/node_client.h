// NodeClient: the C++ client of a node daemon's HTTP API (docs/api.md), on
// cpp-httplib. The CLI's client commands and the cluster controllers (Slurm,
// Kubernetes) use it: one place that knows the routes, the bearer token, the
// error bodies and the JSON shapes.
//
// Every call returns the server's answer as the API's types, the values the
// daemon serves (nodeapi/api_types.h, nodeapi/job_record.h: DaemonJobRecord,
// NodeView, ReservationView), or a Status: the server's
// error code and message (kInvalidArgument 400, kUnauthenticated 401,
// kNotFound 404, kFailedPrecondition 409, kResourceExhausted 413/429,
// kUnavailable 503), or kUnavailable "cannot reach the daemon at URL: ..."
// when there is no answer. Calls that create something take an optional
// idempotency key (sent as Idempotency-Key): retrying after a lost answer
// with the same key never creates a second one.
//
// Thread-safety: one NodeClient per thread (it keeps one keep-alive
// connection); create as many as needed.
#ifndef MIGSCHED_NODEAPI_NODE_CLIENT_H_
#define MIGSCHED_NODEAPI_NODE_CLIENT_H_

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "nodeapi/api_types.h"
#include "nodeapi/job_record.h"

namespace httplib {
class Client;
}

namespace migsched {

struct NodeClientOptions {
  std::string server = "http://127.0.0.1:7070";  // the daemon's URL
  std::string token;                             // the bearer token
  double connect_timeout_s = 5;
  double read_timeout_s = 60;  // per read; a log follower needs longer
};

// The daemon's URL: `flag` if given, else $MIGSCHED_SERVER, else
// http://127.0.0.1:7070.
std::string DefaultServer(const std::string& flag = "");
// OK when `url` is a daemon's address: http:// or https://, a host (a name, an IPv4 address or
// [an IPv6 one]), an optional :PORT (1-65535) and nothing after it but an optional "/" (the
// client adds the API's paths). Else kInvalidArgument "'URL' is not a daemon address: <why>;
// expected http://HOST:PORT, e.g. http://127.0.0.1:7070".
Status CheckDaemonUrl(std::string_view url);
// The token file: `flag` if given, else $MIGSCHED_TOKEN_FILE, else
// /var/lib/migsched/token (the token of a daemon with the default state_dir).
std::string DefaultTokenFile(const std::string& flag = "");

class NodeClient {
 public:
  explicit NodeClient(NodeClientOptions options);
  // The token read from `token_file` (nodeapi/token.h ReadTokenFile rules); `server` checked
  // first (CheckDaemonUrl).
  static StatusOr<NodeClient> WithTokenFile(std::string server, const std::string& token_file);
  ~NodeClient();
  NodeClient(NodeClient&&) noexcept;
  NodeClient& operator=(NodeClient&&) noexcept;

  const std::string& server() const { return options_.server; }

  // ---- jobs ----
  StatusOr<DaemonJobRecord> Submit(const JobRequest& request, const std::string& key = "");
  StatusOr<DaemonJobRecord> GetJob(DaemonJobId id);
  // One page (JobQuery's filters, after, limit).
  StatusOr<JobPage> ListJobs(const JobQuery& query);
  // Every page of `query`.
  StatusOr<std::vector<DaemonJobRecord>> ListAllJobs(JobQuery query);
  StatusOr<DaemonJobRecord> Cancel(DaemonJobId id);
  StatusOr<PlanPreview> PreviewPlan(const JobRequest& request);
  // GET the job's log (follow: until the job ends), written to `out` as it comes.
  Status StreamLog(DaemonJobId id, bool follow, std::ostream& out);

  // ---- the node ----
  StatusOr<NodeView> Node();
  StatusOr<std::vector<GpuView>> Gpus();
  Status Drain(NvmlIndex gpu);
  Status Undrain(NvmlIndex gpu);
  StatusOr<bool> Pause();  // the new paused flag
  StatusOr<bool> Resume();
  StatusOr<std::string> Metrics();  // the Prometheus text

  // ---- reservations ----
  // created: false when an existing reservation was renewed.
  StatusOr<ReserveResult> Reserve(const ReservationRequest& request);
  StatusOr<std::vector<ReservationView>> ListReservations(const std::string& prefix = "");
  StatusOr<ReservationView> GetReservation(const std::string& owner);
  Status ReleaseReservation(const std::string& owner);

  // ---- allocations ----
  StatusOr<DaemonJobRecord> Allocate(const AllocationRequest& request, const std::string& key = "");
  StatusOr<DaemonJobRecord> GetAllocation(DaemonJobId id);
  // Every allocation whose owner starts with `owner_prefix` (all pages);
  // `state` filters when set (e.g. running).
  StatusOr<std::vector<DaemonJobRecord>> ListAllocations(const std::string& owner_prefix,
                                                         std::optional<JobState> state = {});
  StatusOr<DaemonJobRecord> ReleaseAllocation(DaemonJobId id);
  StatusOr<std::vector<DaemonJobRecord>> ReleaseAllocationsOf(const std::string& owner);

  // The raw call: the parsed JSON body of a 2xx answer, else the error.
  StatusOr<nlohmann::json> Call(const std::string& method, const std::string& path,
                                const std::string& body = "", const std::string& key = "");

 private:
  // `elapsed_s`: how long the call took (< 0: unknown); a call that failed at its timeout says
  // it timed out (regression: hung_daemon_said_connection_closed).
  Status Unreachable(int httplib_error, double elapsed_s = -1) const;
  NodeClientOptions options_;
  std::unique_ptr<httplib::Client> http_;
};

// The daemon's JSON forms read back (request_json.h writes them). Errors:
// kInternal "the daemon answered ..." for a shape that does not parse.
StatusOr<DaemonJobRecord> JobRecordFromJson(const nlohmann::json& j);
StatusOr<ReservationView> ReservationViewFromJson(const nlohmann::json& j);
StatusOr<GpuView> GpuViewFromJson(const nlohmann::json& j);
StatusOr<NodeView> NodeViewFromJson(const nlohmann::json& j);
// ?state=&kind=&owner_prefix=&after=&limit= of `q` (URL-encoded).
std::string QueryString(const JobQuery& q);
// Percent-encodes a path segment or query value.
std::string UrlEncode(const std::string& s);

}  // namespace migsched

#endif  // MIGSCHED_NODEAPI_NODE_CLIENT_H_
