#include "daemon/time_limit.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <vector>

namespace migsched {
namespace {

constexpr std::string_view kForms = "MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS";

constexpr int64_t kNotDigits = -1;
constexpr int64_t kTooLong = -2;  // digits, more than 9 of them
// A field of digits only; kNotDigits when it is not one, kTooLong when it has too many.
int64_t Field(std::string_view s) {
  if (s.empty()) return kNotDigits;
  if (s.size() > 9) {
    for (char ch : s) {
      if (ch < '0' || ch > '9') return kNotDigits;
    }
    return kTooLong;
  }
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return -1;
  return v;
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t from = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      out.push_back(s.substr(from, i - from));
      from = i + 1;
    }
  }
  return out;
}

}  // namespace

StatusOr<double> ParseSlurmTime(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return InvalidArgumentError(
        fmt::format("time limit '{}' {}: use {} (Slurm's --time)", text, why, kForms));
  };
  int64_t days = 0;
  std::string_view rest = text;
  const size_t dash = text.find('-');
  const bool with_days = dash != std::string_view::npos;
  // Regression (long_time_limit_called_not_a_duration): 99999999999 minutes was "not a duration".
  auto field_error = [&](int64_t f) {
    return bad(f == kTooLong ? "has a field of more than 9 digits" : "is not a duration");
  };
  if (with_days) {
    days = Field(text.substr(0, dash));
    if (days < 0) return field_error(days);
    rest = text.substr(dash + 1);
  }
  const std::vector<std::string_view> parts = Split(rest, ':');
  if (parts.size() > 3) return bad("is not a duration");
  std::vector<int64_t> v;
  for (std::string_view p : parts) {
    v.push_back(Field(p));
    if (v.back() < 0) return field_error(v.back());
  }
  int64_t h = 0, m = 0, s = 0;
  if (with_days) {  // D-HH, D-HH:MM, D-HH:MM:SS
    h = v[0];
    if (v.size() > 1) m = v[1];
    if (v.size() > 2) s = v[2];
    if (h >= 24) return bad("has more than 23 hours after its days");
  } else if (v.size() == 1) {  // MM
    m = v[0];
  } else if (v.size() == 2) {  // MM:SS
    m = v[0];
    s = v[1];
  } else {  // HH:MM:SS
    h = v[0];
    m = v[1];
    s = v[2];
  }
  const bool minutes_lead = !with_days && v.size() <= 2;
  if ((!minutes_lead && m >= 60) || s >= 60) return bad("has a field out of range");
  const double total = static_cast<double>(((days * 24 + h) * 60 + m) * 60 + s);
  if (total <= 0) return bad("is zero (leave the option out for no limit)");
  return total;
}

std::string FormatSlurmTime(double seconds) {
  // 2^63 s (about 292 billion years) and beyond cannot be counted in int64 seconds (the cast
  // below would be undefined): squeue's word for no limit.
  if (seconds >= 9223372036854775808.0) return "UNLIMITED";
  const int64_t t =
      std::isfinite(seconds) && seconds > 0 ? static_cast<int64_t>(std::floor(seconds)) : 0;
  const int64_t d = t / 86400, h = t / 3600 % 24, m = t / 60 % 60, s = t % 60;
  if (t < 3600) return fmt::format("{}:{:02}", m, s);
  if (t < 86400) return fmt::format("{}:{:02}:{:02}", h, m, s);
  return fmt::format("{}-{:02}:{:02}:{:02}", d, h, m, s);
}

}  // namespace migsched
