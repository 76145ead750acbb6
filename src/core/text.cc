#include "core/text.h"

#include <fmt/format.h>

#include <cstdint>

namespace migsched {

std::vector<std::string> DisplayChars(std::string_view s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b < 0x80) {
      if (b == '\n') {
        out.push_back("\\n");
      } else if (b == '\t') {
        out.push_back("\\t");
      } else if (b == '\r') {
        out.push_back("\\r");
      } else if (b < 0x20 || b == 0x7f) {
        out.push_back(fmt::format("\\x{:02x}", b));
      } else {
        out.emplace_back(1, static_cast<char>(b));
      }
      ++i;
      continue;
    }
    // A lead byte and its length; 0xC0, 0xC1 and above 0xF4 never start a valid sequence.
    const size_t len = b >= 0xc2 && b <= 0xdf   ? 2
                       : b >= 0xe0 && b <= 0xef ? 3
                       : b >= 0xf0 && b <= 0xf4 ? 4
                                                : 0;
    bool valid = len > 0 && i + len <= s.size();
    uint32_t cp = len == 2 ? b & 0x1f : len == 3 ? b & 0x0f : b & 0x07;
    for (size_t k = 1; valid && k < len; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      valid = (c & 0xc0) == 0x80;
      cp = (cp << 6) | (c & 0x3f);
    }
    // Overlong forms, UTF-16 surrogates and code points past U+10FFFF are not valid UTF-8.
    valid = valid && !(len == 3 && cp < 0x800) && !(len == 4 && cp < 0x10000) &&
            !(cp >= 0xd800 && cp <= 0xdfff) && cp <= 0x10ffff;
    if (!valid) {
      out.push_back("?");
      ++i;
      continue;
    }
    // C1 controls (0x9B is a CSI), and the bidirectional formatting characters, which reorder what
    // follows them on the line (U+202E would show a row's later columns reversed; regression:
    // bidi_override_in_jobs_table): LRM, RLM, ALM, the embeddings and overrides, the isolates.
    const bool bidi = cp == 0x200e || cp == 0x200f || cp == 0x061c ||
                      (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
    if ((cp >= 0x80 && cp <= 0x9f) || bidi) {
      out.push_back(fmt::format("\\u{:04x}", cp));
    } else {
      out.emplace_back(s.substr(i, len));
    }
    i += len;
  }
  return out;
}

size_t DisplayWidth(std::string_view c) {
  if (c.size() > 1 && c[0] == '\\') return c.size();  // an escape DisplayChars wrote
  const auto b = static_cast<unsigned char>(c.empty() ? 0 : c[0]);
  if (b < 0xe0 || c.size() < 3) return 1;  // ASCII, '?', and two-byte sequences
  uint32_t cp = c.size() == 3 ? b & 0x0f : b & 0x07;
  for (size_t k = 1; k < c.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(c[k]) & 0x3f);
  // East Asian Wide and Fullwidth blocks, and the emoji blocks (the ranges fmt's width uses).
  const bool wide = (cp >= 0x1100 && cp <= 0x115f) || (cp >= 0x2329 && cp <= 0x232a) ||
                    (cp >= 0x2e80 && cp <= 0x303e) || (cp >= 0x3040 && cp <= 0xa4cf) ||
                    (cp >= 0xac00 && cp <= 0xd7a3) || (cp >= 0xf900 && cp <= 0xfaff) ||
                    (cp >= 0xfe10 && cp <= 0xfe19) || (cp >= 0xfe30 && cp <= 0xfe6f) ||
                    (cp >= 0xff00 && cp <= 0xff60) || (cp >= 0xffe0 && cp <= 0xffe6) ||
                    (cp >= 0x1f300 && cp <= 0x1f64f) || (cp >= 0x1f900 && cp <= 0x1f9ff) ||
                    (cp >= 0x20000 && cp <= 0x2fffd) || (cp >= 0x30000 && cp <= 0x3fffd);
  return wide ? 2 : 1;
}

std::string OneLine(std::string_view s) {
  std::string out;
  for (const std::string& c : DisplayChars(s)) out += c;
  return out;
}

}  // namespace migsched
