#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace stagecut {

// Each subcommand registers its options and its callback on the root app. Callbacks write
// their results to stdout and report problems by throwing stagecut::Error; main() turns that
// into one line on stderr and the exit code.
void addBubbleCommand(CLI::App& app);
void addInspectCommand(CLI::App& app);
void addPartitionCommand(CLI::App& app);
void addCompareCommand(CLI::App& app);
void addImportCommand(CLI::App& app);
/// `stagecut calibrate`: a profile's times fitted to validate's measured ops.
void addCalibrateCommand(CLI::App& app);
void addSimulateCommand(CLI::App& app);
/// `stagecut plan`: microbatch size and count for a global batch.
void addPlanCommand(CLI::App& app);
/// `stagecut report`; `command_line` is recorded in the report's provenance.
void addReportCommand(CLI::App& app, const std::string& command_line);
/// `stagecut profile` (LibTorch builds only); `command_line` is recorded in the profile.
void addProfileCommand(CLI::App& app, const std::string& command_line);
/// `stagecut demo` (LibTorch builds only): the end-to-end tour.
void addDemoCommand(CLI::App& app, const std::string& command_line);
/// `stagecut validate` (LibTorch builds only); `arguments` restart this command in each rank.
void addValidateCommand(CLI::App& app, const std::vector<std::string>& arguments);

/// The version line: stagecut's version, build type, LibTorch and CUDA support.
std::string versionText();

}  // namespace stagecut
