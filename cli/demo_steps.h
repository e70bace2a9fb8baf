#pragma once

// The steps of `stagecut demo`, each a function over library calls, so the command reads as
// the tour it is.

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cli/progress_bar.h"
#include "core/partition.h"
#include "core/profile.h"
#include "profiler/profile_request.h"
#include "schedule/simulator.h"
#include "validation/validation_report.h"

namespace stagecut {

/// What the demo runs: the model, the pipeline shapes and where its files go.
struct DemoPlan {
  ProfileRequest request;
  std::string model_label;
  bool quick = false;  ///< the tiny model: its figures test the commands, they measure nothing
  /// Compared and simulated. 3, not 4: the demo model's head + loss is one unit every framework
  /// keeps on the last stage, and at 4 stages it alone sets the bottleneck of the best split a
  /// framework can run, which then ties the params split.
  int stages = 3;
  int validate_stages = 2;      ///< run for real (one rank per core here)
  int microbatches = 9;         ///< a multiple of both stage counts, for interleaved 1F1B
  int validate_steps = 3;
  std::string output_dir;
  std::string profilePath() const { return output_dir + "/profile.json"; }
  /// Every file the demo writes into output_dir (the steps name them), checked before it starts.
  std::vector<std::string> outputFiles() const {
    std::vector<std::string> files;
    for (const char* name : {"profile.json", "partition.json", "partition-compute-2.json", "partition-params-2.json",
                             "validation-compute.json", "validation-params.json", "trace-compute.json",
                             "trace-params.json", "report.html", "profile-calibrated.json"}) {
      files.push_back(output_dir + "/" + name);
    }
    return files;
  }
};

/// The default demo (the gpt-demo preset) or, with `quick`, a tiny model with few repeats.
DemoPlan demoPlan(bool quick, const std::string& output_dir);

/// The splits of the same profile for plan.stages stages: uniform, params and compute (one
/// every framework stagecut prints can run), and the free optimum where it differs.
struct DemoComparison {
  Partition uniform;
  Partition params;
  Partition compute;
  std::optional<Partition> free;
  std::string megatron_layout;  ///< the compute split's, "(none)" when Megatron's does not apply
};
DemoComparison compareSplits(const Profile& profile, const DemoPlan& plan);
void printComparison(std::ostream& out, const DemoComparison& comparison);

/// Every schedule simulated on the compute split.
struct DemoSimulations {
  std::vector<Schedule> schedules;
  std::vector<SimulationResult> results;
};
DemoSimulations simulateSchedules(const Profile& profile, const Partition& compute, const DemoPlan& plan);
void printSimulations(std::ostream& out, const DemoSimulations& simulations);

/// The compute and the params split for plan.validate_stages ranks, each run by `stagecut
/// validate` (the stagecut.validation/1 documents).
struct DemoValidations {
  Partition compute;
  Partition params;
  ValidationReport compute_run;
  ValidationReport params_run;
};
DemoValidations validateSplits(const Profile& profile, const DemoPlan& plan, ProgressBar& bar);
void printValidations(std::ostream& out, const DemoValidations& validations);
/// "1.23x (predicted 1.25x)".
std::string speedupText(const DemoValidations& validations);

void printFrameworkOutputs(std::ostream& out, const Profile& profile, const Partition& partition);

/// The profile calibrated on both runs (`stagecut calibrate`), written next to the profile as
/// profile-calibrated.json, and the line that ends the demo: both splits' steps as the
/// calibrated profile predicts them. A run validate did not trust is not fitted on: the line
/// says so instead.
std::string calibratedPredictionText(const Profile& profile, const DemoValidations& validations,
                                     const DemoPlan& plan);

/// Writes report.html and its files into plan.output_dir; returns the report's path.
std::string writeDemoReport(const Profile& profile, const DemoComparison& comparison,
                            const DemoSimulations& simulations, const DemoValidations& validations,
                            const DemoPlan& plan, const std::string& command_line);

}  // namespace stagecut
