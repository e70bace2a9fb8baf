#include "cli/flag_bounds.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/error.h"

namespace stagecut {

namespace {

std::string wholeText(double value) { return std::to_string(static_cast<long long>(value)); }

std::string decimalText(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", value);
  return buffer;
}

// How a row reads its value: a whole number in [min, max], or a finite decimal above min (or
// from min, where min itself is meaningful) and at most max.
enum class Number { kWhole, kAbove, kFrom };

// A numeric flag's accepted range, for one command or ("") every command that has the flag.
struct FlagRange {
  const char* command;
  const char* flag;
  double min;
  double max;
  const char* unit;
  Number number;
};

// Every numeric flag of every command, bounded while it is parsed, before any file is read. A
// command-specific row comes before the row for all commands: the first row that matches holds.
// Checks that need another value (--stages against the layers, --microbatches against the
// schedule's op limit, --max-repeats against --min-repeats, --threads against the cores) stay with
// their command, as do the zoo's sizes (profile's own table, profiler/zoo_checks.cpp).
constexpr double kMaxOps = 4194304;  // the most forward ops a schedule holds (schedule/generators.h)
constexpr FlagRange kFlagRanges[] = {
    {"simulate", "--width", 40, 200, "columns", Number::kWhole},
    {"", "--microbatch-size", 1, 1000000, "samples, one of the profile's measured sizes", Number::kWhole},
    {"", "--global-batch", 1, 2147483647, "samples per step", Number::kWhole},
    {"bubble", "--stages", 1, 2147483647, "stages", Number::kWhole},  // a closed form: no op list
    {"bubble", "--microbatches", 1, 2147483647, "microbatches per step", Number::kWhole},
    {"", "--stages", 1, kMaxOps, "stages", Number::kWhole},
    {"validate", "--microbatches", 1, 100000, "microbatches per step", Number::kWhole},
    {"", "--microbatches", 1, kMaxOps, "microbatches per step", Number::kWhole},
    {"", "--chunks", 1, kMaxOps, "model chunks per rank", Number::kWhole},
    {"", "--data-parallel", 1, 4096, "replicas", Number::kWhole},
    {"simulate", "--ranks", 1, kMaxOps, "ranks", Number::kWhole},
    {"validate", "--steps", 1, 100000, "measured steps", Number::kWhole},
    {"validate", "--warmup-steps", 0, 100000, "untimed steps", Number::kWhole},
    {"profile", "--warmup", 0, 1000, "rounds", Number::kWhole},
    {"profile", "--min-repeats", 1, 1000000, "timed rounds", Number::kWhole},
    {"profile", "--max-repeats", 1, 1000000, "timed rounds", Number::kWhole},
    {"", "--bytes-per-param", 0, 1e6, "bytes per parameter", Number::kAbove},
    {"validate", "--timeout", 0, 86400, "seconds", Number::kAbove},
    {"validate", "--grad-tolerance", 0, 1, "relative difference", Number::kAbove},
    {"profile", "--cv-target", 0, 10, "coefficient of variation", Number::kAbove},
    {"profile", "--budget", 0, 86400, "seconds per layer", Number::kAbove},
    {"plan", "--fit-tolerance", 0, 1e6, "relative residual", Number::kFrom},
    {"plan", "--gpus", 1, 1048576, "GPUs", Number::kWhole},
    {"plan", "--gpus-per-node", 1, 1024, "GPUs per node", Number::kWhole},
    {"plan", "--most-chunks", 2, 64, "chunks per rank", Number::kWhole},
    {"plan", "--top", 1, 1000, "layouts", Number::kWhole},
    {"calibrate", "--prior-weight", 0, 1e6, "weight", Number::kAbove},
};

CLI::Validator rangeCheck(const FlagRange& range) {
  const std::string rule = range.number == Number::kWhole ? wholeText(range.min) + " to " + wholeText(range.max)
                           : (range.number == Number::kAbove ? "above " : "from ") + decimalText(range.min) +
                                 " to " + decimalText(range.max);
  return CLI::Validator(
      [range](std::string& text) -> std::string {
        // Thrown, not returned: CLI11 would word it "--width: -5: ..."; this is the house line.
        errno = 0;
        char* end = nullptr;
        if (range.number == Number::kWhole) {
          const long long value = std::strtoll(text.c_str(), &end, 10);
          const bool parsed = errno == 0 && end != text.c_str() && *end == '\0';
          if (parsed && value >= range.min && value <= range.max) return "";
          throw Error(std::string(range.flag) + " " + text + ": use " + wholeText(range.min) + " to " +
                      wholeText(range.max) + " " + range.unit);
        }
        const double value = std::strtod(text.c_str(), &end);
        const bool parsed = end != text.c_str() && *end == '\0' && std::isfinite(value);
        const bool above = range.number == Number::kAbove ? value > range.min : value >= range.min;
        if (parsed && above && value <= range.max) return "";
        throw Error(std::string(range.flag) + " " + text + ": must be a finite number of " + range.unit +
                    (range.number == Number::kAbove ? " above " : " from ") + decimalText(range.min) +
                    (range.number == Number::kAbove ? " and at most " : " to ") + decimalText(range.max));
      },
      rule, "range");
}

}  // namespace

void boundNumericFlags(CLI::App& app) {
  for (CLI::App* command : app.get_subcommands({})) {
    for (CLI::Option* option : command->get_options()) {
      for (const FlagRange& range : kFlagRanges) {
        if (*range.command != '\0' && command->get_name() != range.command) continue;
        if (!option->check_lname(std::string(range.flag).substr(2))) continue;
        option->check(rangeCheck(range));
        break;
      }
    }
  }
}

}  // namespace stagecut
