#pragma once

// Text helpers that the parsers of specs, lists and CSV share. Pure; thread-safe.

#include <string_view>

namespace migsched {

// `s` without leading and trailing spaces and tabs (only these two: the formats that use it
// allow no other blanks around a field).
inline std::string_view TrimBlanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace migsched
