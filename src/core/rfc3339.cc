#include "core/rfc3339.h"

#include <cstdio>
#include <ctime>

namespace evident::rfc3339 {
namespace {

bool Digits(std::string_view s, size_t pos, size_t count, int& value) {
  if (pos + count > s.size()) return false;
  value = 0;
  for (size_t i = pos; i < pos + count; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    value = value * 10 + (s[i] - '0');
  }
  return true;
}

bool IsLeapYear(int year) { return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0; }

}  // namespace

bool IsFullDate(std::string_view s) {
  int year = 0, month = 0, day = 0;
  if (s.size() != 10 || s[4] != '-' || s[7] != '-') return false;
  if (!Digits(s, 0, 4, year) || !Digits(s, 5, 2, month) || !Digits(s, 8, 2, day)) return false;
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (month < 1 || month > 12 || day < 1) return false;
  const int days = month == 2 && IsLeapYear(year) ? 29 : kDays[month - 1];
  return day <= days;
}

bool IsFullTime(std::string_view s) {
  int hour = 0, minute = 0, second = 0;
  if (s.size() < 9 || s[2] != ':' || s[5] != ':') return false;
  if (!Digits(s, 0, 2, hour) || !Digits(s, 3, 2, minute) || !Digits(s, 6, 2, second)) {
    return false;
  }
  size_t i = 8;
  if (i < s.size() && s[i] == '.') {
    ++i;
    const size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    if (i == start) return false;
  }
  if (i >= s.size()) return false;
  int offset_minutes = 0;
  if (s[i] == 'Z' || s[i] == 'z') {
    if (i + 1 != s.size()) return false;
  } else if (s[i] == '+' || s[i] == '-') {
    int oh = 0, om = 0;
    if (s.size() != i + 6 || s[i + 3] != ':' || !Digits(s, i + 1, 2, oh) ||
        !Digits(s, i + 4, 2, om) || oh > 23 || om > 59) {
      return false;
    }
    offset_minutes = (s[i] == '+' ? 1 : -1) * (oh * 60 + om);
  } else {
    return false;
  }
  if (hour > 23 || minute > 59 || second > 60) return false;
  if (second == 60) {
    int utc = hour * 60 + minute - offset_minutes;
    utc = ((utc % 1440) + 1440) % 1440;
    if (utc != 23 * 60 + 59) return false;
  }
  return true;
}

bool IsDateTime(std::string_view s) {
  if (s.size() < 20 || (s[10] != 'T' && s[10] != 't')) return false;
  return IsFullDate(s.substr(0, 10)) && IsFullTime(s.substr(11));
}

std::string FormatMs(int64_t ms) {
  const auto seconds = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buffer[96];  // room for any int the format could print, so nothing is ever cut
  std::snprintf(buffer, sizeof buffer, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(ms % 1000));
  return buffer;
}

}  // namespace evident::rfc3339
