#pragma once

// Text helpers that the parsers of specs, lists and CSV share. Pure; thread-safe.

#include <optional>
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

// The words an on/off setting takes, in any case: on, true, yes (true) and off, false, no
// (false); nullopt for anything else ("1", "y", " on"). The one rule for our option words: the
// scheduler's options (flags and YAML, sched/option_table.h) and the daemon config's switches.
inline std::optional<bool> OnOffWord(std::string_view s) {
  auto is = [s](std::string_view word) {
    if (s.size() != word.size()) return false;
    for (size_t i = 0; i < s.size(); ++i) {
      const char c = s[i] >= 'A' && s[i] <= 'Z' ? static_cast<char>(s[i] - 'A' + 'a') : s[i];
      if (c != word[i]) return false;
    }
    return true;
  };
  if (is("on") || is("true") || is("yes")) return true;
  if (is("off") || is("false") || is("no")) return false;
  return std::nullopt;
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

// The characters of `s` made safe for one line of a terminal or a log: control characters (C0,
// DEL, C1: a newline that would start a line of its own, an escape sequence) and the
// bidirectional formatting characters shown escaped as \n, \t, \r or \xHH / \uHHHH, and each
// byte that is not part of valid UTF-8 as '?'. One entry per character (a code point, whole).
std::vector<std::string> DisplayChars(std::string_view s);

// DisplayChars of `s`, joined: text from a client (a request's path, a job's name) as one line
// of the log, where it cannot forge a line of its own (regression: forged_log_line_without_token).
std::string OneLine(std::string_view s);

// The terminal columns one entry of DisplayChars takes: an escape its length ("\\x1b": 4), an East
// Asian wide or fullwidth character or an emoji 2 (the ranges fmt pads by), any other 1. What the
// jobs table pads and cuts its cells by, so an escaped or wide name does not shift the columns.
size_t DisplayWidth(std::string_view display_char);

}  // namespace migsched
