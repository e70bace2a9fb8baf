#pragma once

#include <CLI/CLI.hpp>

namespace stagecut {

/// Attaches stagecut's one table of numeric flag ranges to every command of `app` that has a
/// flag the table names (every numeric flag of every command but the zoo's sizes, which profile
/// bounds in its own table, and --threads, bounded by the cores), so a value outside its range,
/// or not a number, is refused while the command line is parsed, before any work: one line
/// naming the flag, the value and the range, exit 2. A flag whose 0 means "not given"
/// (--microbatch-size, --global-batch, --bytes-per-param) is in the table, so an explicit 0 is
/// refused rather than read as absent. Checks that need another flag's value (--max-repeats
/// against --min-repeats, --stages against the layers) stay with their command.
void boundNumericFlags(CLI::App& app);

}  // namespace stagecut
