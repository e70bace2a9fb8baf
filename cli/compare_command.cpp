#include <iostream>

#include "cli/commands.h"
#include "cli/partition_flags.h"
#include "cli/partition_report.h"
#include "cli/text_table.h"
#include "core/json_document.h"
#include "core/partition_json.h"
#include "core/profile_json.h"
#include "core/units.h"
#include "partitioner/framework_formats.h"
#include "partitioner/partition_summary.h"
#include "partitioner/profile_partitioner.h"
#include "partitioner/schedule_choices.h"
#include "partitioner/split_rules.h"

namespace stagecut {

namespace {

void printComparison(std::ostream& out, const std::vector<Partition>& splits,
                     const PartitionOptions& options) {
  const Partition& optimum = chosenSplit(splits);
  TextTable table;
  table.addColumn("", TextTable::Align::kLeft);
  for (const Partition& split : splits) table.addColumn(split.method, TextTable::Align::kRight);
  auto row = [&](const std::string& label, auto cell) {
    std::vector<std::string> cells{label};
    for (const Partition& split : splits) cells.push_back(cell(split));
    table.addRow(cells);
  };
  row("layers per stage", [](const Partition& p) { return joinNumbers(p.layersPerStage()); });
  for (int s = 0; s < options.placement.ranks; ++s) {
    row("stage " + std::to_string(s) + " ms", [s](const Partition& p) { return formatMs(p.stages[s].cost_ms); });
  }
  for (int s = 0; s < options.placement.ranks; ++s) {
    row("stage " + std::to_string(s) + " params", [s](const Partition& p) { return formatCount(p.stages[s].params); });
  }
  for (int s = 0; s < options.placement.ranks; ++s) {
    row("stage " + std::to_string(s) + " memory", [s](const Partition& p) { return formatBytes(p.stages[s].memory_bytes); });
  }
  row("bottleneck ms", [](const Partition& p) { return formatMs(p.bottleneck_ms); });
  row("lower bound ms", [](const Partition& p) { return formatMs(p.lower_bound_ms); });
  row("predicted step ms", [](const Partition& p) { return formatMs(p.predicted_step_ms); });
  row("predicted bubble", [](const Partition& p) { return formatPercent(p.predicted_bubble); });
  row("bottleneck vs compute", [&](const Partition& p) {
    return formatSignedPercent(p.bottleneck_ms / optimum.bottleneck_ms - 1.0);
  });
  row("step vs compute", [&](const Partition& p) {
    return formatSignedPercent(p.predicted_step_ms / optimum.predicted_step_ms - 1.0);
  });
  table.print(out, "  ");
}

// Each schedule's best split on the same profile and pipeline: the N-stage ones against the
// chunked ones, each chunked into its own best N x v chunks.
void printScheduleChoices(std::ostream& out, const std::vector<ScheduleChoice>& choices) {
  TextTable table;
  for (const char* column : {"schedule", "v", "slowest rank ms", "step ms", "bubble", "peak memory", "step vs 1f1b",
                             "optimal"}) {
    table.addColumn(column, std::string(column) == "schedule" ? TextTable::Align::kLeft : TextTable::Align::kRight);
  }
  const ScheduleChoice* baseline = choices.front().split ? &choices.front() : nullptr;
  std::vector<std::string> left_out;
  for (const ScheduleChoice& choice : choices) {
    const std::string name = scheduleName(choice.schedule);
    if (!choice.split) {
      left_out.push_back(name + (choice.placement.chunked() ? " (v = " + std::to_string(choice.placement.chunks_per_rank) + ")" : "") + ": " +
                         choice.left_out);
      continue;
    }
    const Partition& split = *choice.split;
    table.addRow({name, std::to_string(choice.placement.chunks_per_rank), formatMs(split.bottleneck_ms), formatMs(choice.step_ms),
                  formatPercent(choice.bubble), formatBytes(static_cast<std::uint64_t>(choice.peak_bytes)),
                  baseline ? formatSignedPercent(choice.step_ms / baseline->step_ms - 1.0) : "-",
                  optimalityText(split, choice.exact)});
  }
  out << "\n  Each schedule with its own best split (the chunked ones cut into N x v chunks; partition\n"
         "  --schedule S [--chunks v] prints it), the step and bubble simulated, the fullest rank's memory:\n\n";
  table.print(out, "  ");
  for (const std::string& line : left_out) out << "  left out: " << line << "\n";
}

}  // namespace

void addCompareCommand(CLI::App& app) {
  auto* command = app.add_subcommand(
      "compare", "Compare the exact split with the uniform and parameter-balanced baselines");
  auto flags = std::make_shared<PartitionFlags>();
  addPartitionFlags(command, *flags);
  addSplitFlag(command, *flags);
  command->callback([flags] {
    const std::string& path = flags->profile_path;
    std::string tensor_parallel_note;
    const Profile profile =
        readPricedProfile(path, flags->microbatch_size, flags->tp_bandwidth, flags->tp_latency, &tensor_parallel_note);
    std::vector<int> yours;
    const PartitionOptions options = resolvePartitionFlags(*flags, profile, &yours);
    std::vector<Partition> splits = partitionForComparison(profile, options, path);
    if (!yours.empty()) {
      splits.push_back(describeSplit(profile, options, buildCostModel(profile, options, path), yours, "yours"));
    }
    const bool extras = options.recompute.mode != RecomputePolicy::Mode::kNone || options.data_parallel > 1;
    const std::vector<ScheduleChoice> choices = bestSplitPerSchedule(profile, options, path);
    ComparisonDocument comparison;
    comparison.profile_fingerprint = readProfileFingerprint(path);
    for (const Partition& split : splits) {
      comparison.splits.push_back({split, frameworkOutputs(profile, split.layersPerStage())});
    }
    comparison.schedules = scheduleComparisons(profile, choices);
    const nlohmann::json document = comparisonToJson(comparison);
    const std::vector<StageRecompute> optimum_extras =
        extras ? stageRecompute(profile, options, chosenSplit(splits), path) : std::vector<StageRecompute>{};
    const std::optional<OutputPath> output = flags->output();
    if (output) writeOutputFile(*output, toJsonText(document));
    if (flags->json) {
      std::cout << toJsonText(document);
      return;
    }
    std::cout << path << ": " << profile.layerCount() << " layers, " << assumptionsNote(*flags, options) << "\n";
    std::cout << communicationNote(*flags) << "\n";
    if (!tensor_parallel_note.empty()) std::cout << tensor_parallel_note << "\n";
    std::cout << "uniform: equal layer counts, the first stages take the remainder (DeepSpeed's "
                 "partition_method=\"uniform\"); params: DeepSpeed's partition_method=\"parameters\" (both "
                 "over the layers before the loss, which joins the last stage); "
              << (options.rules == SplitRuleSet::kAny
                      ? "free: stagecut's exact optimum over any split (stagecut validate runs it)"
                      : "compute: stagecut's exact optimum among the splits every framework stagecut prints can "
                        "run; free: the optimum over any split, where that is better (stagecut validate runs it)")
              << (yours.empty() ? "" : "; yours: --split as given") << "\n\n";
    printComparison(std::cout, splits, options);
    if (!yours.empty()) {
      const std::string broken = ruleViolation(frameworkRules(profile), profile, yours);
      if (!broken.empty()) std::cout << "\n  yours: " << broken << "\n";
    }
    if (extras) {
      std::cout << "\n  The compute split, per stage:\n\n";
      printRecomputeTable(std::cout, optimum_extras, options);
    }
    printScheduleChoices(std::cout, choices);
    if (output) std::cout << "\nwrote " << output->path << "\n";
  });
}

}  // namespace stagecut
