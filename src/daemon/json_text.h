// The daemon's JSON as text: compact, with invalid UTF-8 replaced by U+FFFD
// so that a job's odd bytes (a name, an environment value) never make a dump
// throw. What the job store keeps and the HTTP API sends.
//
// Thread-safety: a pure function.
#ifndef MIGSCHED_DAEMON_JSON_TEXT_H_
#define MIGSCHED_DAEMON_JSON_TEXT_H_

#include <string>

namespace migsched {

// `Json`: nlohmann::json or nlohmann::ordered_json.
template <typename Json>
std::string JsonText(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace migsched

#endif  // MIGSCHED_DAEMON_JSON_TEXT_H_
