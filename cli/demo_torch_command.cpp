// `stagecut demo`: the end-to-end tour on the built-in demo model, what `make demo` runs.
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "cli/commands.h"
#include "cli/torch_commands.h"
#include "cli/demo_steps.h"
#include "cli/profile_display.h"
#include "cli/progress_bar.h"
#include "core/error.h"
#include "core/output_path.h"
#include "core/profile_json.h"

namespace stagecut {

namespace {

struct DemoOptions {
  std::string output_dir = "stagecut-report";
  bool quick = false;
};

void heading(const std::string& text) { std::cout << "\n== " << text << "\n\n"; }

}  // namespace

void addDemoCommand(CLI::App& app, const std::string& command_line) {
  auto* command = app.add_subcommand("demo", torchCommandDescription("demo"));
  auto options = std::make_shared<DemoOptions>();
  command->add_option("--output-dir", options->output_dir, "Where the report and its files go")->capture_default_str();
  command->add_flag("--quick", options->quick, "A tiny model and few repeats (seconds, for a smoke test)");
  command->callback([options, command_line] {
    if (options->output_dir.empty()) throw Error("--output-dir is empty; name the folder the report goes to");
    struct stat existing {};
    if (::stat(options->output_dir.c_str(), &existing) == 0 && !S_ISDIR(existing.st_mode)) {
      throw Error("--output-dir " + options->output_dir +
                  ": is not a folder; name a folder for the report (it is made if missing)");
    }
    if (::mkdir(options->output_dir.c_str(), 0777) != 0 && errno != EEXIST) {
      throw Error("--output-dir " + options->output_dir + ": cannot create the folder (" + std::strerror(errno) + ")");
    }
    DemoPlan plan = demoPlan(options->quick, options->output_dir);
    // A file of an earlier run that cannot be replaced fails here, not after the profile.
    for (const std::string& path : plan.outputFiles()) checkOutputPath(path);
    std::cout << "stagecut demo: where should the stage boundaries of " << plan.model_label
              << " go, and how fast will its pipeline run?\n";

    heading("1/5  profile every layer (" + plan.model_label + ", microbatch " +
            std::to_string(plan.request.measure.microbatch_size) + ", 1 thread)");
    ProgressBar bar;
    plan.request.measure.on_progress = profileProgressReporter(bar);
    Profile profile = runProfile(plan.request);
    bar.finish();
    profile.run.extra["command"] = command_line;
    writeProfileFile(plan.profilePath(), profile);
    printProfileTable(std::cout, profile);

    heading("2/5  partition for " + std::to_string(plan.stages) + " stages: equal layers vs equal params vs equal compute");
    const DemoComparison comparison = compareSplits(profile, plan);
    printComparison(std::cout, comparison);

    heading("3/5  simulate the schedules on the compute split");
    const DemoSimulations simulations = simulateSchedules(profile, comparison.compute, plan);
    printSimulations(std::cout, simulations);

    heading("4/5  validate for real on 2 ranks: the compute split and the params split");
    const DemoValidations validations = validateSplits(profile, plan, bar);
    printValidations(std::cout, validations);

    heading("5/5  the split in every framework's words");
    printFrameworkOutputs(std::cout, profile, comparison.compute);
    const std::string report_path = writeDemoReport(profile, comparison, simulations, validations, plan, command_line);

    std::cout << "\nreport: " << report_path << "\n";
    std::cout << "megatron: " << comparison.megatron_layout << "\n";
    std::cout << "measured speed-up of equal-compute over equal-params on 2 ranks: "
              << speedupText(validations) << "\n";
    if (plan.quick) {
      // Measured on 2026-12-03: 0.84-1.01x against 1.19x predicted, its ops 10-60% over their profile.
      std::cout << "  (--quick: one timing per layer and one step of ops of a millisecond or two, which run "
                   "well over their profile; a smoke test of the commands, not a measurement: stagecut demo "
                   "measures)\n";
    }
    std::cout << calibratedPredictionText(profile, validations, plan) << "\n";
  });
}

}  // namespace stagecut
