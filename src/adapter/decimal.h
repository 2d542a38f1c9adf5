// adapter/decimal.h — exact decimal arithmetic for the `convert` step.
//
// A payload number and a factor are read as the shortest decimal that reads back as their double
// (what a producer wrote, for up to 15 significant digits: 2.675 is 2.675, not the binary
// 2.67499999999999982236431605997495353221893310546875), multiplied exactly, and rounded exactly
// at a decimal place. So "2.675, half-even, 2 digits" is 2.68 and "1234 * 0.01" is 12.34 with no
// tolerance to tune; the binary error of a double never decides a half.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "evident/adapter.h"

namespace evident::adapter {

// (-1)^negative * digits * 10^exponent. `digits` holds decimal digits, most significant first,
// without leading zeros ("0" for zero, which is never negative).
struct Decimal {
  bool negative = false;
  std::string digits = "0";
  int64_t exponent = 0;
};

// `value` (finite) as the shortest decimal that reads back as it.
Decimal DecimalFromDouble(double value);
// `value` exactly.
Decimal DecimalFromInteger(int64_t value);
// a * b, exactly.
Decimal Multiply(const Decimal& a, const Decimal& b);
// `value` rounded to `digits` decimal places by `rounding` (kNone: unchanged).
Decimal Round(const Decimal& value, Rounding rounding, int digits);
// Whether `value` has no fractional part.
bool IsWhole(const Decimal& value);
// `value` as an int64 when it is whole and in range.
std::optional<int64_t> ToInteger(const Decimal& value);
// The double nearest to `value`; nullopt when its magnitude is beyond the doubles.
std::optional<double> ToDouble(const Decimal& value);
// "1234e-2" style text (what ToDouble parses), for tests and messages.
std::string DecimalText(const Decimal& value);

}  // namespace evident::adapter
