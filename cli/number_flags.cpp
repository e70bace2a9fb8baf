#include "cli/number_flags.h"

#include <algorithm>
#include <limits>

#include "core/error.h"
#include "core/host_cpu.h"

namespace stagecut {

void requireWholeInRange(const std::string& flag, long long value, long long min, long long max,
                         const std::string& unit) {
  if (value < min || value > max) {
    throw Error(flag + " " + std::to_string(value) + ": use " + std::to_string(min) + " to " + std::to_string(max) +
                " " + unit);
  }
}

std::uint64_t parseSeed(const std::string& text, const std::string& flag) {
  bool digits = !text.empty() && text.size() <= 20;
  for (char c : text) digits = digits && c >= '0' && c <= '9';
  std::uint64_t value = 0;
  for (std::size_t i = 0; digits && i < text.size(); ++i) {
    const std::uint64_t digit = static_cast<std::uint64_t>(text[i] - '0');
    if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) digits = false;
    value = value * 10 + digit;
  }
  if (!digits) {
    throw Error(flag + " " + text + ": a seed is a whole number from 0 to 18446744073709551615, in digits");
  }
  return value;
}

void requireThreadsFitCores(const std::string& flag, int threads) {
  const int cores = usableCores();
  if (threads < 1 || threads > cores) {
    throw Error(flag + " " + std::to_string(threads) + ": use 1 to " + std::to_string(cores) +
                " threads (the cores this process may run on); more threads than cores measure the "
                "contention, not the model");
  }
}

}  // namespace stagecut
