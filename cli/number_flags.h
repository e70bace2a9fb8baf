#pragma once

#include <cstdint>
#include <string>

namespace stagecut {

// Bounds of the numeric flags of the LibTorch commands, each refused in one line naming the flag,
// the value as given and the rule: "--budget nan: must be a finite number of seconds above 0".

/// `value` within [min, max]; `unit` words the rule ("threads", "steps").
void requireWholeInRange(const std::string& flag, long long value, long long min, long long max,
                         const std::string& unit);

/// A finite `value` above `above` and at most `max`; `unit` words the rule ("seconds").
void requireFiniteInRange(const std::string& flag, double value, double above, double max, const std::string& unit);

/// A seed: a whole number 0..2^64-1 written in decimal digits ("-1" and "1e3" are refused, not
/// wrapped or rounded).
std::uint64_t parseSeed(const std::string& text, const std::string& flag);

/// --threads: 1 or more, and at most the cores this process may use (more threads than cores
/// measure the contention, not the model).
void requireThreadsFitCores(const std::string& flag, int threads);

}  // namespace stagecut
