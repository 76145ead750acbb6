#include "slurm/admin_comment.h"

#include <fmt/format.h>

#include <charconv>

namespace migsched::slurm {
namespace {

constexpr std::string_view kBound = "migsched: bound ";
constexpr std::string_view kBindFailed = "migsched: bind failed (attempt ";
constexpr std::string_view kHeld = "migsched: held: ";
constexpr std::string_view kRequeued = "migsched: requeued to open room for ";

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  while (true) {
    const size_t e = s.find(sep, pos);
    out.push_back(s.substr(pos, e == std::string_view::npos ? std::string_view::npos : e - pos));
    if (e == std::string_view::npos) return out;
    pos = e + 1;
  }
}

bool ParseInt(std::string_view s, int* out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

}  // namespace

std::string FormatBound(const Binding& binding) {
  std::string s(kBound);
  bool first_node = true;
  for (const auto& [node, instances] : binding) {
    if (!first_node) s += ' ';
    first_node = false;
    s += node + "=";
    for (size_t i = 0; i < instances.size(); ++i) {
      const BoundInstance& b = instances[i];
      if (i > 0) s += ',';
      s += fmt::format("{}|{}|{}|{}", b.mig_uuid, b.placement.gpu, b.placement.profile,
                       b.placement.start);
    }
  }
  return s;
}

StatusOr<std::optional<Binding>> ParseBound(std::string_view text) {
  if (text.rfind(kBound, 0) != 0) return std::optional<Binding>();
  text.remove_prefix(kBound.size());
  Binding b;
  for (std::string_view word : Split(text, ' ')) {
    if (word.empty()) continue;
    const size_t eq = word.find('=');
    // The first word that is not node=MIG-... ends the binding (the next
    // `scontrol -o` key, e.g. StdErr=...).
    if (eq == std::string_view::npos || word.substr(eq + 1).rfind("MIG-", 0) != 0) break;
    const std::string node(word.substr(0, eq));
    std::vector<BoundInstance>& list = b[node];
    for (std::string_view item : Split(word.substr(eq + 1), ',')) {
      const std::vector<std::string_view> f = Split(item, '|');
      BoundInstance in;
      int gpu = -1;
      if (f.size() != 4 || !ParseInt(f[1], &gpu) || f[2].empty() ||
          !ParseInt(f[3], &in.placement.start)) {
        return InvalidArgumentError(
            fmt::format("AdminComment binding '{}': expected MIG-UUID|GPU|profile|start", item));
      }
      in.placement.gpu = NvmlIndex::Of(gpu);
      in.mig_uuid = std::string(f[0]);
      in.placement.profile = std::string(f[2]);
      list.push_back(std::move(in));
    }
  }
  if (b.empty()) return InvalidArgumentError("AdminComment binding names no node");
  return std::optional<Binding>(std::move(b));
}

std::string FormatBindFailure(int attempt, int max_attempts, std::string_view reason) {
  return Truncate(fmt::format("{}{} of {}): {}", kBindFailed, attempt, max_attempts, reason));
}

int ParseBindAttempt(std::string_view text) {
  const size_t at = text.find(kBindFailed);
  if (at == std::string_view::npos) return 0;
  std::string_view rest = text.substr(at + kBindFailed.size());
  const size_t sp = rest.find(' ');
  int n = 0;
  return ParseInt(rest.substr(0, sp), &n) ? n : 0;
}

std::string FormatHeld(std::string_view reason) {
  return Truncate(fmt::format("{}{}", kHeld, reason));
}

bool IsHeldByMigsched(std::string_view text) { return text.rfind(kHeld, 0) == 0; }

std::string FormatRequeuedFor(std::string_view for_job, std::string_view where) {
  return Truncate(fmt::format("{}{} ({})", kRequeued, for_job, where));
}

std::optional<std::string> ParseRequeuedFor(std::string_view text) {
  if (text.rfind(kRequeued, 0) != 0) return std::nullopt;
  text.remove_prefix(kRequeued.size());
  const size_t sp = text.find(' ');
  std::string key(text.substr(0, sp));
  if (key.empty()) return std::nullopt;
  return key;
}

std::string FormatWaiting(std::string_view reason) {
  return Truncate(fmt::format("{}waiting: {}", kCommentPrefix, reason));
}

std::string Truncate(std::string text) {
  if (text.size() > kMaxCommentBytes) {
    text.resize(kMaxCommentBytes - 3);
    text += "...";
  }
  return text;
}

}  // namespace migsched::slurm
