#include "slurm/slurm_output.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <nlohmann/json.hpp>

#include "slurm/hostlist.h"

namespace migsched::slurm {
namespace {

using Json = nlohmann::json;

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Typed field readers: absent or null -> the default; another type -> error.
class Fields {
 public:
  Fields(const Json& obj, std::string what) : obj_(obj), what_(std::move(what)) {}

  Status Str(const char* key, std::string* out) const {
    const Json* v = Get(key);
    if (v == nullptr) return Status::Ok();
    if (!v->is_string()) return Wrong(key, "a string", *v);
    *out = v->get<std::string>();
    return Status::Ok();
  }
  template <typename T>
  Status Int(const char* key, T* out) const {
    const Json* v = Get(key);
    if (v == nullptr) return Status::Ok();
    if (!v->is_number_integer() && !v->is_number_unsigned()) return Wrong(key, "an integer", *v);
    *out = v->is_number_unsigned() ? static_cast<T>(v->get<uint64_t>())
                                   : static_cast<T>(v->get<int64_t>());
    return Status::Ok();
  }
  Status Bool(const char* key, bool* out) const {
    const Json* v = Get(key);
    if (v == nullptr) return Status::Ok();
    if (!v->is_boolean()) return Wrong(key, "true or false", *v);
    *out = v->get<bool>();
    return Status::Ok();
  }
  Status Strings(const char* key, std::vector<std::string>* out) const {
    const Json* v = Get(key);
    if (v == nullptr) return Status::Ok();
    if (!v->is_array()) return Wrong(key, "a list of strings", *v);
    for (const Json& e : *v) {
      if (!e.is_string()) return Wrong(key, "a list of strings", *v);
      out->push_back(e.get<std::string>());
    }
    return Status::Ok();
  }
  Status Gres(const char* key, std::vector<GresCount>* out) const {
    std::string s;
    RETURN_IF_ERROR(Str(key, &s));
    auto g = ParseGresList(s);
    if (!g.ok()) return g.status().WithPrefix(fmt::format("{}: field '{}'", what_, key));
    *out = std::move(*g);
    return Status::Ok();
  }
  Status Hosts(const char* key, std::vector<std::string>* out) const {
    std::string s;
    RETURN_IF_ERROR(Str(key, &s));
    if (s.empty() || s == "(null)") return Status::Ok();
    auto h = ExpandHostlist(s);
    if (!h.ok()) return h.status().WithPrefix(fmt::format("{}: field '{}'", what_, key));
    *out = std::move(*h);
    return Status::Ok();
  }

 private:
  const Json* Get(const char* key) const {
    auto it = obj_.find(key);
    if (it == obj_.end() || it->is_null()) return nullptr;
    return &*it;
  }
  Status Wrong(const char* key, const char* want, const Json& got) const {
    return InvalidArgumentError(
        fmt::format("{}: field '{}' must be {}, got {}", what_, key, want, got.type_name()));
  }
  const Json& obj_;
  std::string what_;
};

// `text` with every byte that is not part of well-formed UTF-8 (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF) replaced by U+FFFD. Slurm copies the bytes a user gave (a
// job name, a comment) into its JSON as they are, and a JSON parser refuses the whole document
// for one of them (regression: trial_job_name_bytes_stopped_the_controller: a job named
// "j\xff\xfe" made every tick fail for as long as squeue listed it).
std::string WellFormedUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = s[i];
    size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
    if (c < 0x80) {
      len = 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    }
    bool ok = len > 0 && i + len <= n;
    for (size_t k = 1; ok && k < len; ++k) {
      const unsigned char b = s[i + k];
      ok = k == 1 ? b >= lo && b <= hi : b >= 0x80 && b <= 0xBF;
    }
    if (ok) {
      out.append(text.substr(i, len));
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

StatusOr<Json> ParseDocument(std::string_view raw, const char* origin, const char* list) {
  const std::string text = WellFormedUtf8(raw);
  Json doc = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    return InvalidArgumentError(fmt::format("{}: output is not valid JSON", origin));
  }
  if (!doc.is_object() || !doc.contains(list) || !doc[list].is_array()) {
    return InvalidArgumentError(fmt::format("{}: output has no '{}' list", origin, list));
  }
  if (auto e = doc.find("errors"); e != doc.end() && e->is_array() && !e->empty()) {
    return InvalidArgumentError(fmt::format("{}: Slurm reports errors: {}", origin, e->dump()));
  }
  return doc;
}

}  // namespace

StatusOr<std::vector<GresCount>> ParseGresList(std::string_view text) {
  std::vector<GresCount> out;
  if (text.empty() || text == "N/A" || text == "(null)") return out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = pos;
    int depth = 0;
    while (comma < text.size() && (text[comma] != ',' || depth > 0)) {
      if (text[comma] == '(') ++depth;
      if (text[comma] == ')') --depth;
      ++comma;
    }
    std::string_view item = text.substr(pos, comma - pos);
    if (const size_t paren = item.find('('); paren != std::string_view::npos) {
      item = item.substr(0, paren);
    }
    if (item.rfind("gres:", 0) == 0 || item.rfind("gres/", 0) == 0) item.remove_prefix(5);
    if (item.empty()) return InvalidArgumentError(fmt::format("GRES list '{}': empty entry", text));
    std::vector<std::string_view> parts;
    size_t p = 0;
    while (true) {
      const size_t c = item.find(':', p);
      parts.push_back(item.substr(p, c == std::string_view::npos ? std::string_view::npos : c - p));
      if (c == std::string_view::npos) break;
      p = c + 1;
    }
    GresCount g;
    g.name = std::string(parts[0]);
    g.count = 1;
    std::string_view count;
    if (parts.size() == 2) {
      if (AllDigits(parts[1])) {
        count = parts[1];
      } else {
        g.type = std::string(parts[1]);
      }
    } else if (parts.size() == 3) {
      g.type = std::string(parts[1]);
      count = parts[2];
    } else if (parts.size() > 3) {
      return InvalidArgumentError(
          fmt::format("GRES list '{}': entry '{}' has more than name:type:count", text, item));
    }
    if (!count.empty()) {
      if (!AllDigits(count) || count.size() > 15) {
        return InvalidArgumentError(fmt::format(
            "GRES list '{}': entry '{}': count '{}' is not a number", text, item, count));
      }
      std::from_chars(count.data(), count.data() + count.size(), g.count);
    }
    if (g.name.empty()) {
      return InvalidArgumentError(
          fmt::format("GRES list '{}': entry '{}' has no name", text, item));
    }
    out.push_back(std::move(g));
    if (comma >= text.size()) break;
    pos = comma + 1;
  }
  return out;
}

std::string SlurmJob::Spec() const {
  if (array_job_id > 0 && array_task_id >= 0)
    return fmt::format("{}_{}", array_job_id, array_task_id);
  if (array_job_id > 0 && !array_task_string.empty()) {
    return fmt::format("{}_[{}]", array_job_id, array_task_string);
  }
  return std::to_string(id);
}

bool SlurmJob::Active() const {
  return state == "RUNNING" || state == "CONFIGURING" || state == "COMPLETING" ||
         state == "SUSPENDED";
}

StatusOr<std::vector<SlurmJob>> ParseSqueueJson(std::string_view text) {
  ASSIGN_OR_RETURN(Json doc, ParseDocument(text, "squeue --json", "jobs"));
  std::vector<SlurmJob> out;
  size_t index = 0;
  for (const Json& j : doc["jobs"]) {
    if (!j.is_object()) {
      return InvalidArgumentError(fmt::format("squeue --json: job #{} is not an object", index));
    }
    SlurmJob job;
    const Fields id_only(j, fmt::format("squeue --json: job #{}", index));
    RETURN_IF_ERROR(id_only.Int("job_id", &job.id));
    const Fields f(j, fmt::format("squeue --json: job {}", job.id));
    RETURN_IF_ERROR(f.Str("name", &job.name));
    RETURN_IF_ERROR(f.Str("user_name", &job.user));
    RETURN_IF_ERROR(f.Str("job_state", &job.state));
    RETURN_IF_ERROR(f.Str("state_reason", &job.reason));
    RETURN_IF_ERROR(f.Str("partition", &job.partition));
    RETURN_IF_ERROR(f.Hosts("nodes", &job.nodes));
    RETURN_IF_ERROR(f.Int("node_count", &job.node_count));
    RETURN_IF_ERROR(f.Gres("tres_per_node", &job.tres_per_node));
    RETURN_IF_ERROR(f.Str("comment", &job.comment));
    RETURN_IF_ERROR(f.Str("admin_comment", &job.admin_comment));
    RETURN_IF_ERROR(f.Int("restart_cnt", &job.restarts));
    RETURN_IF_ERROR(f.Bool("requeue", &job.requeue));
    RETURN_IF_ERROR(f.Int("priority", &job.priority));
    RETURN_IF_ERROR(f.Int("submit_time", &job.submit_time));
    RETURN_IF_ERROR(f.Int("eligible_time", &job.eligible_time));
    RETURN_IF_ERROR(f.Int("start_time", &job.start_time));
    RETURN_IF_ERROR(f.Int("time_limit", &job.time_limit_min));
    RETURN_IF_ERROR(f.Hosts("required_nodes", &job.required_nodes));
    RETURN_IF_ERROR(f.Hosts("excluded_nodes", &job.excluded_nodes));
    RETURN_IF_ERROR(f.Int("array_job_id", &job.array_job_id));
    RETURN_IF_ERROR(f.Int("array_task_id", &job.array_task_id));
    RETURN_IF_ERROR(f.Str("array_task_string", &job.array_task_string));
    if (job.id <= 0) {
      return InvalidArgumentError(fmt::format("squeue --json: job #{} has no job_id", index));
    }
    out.push_back(std::move(job));
    ++index;
  }
  return out;
}

namespace {

// sinfo's node state in lower case ("ALLOCATED" and "allocated" alike).
std::string LowerState(const SlurmNode& node) {
  std::string state = node.state;
  std::transform(state.begin(), state.end(), state.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return state;
}

}  // namespace

bool StartsNoJob(const SlurmNode& node) {
  const std::string state = LowerState(node);
  if (state == "down" || state == "drained" || state == "draining" || state == "fail") return true;
  for (const std::string& f : node.state_flags) {
    if (f == "DRAIN" || f == "DRAINED" || f == "DRAINING" || f == "FAIL" || f == "DOWN") {
      return true;
    }
  }
  return false;
}

bool AllocatedWhole(const SlurmNode& node) { return LowerState(node) == "allocated"; }

StatusOr<std::vector<SlurmNode>> ParseSinfoJson(std::string_view text) {
  ASSIGN_OR_RETURN(Json doc, ParseDocument(text, "sinfo --json", "nodes"));
  std::vector<SlurmNode> out;
  size_t index = 0;
  for (const Json& n : doc["nodes"]) {
    if (!n.is_object()) {
      return InvalidArgumentError(fmt::format("sinfo --json: node #{} is not an object", index));
    }
    SlurmNode node;
    RETURN_IF_ERROR(
        Fields(n, fmt::format("sinfo --json: node #{}", index)).Str("name", &node.name));
    if (node.name.empty()) {
      return InvalidArgumentError(fmt::format("sinfo --json: node #{} has no name", index));
    }
    const Fields f(n, fmt::format("sinfo --json: node {}", node.name));
    RETURN_IF_ERROR(f.Str("state", &node.state));
    RETURN_IF_ERROR(f.Strings("state_flags", &node.state_flags));
    RETURN_IF_ERROR(f.Gres("gres", &node.gres));
    RETURN_IF_ERROR(f.Gres("gres_used", &node.gres_used));
    RETURN_IF_ERROR(f.Strings("partitions", &node.partitions));
    RETURN_IF_ERROR(f.Str("reason", &node.reason));
    out.push_back(std::move(node));
    ++index;
  }
  return out;
}

size_t ScontrolRecord::Find(std::string_view key) const {
  const std::string needle = std::string(key) + "=";
  size_t pos = 0;
  while ((pos = line_.find(needle, pos)) != std::string::npos) {
    if (pos == 0 || line_[pos - 1] == ' ') return pos + needle.size();
    pos += needle.size();
  }
  return std::string::npos;
}

std::optional<std::string> ScontrolRecord::Value(std::string_view key) const {
  const size_t at = Find(key);
  if (at == std::string::npos) return std::nullopt;
  size_t end = line_.find_first_of(" \n", at);
  return line_.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

std::optional<std::string> ScontrolRecord::Rest(std::string_view key) const {
  const size_t at = Find(key);
  if (at == std::string::npos) return std::nullopt;
  std::string r = line_.substr(at);
  while (!r.empty() && (r.back() == '\n' || r.back() == ' ')) r.pop_back();
  return r;
}

}  // namespace migsched::slurm
