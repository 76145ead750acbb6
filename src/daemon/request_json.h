// JSON forms of the daemon's API objects (docs/api.md) and validation of
// POST /v1/jobs bodies. Pure functions: no I/O, no daemon state, so the
// parser can be fuzzed (fuzz/request_fuzz.cc).
//
// POST /v1/jobs body (a JSON object; unknown fields are an error):
//   profile           string, exact profile name ("2g.10gb")   } exactly one
//   gpu_fraction      number in (0, 1]                          } of the two
//   count             integer 1..64, default 1 (instances wanted together)
//   command           non-empty array of strings (argv; argv[0] non-empty)
//   env               object of string values (names non-empty, no '=')
//   cwd               string (working directory; default the job's dir)
//   migratable        "none" (default) | "restart" | "checkpoint" (§6)
//   latency_sensitive boolean, default false
//   priority          integer (recorded only; FIFO order, §5)
//   name              string (a label)
// Strings must not contain NUL characters (they become argv/env of a process).
// Whether the profile exists on this node is checked by Daemon::Submit.
//
// Errors: kInvalidArgument, message naming the field and the expected type,
// e.g. "field 'count' must be an integer, got string".
//
// Thread-safety: free functions, no shared state.
#ifndef MIGSCHED_DAEMON_REQUEST_JSON_H_
#define MIGSCHED_DAEMON_REQUEST_JSON_H_

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/status.h"
#include "daemon/daemon.h"
#include "daemon/job_record.h"

namespace migsched {

// Largest `count` a request may ask for.
inline constexpr int kMaxJobCount = 64;

// Parses and validates a POST /v1/jobs (or POST /v1/plan) body. Never throws.
StatusOr<JobRequest> ParseJobRequest(std::string_view body);
// The same for an already parsed JSON value.
StatusOr<JobRequest> JobRequestFromJson(const nlohmann::json& j);

// JobRequest as the body that ParseJobRequest accepts (round-trips).
nlohmann::ordered_json JobRequestToJson(const JobRequest& r);
// {"gpu", "profile", "start", "size", "mig_uuid"} (start/size in placement units).
nlohmann::ordered_json JobInstanceToJson(const JobInstance& i);
// A job as GET /v1/jobs/{id} returns it: id, name, state (JobStateName),
// request, submitted_at/started_at/ended_at (Unix seconds; null until set),
// instances, pid (null if none), exit_code (null until the process ended),
// reason, restarts, migrations.
nlohmann::ordered_json JobRecordToJson(const DaemonJobRecord& r);
// A GPU as GET /v1/gpus returns it (see GpuView): index, uuid, model,
// placement_units, utilisation, frag_cost, lazy ("lazy"/"busy" as the field
// `load`), draining, pcie ({tx_bytes_per_second, rx_bytes_per_second} or
// null), instances [{profile, start, size, mig_uuid, busy, job (null if idle)}].
nlohmann::ordered_json GpuViewToJson(const GpuView& g);
// {"fits_now", "instances", "steps", "reason"}.
nlohmann::ordered_json PlanPreviewToJson(const PlanPreview& p);

// The API's error body: {"error": {"code": "<StatusCodeName>", "message": "..."}}.
std::string ErrorBody(std::string_view code, std::string_view message);
std::string ErrorBody(const Status& status);

// The HTTP status for a StatusCode: kInvalidArgument 400, kUnauthenticated
// 401, kNotFound 404, kFailedPrecondition and kAlreadyExists 409,
// kResourceExhausted 429, kUnavailable 503, kInternal (and anything else) 500.
int HttpStatusFor(StatusCode code);

// PCIe KB/s as NVML reports it → bytes per second (1 KB = 1024 bytes).
inline double PcieBytesPerSecond(int64_t kbps) { return static_cast<double>(kbps) * 1024.0; }

}  // namespace migsched

#endif  // MIGSCHED_DAEMON_REQUEST_JSON_H_
