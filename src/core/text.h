#pragma once

// Text helpers that the parsers of specs, lists and CSV share. Pure; thread-safe.

#include <string>
#include <string_view>
#include <vector>

namespace migsched {

// `s` without leading and trailing spaces and tabs (only these two: the formats that use it
// allow no other blanks around a field).
inline std::string_view TrimBlanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// `s` without a leading UTF-8 byte-order mark (EF BB BF), as Excel and Windows editors write at
// the start of a CSV or text file; anything else unchanged. The one rule for the mark: every
// reader of a CSV, JSON-lines or text input applies it to the first bytes of the input (strict
// CSV, trace JSON lines, measured latency samples), so that a file saved with the mark reads as
// the same file without it.
inline std::string_view WithoutUtf8Bom(std::string_view s) {
  constexpr std::string_view kBom = "\xEF\xBB\xBF";
  if (s.substr(0, kBom.size()) == kBom) s.remove_prefix(kBom.size());
  return s;
}

// "A, B and C" ("A and B", "A", "" for none): the one way a message lists several names.
inline std::string JoinAnd(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    out += i == 0 ? "" : (i + 1 == items.size() ? " and " : ", ");
    out += items[i];
  }
  return out;
}

}  // namespace migsched
