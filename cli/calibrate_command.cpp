#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>

#include "calibration/calibration_fit.h"
#include "cli/commands.h"
#include "cli/text_table.h"
#include "core/error.h"
#include "core/json_document.h"
#include "core/output_path.h"
#include "core/profile_json.h"
#include "core/units.h"
#include "validation/validation_json.h"

namespace stagecut {

namespace {

struct CalibrateOptions {
  std::string profile_path;
  std::vector<std::string> fitted_paths;
  std::vector<std::string> held_out_paths;
  double prior_weight = 0.01;
  bool allow_untrusted = false;
  std::string output_path;
};

std::string predictedCell(double predicted_ms, double measured_ms) {
  const std::string error = predicted_ms > 0 ? formatSignedPercent(measured_ms / predicted_ms - 1.0) : "-";
  return formatMs(predicted_ms) + " (" + error + ")";
}

// A run is named in messages by its file; `made_from` are the fingerprints it may name.
CalibrationInput readRun(const std::string& path, bool fitted, const std::vector<std::string>& made_from,
                         const CalibrateOptions& options) {
  CalibrationInput run;
  run.source = path;
  run.fitted = fitted;
  run.report = validationFromJson(parseJsonDocument(readTextFile(path), path), path);
  const std::string& recorded = run.report.profile_fingerprint;
  if (!recorded.empty() && std::find(made_from.begin(), made_from.end(), recorded) == made_from.end()) {
    throw Error(path + ": was run on another profile than " + options.profile_path +
                " (its profile_fingerprint differs); give the profile validate ran with, or the one calibrated from it");
  }
  if (fitted && run.report.environment && !run.report.environment->trusted() && !options.allow_untrusted) {
    const auto& warnings = run.report.environment->warnings;
    throw Error(path + ": validate marked this run not trusted" +
                (warnings.empty() ? std::string() : " (" + warnings.front() + ")") +
                "; a fit on it learns the machine's load, not the model. Run it again on a quiet machine, "
                "or pass --allow-untrusted");
  }
  return run;
}

// The op of validate's timeline a profile field's factor was fitted on.
std::string opLabel(const std::string& field) {
  if (field == "forward_ms") return "F (" + field + ")";
  if (field == "backward_weight_ms") return "W (" + field + ")";
  return "B (" + field + ")";
}

// One line per factor the fit's box holds: what it means and what to do.
void printBoundNotes(const ProfileCalibration& calibration) {
  bool any = false;
  for (const auto& factor : calibration.factors) {
    if (!factor.at_bound) continue;
    any = true;
    const bool low = factor.factor <= kMinFactor;
    char bound[32];
    std::snprintf(bound, sizeof bound, "%g", factor.factor);
    std::cout << "note: " << factor.kind << "'s " << opLabel(factor.op) << " factor is held at " << bound
              << ", the fit's " << (low ? "lower" : "upper") << " bound (factors stay in " << kMinFactor << "-"
              << kMaxFactor << "): its " << factor.observations << " ops alone put it " << (low ? "lower" : "higher")
              << ". Either the runs are not of this machine (see validate's environment line) or the kind is too "
              << "small a part of its ops to be told from noise. Fit on more runs or splits, or raise --prior-weight to "
              << "keep it nearer 1\n";
  }
  if (any) std::cout << "\n";
}

void printCalibration(const ProfileCalibration& calibration) {
  TextTable factors;
  factors.addColumn("kind", TextTable::Align::kLeft);
  factors.addColumn("op", TextTable::Align::kLeft);
  factors.addColumn("factor", TextTable::Align::kRight);
  factors.addColumn("fitted on", TextTable::Align::kRight);
  for (const auto& factor : calibration.factors) {
    char value[32];
    std::snprintf(value, sizeof value, "%.3f", factor.factor);
    std::string fitted_on = factor.observations > 0 ? std::to_string(factor.observations) + " ops" : "carried over";
    if (factor.at_bound) fitted_on += ", at bound";
    factors.addRow({factor.kind, factor.op, value, fitted_on});
  }
  factors.print(std::cout, "  ");
  std::cout << "\n";
  printBoundNotes(calibration);
  TextTable runs;
  runs.addColumn("run", TextTable::Align::kLeft);
  runs.addColumn("", TextTable::Align::kLeft);
  runs.addColumn("schedule", TextTable::Align::kLeft);
  runs.addColumn("split", TextTable::Align::kLeft);
  runs.addColumn("measured ms", TextTable::Align::kRight);
  runs.addColumn("predicted before", TextTable::Align::kRight);
  runs.addColumn("after", TextTable::Align::kRight);
  for (const auto& run : calibration.runs) {
    runs.addRow({run.source, run.fitted ? "fitted" : "held out", run.schedule, joinNumbers(run.layers_per_stage),
                 formatMs(run.measured_step_ms), predictedCell(run.predicted_before_ms, run.measured_step_ms),
                 predictedCell(run.predicted_after_ms, run.measured_step_ms)});
  }
  runs.print(std::cout, "  ");
}

}  // namespace

void addCalibrateCommand(CLI::App& app) {
  auto* command = app.add_subcommand(
      "calibrate", "Fit a profile's times to validate's measured ops and write the calibrated profile");
  auto options = std::make_shared<CalibrateOptions>();
  command->add_option("profile", options->profile_path, "The profile validate ran with")->required();
  command->add_option("--validation", options->fitted_paths,
                      "validate --json outputs to fit on (one or more, of any split and schedule)")
      ->required()
      ->expected(1, -1);
  command->add_option("--check", options->held_out_paths,
                      "validate --json outputs to predict only, before and after: a held-out test")
      ->expected(1, -1);
  char box[64];
  std::snprintf(box, sizeof box, "%g-%g", kMinFactor, kMaxFactor);
  command->add_option("--prior-weight", options->prior_weight,
                      "How strongly each factor stays near 1, beside each op's squared relative error "
                      "(default 0.01); whatever the weight, every factor is kept within " + std::string(box) +
                          ", and one held at a bound is named in a note");
  command->add_flag("--allow-untrusted", options->allow_untrusted,
                    "Fit on runs validate marked not trusted (a loaded or drifting machine)");
  command->add_option("-o,--output", options->output_path, "The calibrated profile to write")->required();
  command->callback([options] {
    if (!(options->prior_weight > 0) || options->prior_weight > 1e6) {
      throw Error("--prior-weight " + std::to_string(options->prior_weight) +
                  ": must be above 0 (and at most 1e6); 0.01 lets a factor move freely, 100 keeps it at 1");
    }
    std::vector<InputFile> inputs{{"the input profile", options->profile_path}};
    for (const auto& path : options->fitted_paths) inputs.push_back({"a --validation file", path});
    for (const auto& path : options->held_out_paths) inputs.push_back({"a --check file", path});
    const OutputPath output(options->output_path, "-o", inputs);
    checkOutputPath(output);

    const Profile profile = readProfileFile(options->profile_path);
    const std::string fingerprint = readProfileFingerprint(options->profile_path);
    const std::string uncalibrated_fingerprint =
        profile.calibration && !profile.calibration->uncalibrated_fingerprint.empty()
            ? profile.calibration->uncalibrated_fingerprint
            : fingerprint;
    const std::vector<std::string> made_from{fingerprint, uncalibrated_fingerprint};
    std::vector<CalibrationInput> runs;
    for (const auto& path : options->fitted_paths) runs.push_back(readRun(path, true, made_from, *options));
    for (const auto& path : options->held_out_paths) runs.push_back(readRun(path, false, made_from, *options));
    CalibrationOptions fit;
    fit.prior_weight = options->prior_weight;
    const Profile calibrated = calibrateProfile(profile, uncalibrated_fingerprint, runs, fit);
    // Through the reader once more: the file written is one every stagecut command accepts.
    profileFromJson(profileToJson(calibrated), options->output_path);
    writeProfileFile(output, calibrated);

    std::cout << options->profile_path << ": " << profile.layerCount() << " layers"
              << (profile.calibration ? ", calibrated before: refitted from its uncalibrated times" : "")
              << "; factors per layer kind and op (the times validate measured / the profile's)\n\n";
    printCalibration(*calibrated.calibration);
    std::cout << "\nwrote " << options->output_path
              << " (partition, compare, simulate, plan and validate take it as any profile)\n";
  });
}

}  // namespace stagecut
