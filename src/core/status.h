// Status and StatusOr<T>: the error model of the migsched core.
//
// The core never throws. A function that can fail returns Status (or
// StatusOr<T> when it also produces a value). "No GPU fits this job right
// now" is not an error: policies return an empty decision for that; Status is
// for bad input (kInvalidArgument), missing names (kNotFound), requests that
// can never be satisfied (kFailedPrecondition), and violated invariants, which
// are bugs (kInternal).
//
// Thread-safety: values; safe to copy between threads.
#ifndef MIGSCHED_CORE_STATUS_H_
#define MIGSCHED_CORE_STATUS_H_

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace migsched {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // malformed input: a file, a flag, a trace line
  kNotFound,            // an unknown GPU model, profile or job
  kFailedPrecondition,  // valid input that can never be satisfied here
  kInternal,            // a violated invariant: a bug in migsched
  kUnavailable,         // a backend (hardware, driver) is not reachable, or busy ("in use"): retry
  kResourceExhausted,   // no room: an occupied placement, a full queue, an oversize request
  kAlreadyExists,       // a record or instance that must be new already exists
  kUnauthenticated,     // a missing or wrong API token (daemon)
};

std::string_view StatusCodeName(StatusCode code);

// Why, beyond the code, for the callers that act on it: set where the error is made and kept by
// WithPrefix, so that no caller tells errors apart by their text (whose wording is for people,
// and may hold a user's words: a job's name, a command). Most errors have none (kNone).
enum class StatusReason {
  kNone = 0,
  // kUnavailable from a MIG backend (daemon/mig_backend.h): the hardware's or the driver's
  // trouble, never the request's.
  kInUse,        // processes or open handles still use the instance (NVML_ERROR_IN_USE)
  kNeedsReset,   // the GPU needs a reset before MIG works (NVML_ERROR_RESET_REQUIRED)
  kDriverFault,  // the driver's answer could not be trusted (a half-made or undead instance)
  kDeviceLost,   // the GPU fell off the bus or became inaccessible (NVML_ERROR_GPU_IS_LOST)
  kRenumbered,   // an NVML index names another GPU than at start (a reset or driver reload)
  // kUnavailable from the daemon's instance sync: a plan not attempted, because an earlier plan
  // on one of its GPUs failed.
  kNotAttempted,
  // A job's command could not be started (daemon/process_runner.h): kNotFound, exit code 127;
  // kFailedPrecondition, exit code 126 (the shell's codes).
  kCommandNotFound,
  kNotExecutable,
  // kUnavailable from an HTTP client (k8s/api/kube_client.h): the request was sent and no answer
  // came (a read time-out, a connection closed): the server may have carried it out, or may yet.
  kOutcomeUnknown,
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message, StatusReason reason = StatusReason::kNone)
      : code_(code), reason_(reason), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  StatusReason reason() const { return reason_; }
  // Returns a copy with `reason` (an OK status stays OK, without one).
  Status WithReason(StatusReason reason) const;
  // "INVALID_ARGUMENT: <message>", or "OK".
  std::string ToString() const;

  // Returns a copy whose message is "<prefix>: <message>", with the same code and reason.
  Status WithPrefix(std::string_view prefix) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  StatusReason reason_ = StatusReason::kNone;
  std::string message_;
};

inline Status InvalidArgumentError(std::string msg) {
  return Status(StatusCode::kInvalidArgument, std::move(msg));
}
inline Status NotFoundError(std::string msg) {
  return Status(StatusCode::kNotFound, std::move(msg));
}
inline Status FailedPreconditionError(std::string msg) {
  return Status(StatusCode::kFailedPrecondition, std::move(msg));
}
inline Status InternalError(std::string msg) {
  return Status(StatusCode::kInternal, std::move(msg));
}
inline Status UnavailableError(std::string msg) {
  return Status(StatusCode::kUnavailable, std::move(msg));
}
inline Status AlreadyExistsError(std::string msg) {
  return Status(StatusCode::kAlreadyExists, std::move(msg));
}
inline Status ResourceExhaustedError(std::string msg) {
  return Status(StatusCode::kResourceExhausted, std::move(msg));
}

// Holds either a value of type T or a non-OK Status.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(const T& value) : v_(value) {}            // NOLINT
  StatusOr(T&& value) : v_(std::move(value)) {}      // NOLINT
  StatusOr(Status status) : v_(std::move(status)) {  // NOLINT
    if (std::get<Status>(v_).ok()) {
      v_ = Status(StatusCode::kInternal, "StatusOr constructed from an OK status without a value");
    }
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? Status() : std::get<Status>(v_); }
  // REQUIRES: ok().
  const T& value() const& { return std::get<T>(v_); }
  T& value() & { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace migsched

#define MIGSCHED_CONCAT_INNER_(a, b) a##b
#define MIGSCHED_CONCAT_(a, b) MIGSCHED_CONCAT_INNER_(a, b)

// Returns from the enclosing function if `expr` (a Status) is not OK.
#define RETURN_IF_ERROR(expr)        \
  do {                               \
    ::migsched::Status _st = (expr); \
    if (!_st.ok()) return _st;       \
  } while (0)

// ASSIGN_OR_RETURN(lhs, expr): evaluates `expr` (a StatusOr), returns its
// status if not OK, else assigns the value to `lhs` (which may be a declaration).
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL_(MIGSCHED_CONCAT_(_statusor_, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                           \
  if (!tmp.ok()) return tmp.status();          \
  lhs = std::move(tmp).value()

#endif  // MIGSCHED_CORE_STATUS_H_
