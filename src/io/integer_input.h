// An integer field of an input: the text of a CSV cell, or a JSON number (a trace's JSON lines,
// a request body of the daemon's API). The one rule for what is an integer and where it lies
// against the field's range, so that every reader says the same of the same value:
//  * text: an optional '-' and decimal digits, nothing else ("2", "-3"; not "2.0", "+2", " 2");
//    however many digits, it is an integer, below or above the range when no int64 holds it;
//  * JSON: a number with an integral value, whether written as an integer (2) or not (2.0,
//    2e0, 1e3: JSON has one number type and these are the same number); 2.5 is not an integer.
//    An integer too large for the parser's integer types (99999999999999999999) is read as a
//    double by the JSON parser and is above the range like any other.
// The callers word the errors (they name their file, line and field) and should quote the value
// as written: JsonNumberAsWritten gives a JSON number's text where the parser's value would not
// ("2.50", "99999999999999999999" read back as 1e+20).
//
// Thread-safety: pure functions.
#ifndef MIGSCHED_IO_INTEGER_INPUT_H_
#define MIGSCHED_IO_INTEGER_INPUT_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace migsched {

enum class IntegerInput {
  kInRange,     // an integer in [lo, hi]: the value is set
  kNotInteger,  // not an integer (text that is not one, a JSON value with a fraction or of
                // another type than number)
  kBelowRange,  // an integer < lo
  kAboveRange,  // an integer > hi
};

// `text` as an integer of [lo, hi] (the rule above); `*value` is set for kInRange only.
IntegerInput ReadIntegerText(std::string_view text, int64_t lo, int64_t hi, int64_t* value);

// The JSON value `v` as an integer of [lo, hi] (the rule above); `*value` is set for kInRange
// only. REQUIRES: -2^53 <= lo <= hi <= 2^53 (each integer of the range is a double exactly).
IntegerInput ReadJsonInteger(const nlohmann::json& v, int64_t lo, int64_t hi, int64_t* value);

// The text of the number that field `field` of the JSON text `text` holds, as written, or ""
// when the text does not parse or the field is absent or not a number. A field is named as the
// errors name it: `key` for a member of the top-level object, `a.b` for member b of the object
// a, `a[2]` for element 2 (from 0) of the array a (`placements[0].gpu`). For an error's quote
// of a value: the parsed value drops what the text said (2.50 is 2.5, 99999999999999999999 is
// 1e+20).
std::string JsonNumberAsWritten(std::string_view text, std::string_view field);

}  // namespace migsched

#endif  // MIGSCHED_IO_INTEGER_INPUT_H_
