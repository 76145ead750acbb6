// JSON forms of the daemon's API objects (docs/api.md) and validation of
// POST /v1/jobs bodies. Pure functions: no I/O, no daemon state, so the
// parser can be fuzzed (fuzz/request_fuzz.cc).
//
// POST /v1/jobs body (a JSON object; unknown fields are an error):
//   profile           string, a profile name ("2g.10gb")       } exactly one
//   gpu_fraction      number in (0, 1]                          } of the two
//   count             integer 1..kMaxJobCount (64), default 1 (instances wanted together)
//   command           non-empty array of strings (argv; argv[0] non-empty)
//   env               object of string values (names non-empty, no '=')
//   cwd               string (working directory; default the job's work dir)
//   migratable        "none" (default) | "restart" | "checkpoint" (§6)
//   latency_sensitive boolean, default false
//   priority          integer (recorded only; FIFO order, §5)
//   name              string (a label), at most kMaxJobNameBytes (256) bytes
//   user              string (run as this user: the daemon's job_user or one of job_users)
//   time_limit_s      number > 0 (seconds; each run's expected end for the scheduler, §13;
//                     not enforced)
// An integer field takes a number with an integral value, however written (2, 2.0, 1e3:
// io/integer_input.h); 2.5 is not an integer.
// Strings must not contain NUL characters (they become argv/env of a
// process); argv and env must fit what exec takes (kMaxExecArgBytes per
// string, kMaxExecBytes in all). Whether the profile exists on this node is
// checked by the Daemon.
// POST /v1/allocations and POST /v1/reservations bodies: docs/api.md.
//
// Errors: kInvalidArgument, message naming the field and the expected type,
// e.g. "field 'count' must be an integer, got string".
//
// Thread-safety: free functions, no shared state.
#ifndef MIGSCHED_NODEAPI_REQUEST_JSON_H_
#define MIGSCHED_NODEAPI_REQUEST_JSON_H_

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/status.h"
#include "nodeapi/api_types.h"
#include "nodeapi/job_record.h"

namespace migsched {

// What exec takes: one argument or environment string (Linux MAX_ARG_STRLEN,
// NUL included), and argv + env in all (a quarter of an 8 MiB stack limit,
// with room left for what the daemon adds).
inline constexpr size_t kMaxExecArgBytes = 131072;
inline constexpr size_t kMaxExecBytes = 1 << 20;

// The longest job name (the request's "name", a label shown by `migsched jobs` and kept in every
// record, list page and log line), in bytes. 256, a round number with room for the longest names
// the adapters deal in: a Kubernetes object name is at most 253 characters (a DNS subdomain,
// RFC 1123). Without a limit a name of up to max_body_bytes was stored and sent in every list page.
inline constexpr size_t kMaxJobNameBytes = 256;

// The rules every job request must meet, whoever sends it (the HTTP layer,
// the client before sending, an in-process caller): a non-empty command,
// count 1..kMaxJobCount, exactly one of profile and gpu_fraction (in (0, 1]),
// env names non-empty without '=', no NUL anywhere, argv + env within
// what exec takes, and a name of at most kMaxJobNameBytes. kInvalidArgument naming the field.
Status ValidateJobRequest(const JobRequest& r);

// The request with every profile name in the catalog's spelling
// (NormalizeProfileName, core/catalog.h: "1G.5GB", "MIG-1g.5gb" and
// "nvidia.com/mig-1g.5gb" give "1g.5gb"), so that one profile has one name
// in the records, the store, the idempotency check and the metrics. The
// daemon applies it to every request it takes; whether the profile exists
// is checked after.
JobRequest WithCanonicalProfile(JobRequest r);
AllocationRequest WithCanonicalProfiles(AllocationRequest r);
ReservationRequest WithCanonicalProfiles(ReservationRequest r);

// Parses and validates a POST /v1/jobs (or POST /v1/plan) body. Never throws.
StatusOr<JobRequest> ParseJobRequest(std::string_view body);
// The same for an already parsed JSON value.
StatusOr<JobRequest> JobRequestFromJson(const nlohmann::json& j);
// POST /v1/allocations: {owner, instances: [{profile} | {gpu, profile, start}],
// reservation | reservation_prefix, name}; name at most kMaxJobNameBytes bytes, as a job's.
StatusOr<AllocationRequest> ParseAllocationRequest(std::string_view body);
// POST /v1/reservations: {owner, placements: [{gpu, profile, start}], ttl_s}.
StatusOr<ReservationRequest> ParseReservationRequest(std::string_view body);

// JobRequest as the body that ParseJobRequest accepts (round-trips).
nlohmann::ordered_json JobRequestToJson(const JobRequest& r);
// {"gpu", "profile", "start", "size", "mig_uuid"} (start/size in placement units).
nlohmann::ordered_json JobInstanceToJson(const JobInstance& i);
// A job as GET /v1/jobs/{id} returns it: id, kind ("job" | "allocation"),
// name, state (JobStateName), request (the JobRequest, or for an allocation
// the AllocationRequest), owner (allocations), submitted_at/started_at/ended_at
// (Unix seconds; null until set), instances, pid (null if none), exit_code
// (null until the process ended), reason, restarts, migrations, run (launches
// so far), cancel_requested, bound_reservation, idempotency_key (null if none).
nlohmann::ordered_json JobRecordToJson(const DaemonJobRecord& r);
// {"jobs": [...], "next": id | null} (key "allocations" for allocations).
nlohmann::ordered_json JobPageToJson(const JobPage& page, std::string_view key = "jobs");
nlohmann::ordered_json AllocationRequestToJson(const AllocationRequest& a);
// {owner, placements: [{gpu, gpu_uuid, profile, start, size, mig_uuid}],
//  created_at, expires_at}.
nlohmann::ordered_json ReservationViewToJson(const ReservationView& r);
// The whole node (GET /v1/node, docs/api.md).
nlohmann::ordered_json NodeViewToJson(const NodeView& n);
// The scheduler options: io/scheduler_options_json.h SchedulerOptionsToJson.
// A GPU as GET /v1/gpus returns it (see GpuView): index, uuid, model,
// placement_units, utilisation, frag_cost, lazy ("lazy"/"busy" as the field
// `load`), draining, unreachable (null or why), pcie ({tx_bytes_per_second,
// rx_bytes_per_second} or null), instances [{profile, start, size, mig_uuid,
// busy, holder (null | "job" | "allocation" | "reservation" | "placeholder"),
// job (a job's or allocation's id, else null), owner (null or the owner key),
// expires_at (a reservation's, else null)}].
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

}  // namespace migsched

#endif  // MIGSCHED_NODEAPI_REQUEST_JSON_H_
