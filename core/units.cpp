#include "core/units.h"

#include <sstream>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <utility>

#include "core/error.h"

namespace stagecut {

namespace {

struct UnitScale {
  const char* suffix;
  double scale;
};

std::string trim(const std::string& text) {
  const auto begin = text.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  const auto end = text.find_last_not_of(" \t");
  return text.substr(begin, end - begin + 1);
}

// Splits "25GB/s" into 25 and "GB/s". Returns false when no number leads the text; strtod
// alone would accept "inf", "nan" and hex floats, which no user means here.
bool splitNumberAndUnit(const std::string& text, double* number, std::string* unit) {
  const std::string trimmed = trim(text);
  if (trimmed.empty()) return false;
  const char first = trimmed.front();
  if (!std::isdigit(static_cast<unsigned char>(first)) && first != '.' && first != '-' &&
      first != '+') {
    return false;
  }
  for (char c : trimmed) {
    if (c == 'x' || c == 'X') return false;
  }
  char* end = nullptr;
  *number = std::strtod(trimmed.c_str(), &end);
  if (end == trimmed.c_str()) return false;
  *unit = trim(std::string(end));
  return std::isfinite(*number);
}

double parseWithUnits(const std::string& text, const std::string& what, const char* kind,
                      std::initializer_list<UnitScale> units, const char* accepted) {
  double number = 0;
  std::string unit;
  if (splitNumberAndUnit(text, &number, &unit)) {
    for (const auto& candidate : units) {
      if (unit != candidate.suffix) continue;
      const double value = number * candidate.scale;
      // 1e308TB/s is a number, but not one any later sum survives.
      if (!std::isfinite(value)) throw Error(what + " \"" + text + "\": too large for a " + kind);
      return value;
    }
  }
  throw Error(what + " \"" + text + "\": not a " + kind + "; use " + accepted);
}

}  // namespace

std::uint64_t parseBytes(const std::string& text, const std::string& what) {
  const double kKi = 1024.0;
  const double bytes = parseWithUnits(
      text, what, "memory size",
      {{"", 1}, {"B", 1}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
       {"KiB", kKi}, {"MiB", kKi * kKi}, {"GiB", kKi * kKi * kKi}, {"TiB", kKi * kKi * kKi * kKi}},
      "a number with B, KB, MB, GB, TB, KiB, MiB, GiB or TiB, e.g. 80GiB");
  if (bytes <= 0) throw Error(what + " \"" + text + "\": must be more than 0 bytes");
  if (bytes >= 9.2e18) throw Error(what + " \"" + text + "\": too large; the most is 8EiB");
  if (bytes < 0.5) throw Error(what + " \"" + text + "\": less than 1 byte; give at least 1B");
  return static_cast<std::uint64_t>(std::llround(bytes));
}

double parseBandwidthBytesPerS(const std::string& text, const std::string& what) {
  const double kKi = 1024.0;
  const double bytes_per_s = parseWithUnits(
      text, what, "bandwidth",
      {{"", 1}, {"B/s", 1}, {"KB/s", 1e3}, {"MB/s", 1e6}, {"GB/s", 1e9}, {"TB/s", 1e12},
       {"KiB/s", kKi}, {"MiB/s", kKi * kKi}, {"GiB/s", kKi * kKi * kKi}},
      "bytes per second with B/s, KB/s, MB/s, GB/s, TB/s, KiB/s, MiB/s or GiB/s, e.g. 25GB/s");
  if (bytes_per_s <= 0) throw Error(what + " \"" + text + "\": must be more than 0");
  return bytes_per_s;
}

double parseDurationMs(const std::string& text, const std::string& what) {
  const double ms = parseWithUnits(
      text, what, "duration",
      {{"ns", 1e-6}, {"us", 1e-3}, {"ms", 1}, {"s", 1e3}},
      "a number with ns, us, ms or s, e.g. 10us");
  if (ms < 0) throw Error(what + " \"" + text + "\": must not be negative");
  return ms;
}

namespace {

std::string printf3(double value, const char* unit) {
  char buffer[64];
  const int decimals = value >= 100 ? 0 : value >= 10 ? 1 : 2;
  std::snprintf(buffer, sizeof buffer, "%.*f %s", decimals, value, unit);
  return buffer;
}

}  // namespace

std::string formatBytes(std::uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes) / 1024.0;
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  return printf3(value, units[unit]);
}

std::string formatCount(std::uint64_t count) {
  if (count < 1000) return std::to_string(count);
  const std::pair<double, const char*> steps[] = {{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "K"}};
  for (const auto& [scale, suffix] : steps) {
    if (static_cast<double>(count) >= scale) {
      char buffer[64];
      std::snprintf(buffer, sizeof buffer, "%.1f%s", static_cast<double>(count) / scale, suffix);
      return buffer;
    }
  }
  return std::to_string(count);
}

std::string formatPercent(double fraction, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f%%", decimals, fraction * 100.0);
  return buffer;
}

std::string formatSignedPercent(double fraction) {
  const double percent = 100.0 * fraction;
  // "+0.0%" or "-0.0%" would claim a direction the printed digits do not show.
  if (std::fabs(percent) < 0.05) return "0.0%";
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%+.1f%%", percent);
  return buffer;
}

std::string formatMs(double ms) {
  char buffer[64];
  const int decimals = ms >= 1000 ? 0 : ms >= 100 ? 1 : ms >= 1 ? 2 : 3;
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, ms);
  return buffer;
}

}  // namespace stagecut

namespace stagecut {

std::string joinNumbers(const std::vector<int>& values, const std::string& separator) {
  std::string text;
  for (std::size_t i = 0; i < values.size(); ++i) text += (i ? separator : "") + std::to_string(values[i]);
  return text;
}

std::vector<std::string> splitCommaList(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  std::string part;
  while (std::getline(stream, part, ',')) parts.push_back(part);
  if (!text.empty() && text.back() == ',') parts.push_back("");
  return parts;
}

std::vector<int> parseWholeNumberList(const std::string& text, const std::string& what, const std::string& noun,
                                      const std::string& unit) {
  std::vector<int> numbers;
  std::size_t begin = 0;
  while (true) {
    const std::size_t comma = text.find(',', begin);
    const std::string item = text.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
    const bool digits = !item.empty() && item.size() <= 9 && item.find_first_not_of("0123456789") == std::string::npos;
    if (!digits) {
      throw Error(what + " " + text + ": \"" + item + "\" is not a " + noun + "; give whole numbers " +
                  "from 1, e.g. 4 or 1,2,4,8");
    }
    const int number = std::stoi(item);
    if (number < 1) throw Error(what + " " + text + ": a " + noun + " must be 1 or more, got 0");
    for (int seen : numbers) {
      if (seen == number) {
        throw Error(what + " " + text + ": " + unit + " " + item + " is listed twice; give each " + unit + " once");
      }
    }
    numbers.push_back(number);
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  std::sort(numbers.begin(), numbers.end());
  return numbers;
}

std::vector<int> parseMicrobatchSizes(const std::string& text, const std::string& what) {
  return parseWholeNumberList(text, what, "microbatch size", "size");
}

std::string timeoutSeconds(std::chrono::milliseconds timeout) {
  const auto ms = timeout.count();
  return ms % 1000 == 0 ? std::to_string(ms / 1000) : std::to_string(static_cast<double>(ms) / 1000).substr(0, 5);
}

}  // namespace stagecut
