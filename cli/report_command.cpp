#include <iostream>

#include "cli/commands.h"
#include "cli/partition_flags.h"
#include "core/error.h"
#include "core/json_document.h"
#include "core/output_path.h"
#include "core/partition_json.h"
#include "core/profile_json.h"
#include "core/units.h"
#include "partitioner/partition_options.h"
#include "partitioner/profile_partitioner.h"
#include "report/report_html.h"
#include "report/report_inputs.h"
#include "validation/validation_json.h"
#include "schedule/generators.h"

namespace stagecut {

namespace {

struct ReportFlags {
  PartitionFlags partition;  ///< profile, --stages, --microbatches, --memory-cap, ... as `compare`
  std::string comparison_path;
  std::vector<std::string> validation_paths;
  std::string schedules = "all";
  std::string output_path;

  /// -o, with every file the report reads as an input it must not be.
  OutputPath output() const {
    std::vector<InputFile> inputs = {{"the input profile", partition.profile_path},
                                     {"the --comparison file", comparison_path}};
    for (const std::string& path : validation_paths) inputs.push_back({"the --validation file", path});
    return OutputPath(output_path, "-o", inputs);
  }
};

ReportInputs buildInputs(const ReportFlags& flags, CLI::App* command) {
  const std::string& path = flags.partition.profile_path;
  const Profile profile =
      readPricedProfile(path, 0, flags.partition.tp_bandwidth, flags.partition.tp_latency, nullptr);
  const bool stages_given = command->count("--stages") > 0;
  ReportScheduleOptions schedules;
  const std::vector<ScheduleKind> kinds = parseScheduleList(flags.schedules);
  const std::optional<int> chunks =
      command->count("--chunks") > 0 ? std::optional(flags.partition.chunks_flag) : std::nullopt;

  if (flags.comparison_path.empty()) {
    if (!stages_given) {
      throw Error(path + ": the report needs splits to compare; add --stages N (and --microbatches M), "
                  "or --comparison FILE written by 'stagecut compare " + path + " --stages N -o FILE'");
    }
    PartitionOptions options = resolvePartitionFlags(flags.partition, profile);
    if (chunks && choosesChunks(options.schedule)) {
      options.placement = schedulePlacement(options.schedule, options.placement.ranks, chunks);
    }
    schedules.runs = placeSchedules(kinds, options.placement.ranks, chunks);
    return buildReportInputs(profile, options, path, schedules);
  }
  if (stages_given) {
    throw Error("--stages " + std::to_string(flags.partition.stages) + ": " + flags.comparison_path +
                " already holds the splits; drop --stages, or drop --comparison to split again");
  }
  for (const char* flag : {"--schedule", "--stage-speed", "--optimizer", "--bytes-per-param", "--recompute",
                           "--data-parallel", "--tp-bandwidth", "--tp-latency"}) {
    if (command->count(flag) > 0) {
      throw Error(std::string(flag) + ": shapes new splits, but " + flags.comparison_path +
                  " already holds them; drop " + flag + ", or drop --comparison to split again");
    }
  }
  ComparisonDocument comparison =
      comparisonFromJson(parseJsonDocument(readTextFile(flags.comparison_path), flags.comparison_path), flags.comparison_path);
  requireMadeFromProfile(comparison.profile_fingerprint, readProfileFingerprint(path), flags.comparison_path, path,
                         "stagecut compare " + path + " --stages N -o FILE");
  std::vector<Partition> splits;
  for (PartitionDocument& split : comparison.splits) splits.push_back(std::move(split.partition));
  if (!splits.empty()) {
    schedules.runs = placeSchedules(kinds, chosenSplit(splits).rankPlacement().ranks, chunks);
  }
  if (!flags.partition.bandwidth.empty()) {
    schedules.link.bandwidth_bytes_per_s = parseBandwidthBytesPerS(flags.partition.bandwidth, "--bandwidth");
  }
  if (!flags.partition.latency.empty()) {
    schedules.link.latency_ms = parseDurationMs(flags.partition.latency, "--latency");
  }
  int microbatches = 0;
  if (command->count("--microbatches") > 0) {
    microbatches = flags.partition.microbatches;
    if (microbatches < 1) {
      throw Error("--microbatches " + std::to_string(microbatches) + ": a step needs at least 1 microbatch");
    }
  }
  ReportInputs inputs = reportInputsFromSplits(profile, path, splits, flags.comparison_path,
                                               microbatches, schedules);
  // compare chose each schedule's own split for its M: drawn at another M they would mislead.
  const int compared_microbatches = impliedMicrobatches(inputs.chosen);
  if (compared_microbatches == inputs.microbatches) {
    inputs.schedule_choices = std::move(comparison.schedules);
  } else if (!comparison.schedules.empty()) {
    inputs.notes.push_back("Each schedule's own best split is not shown: " + flags.comparison_path +
                           " chose them for " +
                           (compared_microbatches > 0 ? std::to_string(compared_microbatches) : std::string("another")) +
                           " microbatches, not the " + std::to_string(inputs.microbatches) +
                           " drawn here; run 'stagecut compare' with --microbatches " +
                           std::to_string(inputs.microbatches));
  }
  if (!flags.partition.memory_cap.empty()) {
    inputs.memory_cap_bytes =
        parseMemoryCaps(flags.partition.memory_cap, static_cast<int>(inputs.chosen.stages.size()));
  }
  return inputs;
}

}  // namespace

void addReportCommand(CLI::App& app, const std::string& command_line) {
  auto* command = app.add_subcommand(
      "report", "Write a self-contained HTML report: per-layer chart, splits compared, schedule "
                "Gantt charts, predicted vs measured, memory, provenance");
  auto flags = std::make_shared<ReportFlags>();
  PartitionFlags& partition = flags->partition;
  command->add_option("profile", partition.profile_path, "A stagecut.profile/1 file")->required();
  command->add_option("--comparison,-c", flags->comparison_path,
                      "Splits written by 'stagecut compare ... -o FILE' (instead of --stages)");
  command->add_option("--stages,-n", partition.stages, "Pipeline stages N: split the profile here");
  partition.microbatches_option = command->add_option(
      "--microbatches,-m", partition.microbatches, "Microbatches per step M (default: 4 x stages)");
  command->add_option("--validation", flags->validation_paths,
                      "A 'stagecut validate --json' document; repeat for several runs")
      ->take_all();
  command->add_option("--memory-cap", partition.memory_cap,
                      "Memory per stage, e.g. 80GiB, or one per stage; drawn on the memory chart");
  command->add_option("--schedules", flags->schedules,
                      "Schedules to simulate: " + scheduleNameList() + ", or all")
      ->capture_default_str();
  // Not the partitioner's --chunks (chunks_option stays unset): the report's --schedule sets the
  // memory term of its N-stage splits, and --chunks the v of the interleaved-1f1b it draws.
  command->add_option("--chunks,-v", partition.chunks_flag, "Model chunks per rank for interleaved-1f1b")
      ->capture_default_str();
  command->add_option("--schedule", partition.schedule,
                      scheduleNameList() + ": how many microbatches' activations each stage keeps")
      ->capture_default_str();
  command->add_option("--bandwidth", partition.bandwidth, "Link bandwidth between stages, e.g. 25GB/s");
  command->add_option("--latency", partition.latency, "Latency per message, e.g. 10us");
  command->add_option("--stage-speed", partition.stage_speed, "Relative device speed per stage, e.g. 1,1,0.5,1");
  command->add_option("--optimizer", partition.optimizer,
                      "none, sgd, sgd-momentum, adam or adam-mixed: optimizer state per parameter and its step's temporaries")
      ->capture_default_str();
  command->add_option("--bytes-per-param", partition.bytes_per_param,
                      "Weights + gradients + optimizer state per parameter, bytes");
  command->add_flag("--recompute", partition.recompute, "Activation recomputation");
  command->add_option("--data-parallel,-d", partition.data_parallel,
                      "Replicas D of every stage: splits charge and schedules draw the gradient all-reduce")
      ->capture_default_str();
  command->add_option("--dp-bandwidth", partition.dp_bandwidth, "Link bandwidth between replicas, e.g. 100GB/s")
      ->capture_default_str();
  command->add_option("--dp-latency", partition.dp_latency, "Latency per all-reduce ring step, e.g. 10us")
      ->capture_default_str();
  addTensorParallelLinkFlags(command, partition.tp_bandwidth, partition.tp_latency);
  command->add_option("-o,--output", flags->output_path, "The HTML file to write")->required();

  command->callback([flags, command, command_line] {
    const OutputPath output = flags->output();
    checkOutputPath(output);
    ReportInputs inputs = buildInputs(*flags, command);
    const std::string& profile_path = flags->partition.profile_path;
    const std::string profile_fingerprint = readProfileFingerprint(profile_path);
    for (const std::string& path : flags->validation_paths) {
      ValidationReport validation = validationFromJson(parseJsonDocument(readTextFile(path), path), path);
      requireMadeFromProfile(validation.profile_fingerprint, profile_fingerprint, path, profile_path,
                             "stagecut validate " + profile_path + " --partition PART --json > FILE");
      inputs.validations.push_back({path, std::move(validation)});
    }
    inputs.provenance.stagecut_version = versionText();
    inputs.provenance.command_line = command_line;
    inputs.provenance.date = currentUtcDate();
    writeOutputFile(output, renderReportHtml(inputs));
    std::cout << "wrote " << flags->output_path << " (" << inputs.splits.size() << " splits, "
              << inputs.schedules.size() << " schedules, " << inputs.validations.size()
              << " validation run" << (inputs.validations.size() == 1 ? "" : "s") << ")\n";
  });
}

}  // namespace stagecut
