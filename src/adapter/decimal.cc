#include "adapter/decimal.h"

#include <cassert>
#include <charconv>
#include <cmath>
#include <vector>

namespace evident::adapter {
namespace {

// Leading zeros go, trailing zeros move into the exponent; zero is "0" with exponent 0, positive.
void Normalize(Decimal& value) {
  const size_t first = value.digits.find_first_not_of('0');
  if (first == std::string::npos) {
    value = Decimal{};
    return;
  }
  value.digits.erase(0, first);
  const size_t last = value.digits.find_last_not_of('0');
  value.exponent += static_cast<int64_t>(value.digits.size() - 1 - last);
  value.digits.resize(last + 1);
}

// Adds one unit in the last place to a string of decimal digits.
void Increment(std::string& digits) {
  for (size_t i = digits.size(); i-- > 0;) {
    if (digits[i] != '9') {
      ++digits[i];
      return;
    }
    digits[i] = '0';
  }
  digits.insert(digits.begin(), '1');
}

// Whether the magnitude goes up by one unit of the kept place. `first_dropped` is the first digit
// rounded away, `rest_nonzero` whether any later one is not zero.
bool RoundsAway(Rounding rounding, bool negative, int first_dropped, bool rest_nonzero,
                bool last_kept_odd) {
  const bool inexact = first_dropped != 0 || rest_nonzero;
  const bool above_half = first_dropped > 5 || (first_dropped == 5 && rest_nonzero);
  const bool half = first_dropped == 5 && !rest_nonzero;
  switch (rounding) {
    case Rounding::kNone:
    case Rounding::kDown:
      return false;
    case Rounding::kUp:
      return inexact;
    case Rounding::kFloor:
      return negative && inexact;
    case Rounding::kCeiling:
      return !negative && inexact;
    case Rounding::kHalfUp:
      return above_half || half;
    case Rounding::kHalfEven:
      return above_half || (half && last_kept_odd);
  }
  return false;
}

}  // namespace

Decimal DecimalFromDouble(double value) {
  assert(std::isfinite(value));
  char buffer[40];
  const auto [end, error] =
      std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::scientific);
  assert(error == std::errc());
  // "-2.675e+00": sign, mantissa digits with at most one '.', then the exponent.
  Decimal out;
  out.digits.clear();
  const char* at = buffer;
  if (*at == '-') {
    out.negative = true;
    ++at;
  }
  int64_t fraction_digits = 0;
  bool after_point = false;
  for (; at < end && *at != 'e'; ++at) {
    if (*at == '.') {
      after_point = true;
      continue;
    }
    out.digits.push_back(*at);
    if (after_point) ++fraction_digits;
  }
  assert(at < end && *at == 'e');
  ++at;
  if (*at == '+') ++at;
  int exponent = 0;
  std::from_chars(at, end, exponent);
  out.exponent = exponent - fraction_digits;
  Normalize(out);
  return out;
}

Decimal DecimalFromInteger(int64_t value) {
  Decimal out;
  out.digits = std::to_string(value);  // exact, INT64_MIN included
  if (out.digits[0] == '-') {
    out.negative = true;
    out.digits.erase(0, 1);
  }
  Normalize(out);
  return out;
}

Decimal Multiply(const Decimal& a, const Decimal& b) {
  // Schoolbook; the operands have at most 19 digits each.
  std::vector<int> product(a.digits.size() + b.digits.size(), 0);
  for (size_t i = a.digits.size(); i-- > 0;) {
    int carry = 0;
    for (size_t j = b.digits.size(); j-- > 0;) {
      const int sum = product[i + j + 1] + (a.digits[i] - '0') * (b.digits[j] - '0') + carry;
      product[i + j + 1] = sum % 10;
      carry = sum / 10;
    }
    product[i] += carry;
  }
  Decimal out;
  out.negative = a.negative != b.negative;
  out.digits.clear();
  for (const int digit : product) out.digits.push_back(static_cast<char>('0' + digit));
  out.exponent = a.exponent + b.exponent;
  Normalize(out);
  return out;
}

Decimal Round(const Decimal& value, Rounding rounding, int digits) {
  assert(digits >= 0);
  if (rounding == Rounding::kNone || value.exponent >= -digits) return value;
  // Drop the `dropped` least significant digits (all of them, and implied zeros before them,
  // when there are fewer).
  const int64_t dropped = -digits - value.exponent;
  const int64_t length = static_cast<int64_t>(value.digits.size());
  Decimal out;
  out.negative = value.negative;
  out.exponent = -digits;
  int first_dropped = 0;
  bool rest_nonzero = false;
  if (dropped > length) {
    out.digits = "0";
    rest_nonzero = true;  // normalized: a value that is not zero has a non-zero digit
  } else {
    const size_t kept = static_cast<size_t>(length - dropped);
    out.digits = kept == 0 ? "0" : value.digits.substr(0, kept);
    first_dropped = value.digits[kept] - '0';
    rest_nonzero = value.digits.find_first_not_of('0', kept + 1) != std::string::npos;
  }
  const bool last_kept_odd = ((out.digits.back() - '0') % 2) == 1;
  if (RoundsAway(rounding, value.negative, first_dropped, rest_nonzero, last_kept_odd)) {
    Increment(out.digits);
  }
  Normalize(out);
  return out;
}

bool IsWhole(const Decimal& value) { return value.exponent >= 0; }

std::optional<int64_t> ToInteger(const Decimal& value) {
  if (!IsWhole(value)) return std::nullopt;
  if (static_cast<int64_t>(value.digits.size()) + value.exponent > 19) return std::nullopt;
  std::string text = value.negative ? "-" : "";
  text += value.digits;
  text.append(static_cast<size_t>(value.exponent), '0');
  int64_t out = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return out;
}

std::optional<double> ToDouble(const Decimal& value) {
  const std::string text = DecimalText(value);
  double out = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  if (error == std::errc::result_out_of_range) {
    // Below the smallest subnormal the nearest double is zero; above the largest there is none.
    if (static_cast<int64_t>(value.digits.size()) + value.exponent < 0) return 0.0;
    return std::nullopt;
  }
  if (error != std::errc() || !std::isfinite(out)) return std::nullopt;
  return out;
}

std::string DecimalText(const Decimal& value) {
  std::string text = value.negative ? "-" : "";
  text += value.digits;
  if (value.exponent != 0) {
    text += 'e';
    text += std::to_string(value.exponent);
  }
  return text;
}

}  // namespace evident::adapter
