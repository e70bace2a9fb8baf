#include "cli/flag_bounds.h"

#include <cerrno>
#include <cstdlib>
#include <string>

#include "core/error.h"

namespace stagecut {

namespace {

// A whole-number flag's accepted range, for one command or ("") all of them.
struct WholeFlagRange {
  const char* command;
  const char* flag;
  long long min;
  long long max;
  const char* unit;
};

// Flags whose commands check them further (--stages against the layers, --microbatches against
// the schedule) say so there, with the context; this table bounds what no later check sees.
constexpr WholeFlagRange kWholeFlagRanges[] = {
    {"simulate", "--width", 40, 200, "columns"},
    {"", "--microbatch-size", 1, 1000000, "samples, one of the profile's measured sizes"},
    {"simulate", "--global-batch", 1, 2147483647, "samples per step"},
};

CLI::Validator wholeRange(const WholeFlagRange& range) {
  return CLI::Validator(
      [range](std::string& text) -> std::string {
        errno = 0;
        char* end = nullptr;
        const long long value = std::strtoll(text.c_str(), &end, 10);
        if (errno == 0 && end != text.c_str() && *end == '\0' && value >= range.min && value <= range.max) return "";
        // Thrown, not returned: CLI11 would word it "--width: -5: ..."; this is the house line.
        throw Error(std::string(range.flag) + " " + text + ": use " + std::to_string(range.min) + " to " +
                    std::to_string(range.max) + " " + range.unit);
      },
      std::to_string(range.min) + " to " + std::to_string(range.max), "whole range");
}

}  // namespace

void boundNumericFlags(CLI::App& app) {
  for (CLI::App* command : app.get_subcommands({})) {
    for (const WholeFlagRange& range : kWholeFlagRanges) {
      if (*range.command != '\0' && command->get_name() != range.command) continue;
      for (CLI::Option* option : command->get_options()) {
        if (option->check_lname(std::string(range.flag).substr(2))) option->check(wholeRange(range));
      }
    }
  }
}

}  // namespace stagecut
