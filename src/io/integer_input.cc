#include "io/integer_input.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <system_error>
#include <vector>

namespace migsched {
namespace {

using nlohmann::json;

IntegerInput IntegerAgainstRange(int64_t v, int64_t lo, int64_t hi, int64_t* value) {
  if (v < lo) return IntegerInput::kBelowRange;
  if (v > hi) return IntegerInput::kAboveRange;
  *value = v;
  return IntegerInput::kInRange;
}

// A SAX reader of one JSON text that keeps the text of the number whose field name (as
// JsonNumberAsWritten names one: key, a.b, a[2]) is `field`, the first one if several are.
class FieldNumberText {
 public:
  explicit FieldNumberText(std::string_view field) : field_(field) {}
  const std::string& text() const { return text_; }

  bool null() { return Value(); }
  bool boolean(bool) { return Value(); }
  bool number_integer(json::number_integer_t v) {
    return Number([v] { return std::to_string(v); });  // an integer's text is its decimal form
  }
  bool number_unsigned(json::number_unsigned_t v) {
    return Number([v] { return std::to_string(v); });
  }
  bool number_float(json::number_float_t, const json::string_t& written) {
    return Number([&written] { return written; });
  }
  bool string(json::string_t&) { return Value(); }
  bool binary(json::binary_t&) { return Value(); }
  bool start_object(std::size_t) { return Open(false); }
  bool end_object() { return Close(); }
  bool start_array(std::size_t) { return Open(true); }
  bool end_array() { return Close(); }
  bool key(json::string_t& k) {
    key_ = k;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const json::exception&) { return false; }

 private:
  struct Frame {
    std::string name;  // the field name of the object or array
    bool array = false;
    size_t next = 0;  // an array's index of the next element
  };

  // The field name of the value now read: the member's after its key, the element's in an array.
  std::string NextName() {
    if (open_.empty()) return "";
    Frame& o = open_.back();
    if (o.array) return o.name + "[" + std::to_string(o.next++) + "]";
    return o.name.empty() ? key_ : o.name + "." + key_;
  }
  bool Value() {
    NextName();
    return true;
  }
  template <typename Text>
  bool Number(Text text) {
    if (NextName() == field_ && !found_) {
      text_ = text();
      found_ = true;
    }
    return true;
  }
  bool Open(bool array) {
    open_.push_back(Frame{NextName(), array, 0});
    return true;
  }
  bool Close() {
    open_.pop_back();
    return true;
  }

  std::string_view field_;
  std::vector<Frame> open_;  // the objects and arrays being read, outermost first
  std::string key_;          // the key of the member being read
  bool found_ = false;
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

std::string JsonNumberAsWritten(std::string_view text, std::string_view field) {
  FieldNumberText reader(field);
  try {
    if (!json::sax_parse(text.begin(), text.end(), &reader)) return "";
  } catch (const json::exception&) {
    return "";
  }
  return reader.text();
}

}  // namespace migsched
