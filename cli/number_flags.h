#pragma once

#include <cstdint>
#include <string>

namespace stagecut {

// The numeric checks of the LibTorch commands that the flag table (cli/flag_bounds.h) cannot make,
// since they need another value: each refused in one line naming the flag, the value and the rule.

/// `value` within [min, max]; `unit` words the rule ("threads", "steps").
void requireWholeInRange(const std::string& flag, long long value, long long min, long long max,
                         const std::string& unit);

/// A seed: a whole number 0..2^64-1 written in decimal digits ("-1" and "1e3" are refused, not
/// wrapped or rounded).
std::uint64_t parseSeed(const std::string& text, const std::string& flag);

/// --threads: 1 or more, and at most the cores this process may use (more threads than cores
/// measure the contention, not the model).
void requireThreadsFitCores(const std::string& flag, int threads);

}  // namespace stagecut
