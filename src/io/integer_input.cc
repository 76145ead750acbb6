#include "io/integer_input.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <system_error>

namespace migsched {
namespace {

using nlohmann::json;

IntegerInput IntegerAgainstRange(int64_t v, int64_t lo, int64_t hi, int64_t* value) {
  if (v < lo) return IntegerInput::kBelowRange;
  if (v > hi) return IntegerInput::kAboveRange;
  *value = v;
  return IntegerInput::kInRange;
}

// A SAX reader of one JSON text that keeps the text of the number member `key` of the top-level
// object holds (JsonNumberAsWritten).
class MemberNumberText {
 public:
  explicit MemberNumberText(std::string_view key) : key_(key) {}
  const std::string& text() const { return text_; }

  bool null() { return Value(); }
  bool boolean(bool) { return Value(); }
  bool number_integer(json::number_integer_t v) {
    if (TakeMember()) text_ = std::to_string(v);  // an integer's text is its decimal form
    return true;
  }
  bool number_unsigned(json::number_unsigned_t v) {
    if (TakeMember()) text_ = std::to_string(v);
    return true;
  }
  bool number_float(json::number_float_t, const json::string_t& written) {
    if (TakeMember()) text_ = written;
    return true;
  }
  bool string(json::string_t&) { return Value(); }
  bool binary(json::binary_t&) { return Value(); }
  bool start_object(std::size_t) { return Open(); }
  bool end_object() { return Close(); }
  bool start_array(std::size_t) { return Open(); }
  bool end_array() { return Close(); }
  bool key(json::string_t& k) {
    at_member_ = depth_ == 1 && k == key_;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const json::exception&) { return false; }

 private:
  // Whether the value now read is the member's (the value right after its key).
  bool TakeMember() {
    const bool hit = at_member_;
    at_member_ = false;
    return hit;
  }
  bool Value() {
    TakeMember();
    return true;
  }
  bool Open() {
    TakeMember();
    ++depth_;
    return true;
  }
  bool Close() {
    --depth_;
    return true;
  }

  std::string_view key_;
  int depth_ = 0;
  bool at_member_ = false;
  std::string text_;
};

}  // namespace

IntegerInput ReadIntegerText(std::string_view text, int64_t lo, int64_t hi, int64_t* value) {
  const bool negative = !text.empty() && text.front() == '-';
  const std::string_view digits = negative ? text.substr(1) : text;
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos) {
    return IntegerInput::kNotInteger;
  }
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec == std::errc::result_out_of_range) {
    return negative ? IntegerInput::kBelowRange : IntegerInput::kAboveRange;
  }
  if (ec != std::errc() || end != text.data() + text.size()) return IntegerInput::kNotInteger;
  return IntegerAgainstRange(v, lo, hi, value);
}

IntegerInput ReadJsonInteger(const json& v, int64_t lo, int64_t hi, int64_t* value) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return IntegerInput::kAboveRange;
    }
    return IntegerAgainstRange(static_cast<int64_t>(u), lo, hi, value);
  }
  if (v.is_number_integer()) return IntegerAgainstRange(v.get<int64_t>(), lo, hi, value);
  if (!v.is_number_float()) return IntegerInput::kNotInteger;
  const double d = v.get<double>();
  if (!std::isfinite(d) || d != std::trunc(d)) return IntegerInput::kNotInteger;
  // lo and hi are doubles exactly (|lo|, |hi| <= 2^53), so these compare the integers.
  if (d < static_cast<double>(lo)) return IntegerInput::kBelowRange;
  if (d > static_cast<double>(hi)) return IntegerInput::kAboveRange;
  return IntegerAgainstRange(static_cast<int64_t>(d), lo, hi, value);
}

std::string JsonNumberAsWritten(std::string_view object_text, std::string_view key) {
  MemberNumberText reader(key);
  try {
    if (!json::sax_parse(object_text.begin(), object_text.end(), &reader)) return "";
  } catch (const json::exception&) {
    return "";
  }
  return reader.text();
}

}  // namespace migsched
