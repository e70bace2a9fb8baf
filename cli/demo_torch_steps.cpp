#include "cli/demo_steps.h"

#include <unistd.h>

#include <cstdio>

#include "calibration/calibration_fit.h"
#include "cli/commands.h"
#include "cli/self_executable.h"
#include "cli/text_table.h"
#include "core/error.h"
#include "core/json_document.h"
#include "core/output_path.h"
#include "core/partition_json.h"
#include "core/profile_json.h"
#include "core/units.h"
#include "partitioner/framework_formats.h"
#include "partitioner/partition_options.h"
#include "partitioner/profile_partitioner.h"
#include "prediction/pipeline_prediction.h"
#include "report/report_html.h"
#include "report/report_inputs.h"
#include "schedule/ascii_gantt.h"
#include "schedule/generators.h"
#include "schedule/profile_costs.h"
#include "validation/validation_json.h"

namespace stagecut {

namespace {

std::string layersText(const Partition& partition) { return joinNumbers(partition.layersPerStage()); }

std::string ratio(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2fx", value);
  return buffer;
}

std::string quoted(const std::string& text) { return "'" + text + "'"; }

// Runs `stagecut validate` as its own launcher (it starts one process per rank) and returns
// its stagecut.validation/1 document.
ValidationReport runValidate(const DemoPlan& plan, const std::string& partition_path, const std::string& name) {
  const std::string trace = plan.output_dir + "/trace-" + name + ".json";
  const std::string command = quoted(selfExecutablePath("demo")) + " validate " + quoted(plan.profilePath()) + " --partition " +
                              quoted(partition_path) + " --schedule 1f1b --microbatches " +
                              std::to_string(plan.microbatches) + " --steps " + std::to_string(plan.validate_steps) +
                              " --json --trace " + quoted(trace);
  std::FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) throw Error("cannot start stagecut validate", ErrorKind::kRuntime);
  std::string output;
  char buffer[4096];
  while (std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
  const int status = ::pclose(pipe);
  if (status != 0) {
    throw Error("the validation of the " + name + " split failed (see the rank's message above)", ErrorKind::kRuntime);
  }
  writeOutputFile(plan.output_dir + "/validation-" + name + ".json", output);
  return validationFromJson(parseJsonDocument(output, "stagecut validate"), "stagecut validate");
}

}  // namespace

DemoPlan demoPlan(bool quick, const std::string& output_dir) {
  DemoPlan plan;
  plan.output_dir = output_dir;
  ZooOptions& zoo = plan.request.zoo;
  zoo.family = "gpt";
  if (quick) {
    zoo.preset = "gpt-tiny";
    zoo.layers = 3;
    zoo.seq = 16;
    zoo.vocab = 1024;
    plan.request.measure.microbatch_size = 2;
    plan.request.measure.warmup_rounds = 0;
    plan.request.measure.min_repeats = 1;
    plan.request.measure.max_repeats = 1;
    plan.microbatches = 4;
    plan.validate_steps = 1;
  } else {
    zoo.preset = "gpt-demo";
    plan.request.measure.microbatch_size = 4;
  }
  plan.quick = quick;
  plan.model_label = zoo.preset + (quick ? " (quick)" : "");
  return plan;
}

DemoComparison compareSplits(const Profile& profile, const DemoPlan& plan) {
  PartitionOptions options;
  options.placement = Placement::loop(plan.stages, 1);
  options.microbatches = plan.microbatches;
  DemoComparison comparison;
  std::vector<Partition> splits = partitionForComparison(profile, options, plan.profilePath());
  comparison.uniform = std::move(splits[0]);
  comparison.params = std::move(splits[1]);
  comparison.compute = std::move(splits[2]);
  if (splits.size() > 3) comparison.free = std::move(splits[3]);
  const FrameworkOutputs outputs = frameworkOutputs(profile, comparison.compute.layersPerStage());
  const auto layout = outputs.find("megatron");
  comparison.megatron_layout = layout == outputs.end() ? "(none)" : layout->second;
  writePartitionFile(plan.output_dir + "/partition.json", comparison.compute, outputs);
  return comparison;
}

void printComparison(std::ostream& out, const DemoComparison& comparison) {
  TextTable table;
  for (const char* header : {"split", "layers per stage", "bottleneck ms", "predicted step ms", "bubble", "vs compute"}) {
    table.addColumn(header, std::string(header) == "split" || std::string(header) == "layers per stage"
                                ? TextTable::Align::kLeft
                                : TextTable::Align::kRight);
  }
  for (const Partition* partition : {&comparison.uniform, &comparison.params, &comparison.compute}) {
    table.addRow({partition->method, layersText(*partition), formatMs(partition->bottleneck_ms),
                  formatMs(partition->predicted_step_ms), formatPercent(partition->predicted_bubble),
                  formatSignedPercent(partition->predicted_step_ms / comparison.compute.predicted_step_ms - 1.0)});
  }
  table.print(out, "  ");
  out << "\n  (no communication cost modelled; 1f1b; lower bound on the bottleneck "
      << formatMs(comparison.compute.lower_bound_ms) << " ms)\n";
  out << "  compute is the best split every framework stagecut prints can run (Megatron, DeepSpeed, "
         "torchgpipe, fairscale, PiPPy, torchtitan: the head and the loss together on the last stage)\n";
  if (comparison.free) {
    out << "  free optimum (any split; stagecut validate runs it, the frameworks cannot): "
        << layersText(*comparison.free) << ", step "
        << formatSignedPercent(comparison.free->predicted_step_ms / comparison.compute.predicted_step_ms - 1.0) << "\n";
  } else {
    out << "  the free optimum over any split is the same split: the frameworks' rules cost nothing here\n";
  }
}

DemoSimulations simulateSchedules(const Profile& profile, const Partition& compute, const DemoPlan& plan) {
  DemoSimulations simulations;
  const int stages = static_cast<int>(compute.stages.size());
  for (ScheduleKind kind : allScheduleKinds()) {
    if (!microbatchCountProblem(kind, stages, plan.microbatches).empty()) continue;
    PredictionOptions options;
    options.schedule = kind;
    options.microbatches = plan.microbatches;
    // Interleaved 1F1B and the V on the N-stage split: each rank's stage divided into its chunks.
    options.placement = schedulePlacement(kind, stages);
    PipelinePrediction prediction = predictPipeline(profile, compute, options, plan.profilePath());
    simulations.results.push_back(std::move(prediction.simulated));
    simulations.schedules.push_back(std::move(prediction.schedule));
  }
  return simulations;
}

void printSimulations(std::ostream& out, const DemoSimulations& simulations) {
  TextTable table;
  table.addColumn("schedule", TextTable::Align::kLeft);
  table.addColumn("step ms", TextTable::Align::kRight);
  table.addColumn("bubble", TextTable::Align::kRight);
  table.addColumn("peak in flight per stage", TextTable::Align::kLeft);
  for (const auto& result : simulations.results) {
    std::string peaks;
    for (const auto& rank : result.ranks) peaks += (peaks.empty() ? "" : " ") + std::to_string(rank.peak_in_flight);
    table.addRow({result.schedule, formatMs(result.step_ms), formatPercent(result.bubble), peaks});
  }
  table.print(out, "  ");
  for (std::size_t i = 0; i < simulations.results.size(); ++i) {
    if (simulations.schedules[i].name != scheduleName(ScheduleKind::kOneFOneB)) continue;
    AsciiGanttOptions options;
    options.width_columns = 100;
    out << "\n1F1B on the compute split:\n"
        << renderAsciiGantt(simulations.schedules[i], simulations.results[i], options);
  }
}

DemoValidations validateSplits(const Profile& profile, const DemoPlan& plan, ProgressBar& bar) {
  PartitionOptions options;
  options.placement = Placement::loop(plan.validate_stages, 1);
  options.microbatches = plan.microbatches;
  DemoValidations validations;
  validations.compute = partitionProfile(profile, options, plan.profilePath(), SplitMethod::kCompute);
  validations.params = partitionProfile(profile, options, plan.profilePath(), SplitMethod::kParams);
  const std::string compute_path = plan.output_dir + "/partition-compute-2.json";
  const std::string params_path = plan.output_dir + "/partition-params-2.json";
  writePartitionFile(compute_path, validations.compute, frameworkOutputs(profile, validations.compute.layersPerStage()));
  writePartitionFile(params_path, validations.params, frameworkOutputs(profile, validations.params.layersPerStage()));
  bar.update(0.0, "running the compute split on 2 ranks");
  validations.compute_run = runValidate(plan, compute_path, "compute");
  bar.update(0.5, "running the params split on 2 ranks");
  validations.params_run = runValidate(plan, params_path, "params");
  bar.finish();
  return validations;
}

void printValidations(std::ostream& out, const DemoValidations& validations) {
  TextTable table;
  for (const char* header : {"split", "layers per stage", "predicted step ms", "measured step ms", "difference",
                             "measured bubble", "gradients"}) {
    table.addColumn(header, std::string(header) == "split" || std::string(header) == "layers per stage"
                                ? TextTable::Align::kLeft
                                : TextTable::Align::kRight);
  }
  const auto row = [&](const Partition& partition, const ValidationReport& run) {
    char difference[32];
    std::snprintf(difference, sizeof difference, "%.1e", run.grad_max_rel_diff);
    table.addRow({partition.method, layersText(partition), formatMs(run.predicted_step_ms),
                  formatMs(run.measured_step_median_ms), formatSignedPercent(run.error),
                  formatPercent(run.measured_bubble),
                  std::string(run.grad_pass ? "pass" : "fail") + " (" + difference + ")"});
  };
  row(validations.compute, validations.compute_run);
  row(validations.params, validations.params_run);
  table.print(out, "  ");
  out << "\n  speed-up of equal-compute over equal-params: " << speedupText(validations) << "\n";
  for (const ValidationReport* run : {&validations.compute_run, &validations.params_run}) {
    if (!run->environment) continue;
    for (const std::string& warning : run->environment->warnings) {
      out << "  WARNING (the " << (run == &validations.compute_run ? "compute" : "params")
          << " run): " << warning << "\n";
    }
  }
}

std::string speedupText(const DemoValidations& validations) {
  const double measured =
      validations.params_run.measured_step_median_ms / validations.compute_run.measured_step_median_ms;
  const double predicted = validations.params_run.predicted_step_ms / validations.compute_run.predicted_step_ms;
  return ratio(measured) + " measured (" + ratio(predicted) + " predicted)";
}

void printFrameworkOutputs(std::ostream& out, const Profile& profile, const Partition& partition) {
  for (const auto& [name, text] : frameworkOutputs(profile, partition.layersPerStage())) {
    // Multi-line formats (DeepSpeed's layer listing) stay indented under their name.
    std::string indented;
    for (char c : text) indented += c == '\n' ? std::string("\n    ") : std::string(1, c);
    out << "  " << name << ": " << indented << "\n";
  }
}

std::string calibratedPredictionText(const Profile& profile, const DemoValidations& validations,
                                     const DemoPlan& plan) {
  for (const ValidationReport* run : {&validations.compute_run, &validations.params_run}) {
    if (run->environment && !run->environment->trusted()) {
      return "not calibrated: validate did not trust the " +
             std::string(run == &validations.compute_run ? "compute" : "params") + " run (see its WARNING above)";
    }
  }
  const std::vector<CalibrationInput> runs = {{plan.output_dir + "/validation-compute.json", validations.compute_run, true},
                                              {plan.output_dir + "/validation-params.json", validations.params_run, true}};
  const Profile calibrated =
      calibrateProfile(profile, readProfileFingerprint(plan.profilePath()), runs, CalibrationOptions{});
  const std::string path = plan.output_dir + "/profile-calibrated.json";
  writeProfileFile(path, calibrated);
  const CalibrationRun& compute = calibrated.calibration->runs[0];
  const CalibrationRun& params = calibrated.calibration->runs[1];
  const auto step = [](const CalibrationRun& run) {
    return formatMs(run.predicted_after_ms) + " ms (measured " + formatMs(run.measured_step_ms) + ", " +
           formatSignedPercent(run.measured_step_ms / run.predicted_after_ms - 1.0) + ")";
  };
  return "calibrated on both runs (" + path + "): compute " + step(compute) + ", params " + step(params) + "; " +
         ratio(params.predicted_after_ms / compute.predicted_after_ms) + " predicted";
}

std::string writeDemoReport(const Profile& profile, const DemoComparison& comparison,
                            const DemoSimulations& simulations, const DemoValidations& validations,
                            const DemoPlan& plan, const std::string& command_line) {
  PartitionOptions options;
  options.placement = Placement::loop(plan.stages, 1);
  options.microbatches = plan.microbatches;
  ReportInputs inputs = buildReportInputs(profile, options, plan.profilePath());
  // The report re-derives the same splits and schedules from the profile; the demo printed
  // these, so they must agree.
  if (inputs.chosen.layersPerStage() != comparison.compute.layersPerStage() ||
      inputs.schedules.size() != simulations.results.size()) {
    throw Error("internal: the report's splits differ from the demo's", ErrorKind::kRuntime);
  }
  inputs.validations.push_back({plan.output_dir + "/validation-compute.json", validations.compute_run});
  inputs.validations.push_back({plan.output_dir + "/validation-params.json", validations.params_run});
  inputs.provenance.stagecut_version = versionText();
  inputs.provenance.command_line = command_line;
  inputs.provenance.date = currentUtcDate();
  const std::string path = plan.output_dir + "/report.html";
  writeOutputFile(path, renderReportHtml(inputs));
  return path;
}

}  // namespace stagecut
