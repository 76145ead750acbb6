#include "slurm/hostlist.h"

#include <fmt/format.h>

#include <cstdint>

namespace migsched::slurm {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// "7" -> width 0 (natural); "007" -> width 3.
int PadWidth(std::string_view digits) {
  return digits.size() > 1 && digits[0] == '0' ? static_cast<int>(digits.size()) : 0;
}

std::string FormatNumber(uint64_t v, int width) { return fmt::format("{:0{}}", v, width); }

// One bracket group's content "1-3,07" -> its numbers as strings.
StatusOr<std::vector<std::string>> ExpandGroup(std::string_view group, size_t where,
                                               size_t max_hosts) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= group.size()) {
    const size_t comma = group.find(',', pos);
    const std::string_view part =
        group.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    const size_t dash = part.find('-');
    const std::string_view lo = part.substr(0, dash);
    const std::string_view hi = dash == std::string_view::npos ? lo : part.substr(dash + 1);
    auto number = [&](std::string_view s) -> StatusOr<uint64_t> {
      if (s.empty() || s.size() > 18) {
        return InvalidArgumentError(fmt::format(
            "hostlist: at position {}: '{}' is not a number or a range a-b", where, part));
      }
      uint64_t v = 0;
      for (char c : s) {
        if (!IsDigit(c)) {
          return InvalidArgumentError(fmt::format(
              "hostlist: at position {}: '{}' is not a number or a range a-b", where, part));
        }
        v = v * 10 + static_cast<uint64_t>(c - '0');
      }
      return v;
    };
    ASSIGN_OR_RETURN(const uint64_t a, number(lo));
    ASSIGN_OR_RETURN(const uint64_t b, number(hi));
    if (b < a) {
      return InvalidArgumentError(
          fmt::format("hostlist: at position {}: descending range '{}'", where, part));
    }
    if (b - a >= max_hosts || out.size() + (b - a + 1) > max_hosts) {
      return InvalidArgumentError(
          fmt::format("hostlist: at position {}: more than {} names", where, max_hosts));
    }
    const int width = PadWidth(lo);
    for (uint64_t v = a; v <= b; ++v) out.push_back(FormatNumber(v, width));
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return out;
}

// One item "r[1-2]n[01-02]x" -> its names.
StatusOr<std::vector<std::string>> ExpandItem(std::string_view item, size_t where,
                                              size_t max_hosts) {
  std::vector<std::string> names = {""};
  size_t pos = 0;
  while (pos < item.size()) {
    const size_t open = item.find('[', pos);
    const std::string_view text =
        item.substr(pos, open == std::string_view::npos ? std::string_view::npos : open - pos);
    if (text.find(']') != std::string_view::npos) {
      return InvalidArgumentError(
          fmt::format("hostlist: at position {}: ']' without '[' in '{}'", where, item));
    }
    for (std::string& n : names) n += text;
    if (open == std::string_view::npos) break;
    const size_t close = item.find(']', open);
    if (close == std::string_view::npos) {
      return InvalidArgumentError(
          fmt::format("hostlist: at position {}: '[' without ']' in '{}'", where + open, item));
    }
    ASSIGN_OR_RETURN(std::vector<std::string> numbers,
                     ExpandGroup(item.substr(open + 1, close - open - 1), where + open, max_hosts));
    if (names.size() * numbers.size() > max_hosts) {
      return InvalidArgumentError(
          fmt::format("hostlist: at position {}: more than {} names", where, max_hosts));
    }
    std::vector<std::string> next;
    next.reserve(names.size() * numbers.size());
    for (const std::string& n : names) {
      for (const std::string& v : numbers) next.push_back(n + v);
    }
    names = std::move(next);
    pos = close + 1;
  }
  return names;
}

// A host name split as prefix + trailing digits ("gpu012" -> "gpu", "012").
struct HostSplit {
  std::string_view prefix;
  std::string_view digits;  // empty: no trailing number
};
HostSplit SplitHost(std::string_view h) {
  size_t i = h.size();
  while (i > 0 && IsDigit(h[i - 1])) --i;
  // Names of 18+ digits would overflow: treat them as plain names.
  if (h.size() - i > 18) i = h.size();
  return {h.substr(0, i), h.substr(i)};
}

uint64_t Value(std::string_view digits) {
  uint64_t v = 0;
  for (char c : digits) v = v * 10 + static_cast<uint64_t>(c - '0');
  return v;
}

}  // namespace

StatusOr<std::vector<std::string>> ExpandHostlist(std::string_view expr, size_t max_hosts) {
  std::vector<std::string> out;
  if (expr.empty()) return InvalidArgumentError("hostlist: empty");
  size_t pos = 0;
  int depth = 0;
  size_t item_start = 0;
  for (pos = 0; pos <= expr.size(); ++pos) {
    const char c = pos < expr.size() ? expr[pos] : ',';
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (depth < 0) {
      return InvalidArgumentError(fmt::format("hostlist: at position {}: ']' without '['", pos));
    }
    if (c != ',' || depth > 0) continue;
    const std::string_view item = expr.substr(item_start, pos - item_start);
    if (item.empty()) {
      return InvalidArgumentError(fmt::format("hostlist: at position {}: empty name", item_start));
    }
    if (item.find_first_of(" \t\n=:") != std::string_view::npos) {
      return InvalidArgumentError(fmt::format(
          "hostlist: at position {}: '{}' contains a space, '=' or ':'", item_start, item));
    }
    ASSIGN_OR_RETURN(std::vector<std::string> names,
                     ExpandItem(item, item_start, max_hosts - out.size()));
    out.insert(out.end(), names.begin(), names.end());
    item_start = pos + 1;
  }
  if (depth != 0) return InvalidArgumentError("hostlist: '[' without ']'");
  return out;
}

std::string CompressHostlist(const std::vector<std::string>& hosts) {
  std::vector<std::string> items;
  size_t i = 0;
  while (i < hosts.size()) {
    const HostSplit first = SplitHost(hosts[i]);
    if (first.digits.empty()) {
      items.push_back(hosts[i]);
      ++i;
      continue;
    }
    // The run of hosts with the same prefix and a trailing number.
    size_t j = i;
    std::vector<std::string> parts;  // bracket items "1-3", "07"
    while (j < hosts.size()) {
      const HostSplit s = SplitHost(hosts[j]);
      if (s.digits.empty() || s.prefix != first.prefix) break;
      // Extend a range from s while the next name is the next number written
      // the way the range's first number would expand it.
      const uint64_t a = Value(s.digits);
      const int width = PadWidth(s.digits);
      uint64_t b = a;
      size_t k = j + 1;
      while (k < hosts.size()) {
        const HostSplit t = SplitHost(hosts[k]);
        if (t.digits.empty() || t.prefix != first.prefix) break;
        if (t.digits != FormatNumber(b + 1, width)) break;
        ++b;
        ++k;
      }
      parts.push_back(b == a ? std::string(s.digits)
                             : fmt::format("{}-{}", s.digits, FormatNumber(b, width)));
      j = k;
    }
    if (j == i + 1) {
      items.push_back(hosts[i]);
    } else {
      items.push_back(fmt::format("{}[{}]", first.prefix, fmt::join(parts, ",")));
    }
    i = j;
  }
  return fmt::format("{}", fmt::join(items, ","));
}

}  // namespace migsched::slurm
