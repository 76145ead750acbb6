// libFuzzer target for the daemon's request parser (nodeapi/request_json.h):
// any byte string given to ParseJobRequest must yield a JobRequest or a
// kInvalidArgument Status, never a crash, an exception or a sanitizer report.
// An accepted request must also survive the JSON round trip unchanged.
// Build and run: docs/api.md, "Fuzzing the request parser".
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "nodeapi/request_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  auto r = migsched::ParseJobRequest(body);
  if (!r.ok()) {
    if (r.status().code() != migsched::StatusCode::kInvalidArgument) std::abort();
    return 0;
  }
  // Invariants of an accepted request.
  if (r->profile.empty() == (r->gpu_fraction == 0)) std::abort();
  if (r->count < 1 || r->count > migsched::kMaxJobCount || r->command.empty()) std::abort();
  auto again = migsched::ParseJobRequest(migsched::JobRequestToJson(*r).dump());
  if (!again.ok() || again->command != r->command || again->env != r->env ||
      again->profile != r->profile || again->count != r->count) {
    std::abort();
  }
  return 0;
}
