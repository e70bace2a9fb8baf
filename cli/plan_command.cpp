// `stagecut plan`: choose the microbatch size and count for a fixed global batch.
#include <algorithm>
#include <iostream>

#include "cli/commands.h"
#include "cli/partition_flags.h"
#include "cli/plan_layout.h"
#include "cli/text_table.h"
#include "core/error.h"
#include "core/json_document.h"
#include "core/profile_json.h"
#include "core/units.h"
#include "planner/microbatch_plan.h"
#include "planner/plan_json.h"

namespace stagecut {

namespace {

struct PlanFlags {
  PartitionFlags partition;
  LayoutPlanFlags layout;  ///< --gpus: the whole parallel layout instead
  int global_batch = 0;
  double fit_tolerance = 0.1;
};

// Per stage (rank) when few enough to read, else the largest and its stage (rank).
std::string memoryCell(const PlanRow& row, const std::string& unit) {
  if (row.peak_memory_bytes.size() <= 4) {
    std::string text;
    for (std::uint64_t bytes : row.peak_memory_bytes) text += (text.empty() ? "" : " ") + formatBytes(bytes);
    return text;
  }
  std::size_t largest = 0;
  for (std::size_t s = 1; s < row.peak_memory_bytes.size(); ++s) {
    if (row.peak_memory_bytes[s] > row.peak_memory_bytes[largest]) largest = s;
  }
  return "max " + formatBytes(row.peak_memory_bytes[largest]) + " (" + unit + " " + std::to_string(largest) + ")";
}

// "plan for gpt-demo: 4 stages, global batch 32, 1f1b; measured at microbatch 1,2,4": what was
// planned, and the chunks per rank tried or fixed.
void printPlanHeading(std::ostream& out, const MicrobatchPlan& plan, const Profile& profile) {
  const PlanRequest& request = plan.request;
  out << "plan for " << (profile.model.name.empty() ? "the profile" : profile.model.name) << ": "
      << request.partition.placement.ranks << " stages, global batch " << request.global_batch << ", " << scheduleName(request.partition.schedule);
  if (request.choose_chunks) {
    std::vector<int> tried;
    for (const Placement& placement : placementsToTry(request.partition.schedule, request.partition.placement.ranks)) {
      tried.push_back(placement.chunks_per_rank);
    }
    out << " (v = " << joinNumbers(tried, ", ") << " chunks per rank tried at each size, the fastest kept)";
  } else if (runsChunks(request.partition.schedule)) {
    out << " (" << request.partition.placement.chunks_per_rank << " chunks per rank)";
  }
  if (request.partition.data_parallel > 1) out << ", " << request.partition.data_parallel << " replicas";
  out << "; measured at microbatch " << joinNumbers(plan.measured_sizes, ",") << "\n\n";
}

void printPlan(std::ostream& out, const MicrobatchPlan& plan, const Profile& profile) {
  printPlanHeading(out, plan, profile);
  const bool chunked = runsChunks(plan.request.partition.schedule);
  const std::string unit = chunked ? "rank" : "stage";
  TextTable table;
  table.addColumn("", TextTable::Align::kLeft);
  for (const char* header : {"b", "M"}) table.addColumn(header, TextTable::Align::kRight);
  if (chunked) table.addColumn("v", TextTable::Align::kRight);
  table.addColumn(chunked ? "layers per chunk" : "split", TextTable::Align::kLeft);
  for (const char* header : {"bottleneck ms", "step ms", "bubble"}) table.addColumn(header, TextTable::Align::kRight);
  table.addColumn(chunked ? "peak memory per rank" : "peak memory per stage", TextTable::Align::kLeft);
  table.addColumn("samples/s", TextTable::Align::kRight);
  table.addColumn("", TextTable::Align::kLeft);
  for (std::size_t i = 0; i < plan.rows.size(); ++i) {
    const PlanRow& row = plan.rows[i];
    std::string note = row.measured ? "" : "fitted";
    if (!row.feasible) {
      note = row.overflow_stage >= 0 ? "over the cap: " + unit + " " + std::to_string(row.overflow_stage) + " by " +
                                           formatBytes(row.overflow_bytes)
                                     : "no split meets the caps";
    }
    const bool best = static_cast<int>(i) == plan.best;
    if (best) note = note.empty() ? "best" : "best, " + note;
    std::vector<std::string> cells = {best ? "*" : "", std::to_string(row.microbatch_size),
                                      std::to_string(row.microbatches)};
    if (chunked) cells.push_back(std::to_string(row.placement.chunks_per_rank));
    for (std::string cell : {joinNumbers(row.layers_per_stage, ","), formatMs(row.bottleneck_ms), formatMs(row.step_ms),
                             formatPercent(row.bubble), memoryCell(row, unit), formatMs(row.samples_per_s), note}) {
      cells.push_back(std::move(cell));
    }
    table.addRow(cells);
  }
  table.print(out, "  ");

  // One line per reason, in the order of its smallest size.
  std::vector<std::pair<std::string, std::vector<int>>> skipped;
  for (const SkippedSize& size : plan.skipped) {
    auto group = std::find_if(skipped.begin(), skipped.end(), [&](const auto& item) { return item.first == size.reason; });
    if (group == skipped.end()) group = skipped.insert(skipped.end(), {size.reason, {}});
    group->second.push_back(size.microbatch_size);
  }
  for (const auto& [reason, sizes] : skipped) {
    out << "\n  not planned: microbatch " << joinNumbers(sizes, ", ") << " (" << reason << ")";
  }
  if (!skipped.empty()) out << "\n";
  const auto flagged = plan.flaggedLayers();
  if (!flagged.empty()) {
    out << "\n  costs a line does not fit (interpolated between measured sizes, never extrapolated):";
    std::size_t shown = 0;
    for (const LayerFitReport* fit : flagged) {
      if (shown++ == 6) {
        out << " and " << flagged.size() - 6 << " more";
        break;
      }
      const WorstFit worst = fit->worstFit();
      out << (shown > 1 ? "," : "") << " " << fit->name << " (" << worst.name << " "
          << formatPercent(worst.residual) << " off)";
    }
    out << "\n";
  }
  if (plan.measured_sizes.size() == 1) {
    out << "\n  the profile has one microbatch size; profile with --microbatch 1,2,4,8 to plan over sizes\n";
  }
  if (plan.best >= 0) {
    const PlanRow& best = plan.rows[static_cast<std::size_t>(plan.best)];
    out << "\n  best: microbatch " << best.microbatch_size << " x " << best.microbatches << " microbatches, split "
        << joinNumbers(best.layers_per_stage, ",")
        << (chunked ? " (" + std::to_string(best.placement.chunks_per_rank) + " chunks per rank)" : std::string()) << ", "
        << formatMs(best.step_ms) << " ms per step\n";
  }
}

}  // namespace

void addPlanCommand(CLI::App& app) {
  auto* command = app.add_subcommand(
      "plan", "Choose the microbatch size and count for a global batch: re-partition, simulate and check "
              "memory at every size");
  auto flags = std::make_shared<PlanFlags>();
  addPartitionFlags(command, flags->partition);
  // The planner sets M = G / b itself, and knows all four schedules.
  command->remove_option(flags->partition.microbatches_option);
  flags->partition.microbatches_option = nullptr;
  command->remove_option(flags->partition.microbatch_size_option);  // it plans them all
  flags->partition.microbatch_size_option = nullptr;
  command->get_option("profile")->description("A stagecut.profile, ideally measured at several sizes "
                                              "(stagecut profile --microbatch 1,2,4,8)");
  command->add_option("--global-batch,-g", flags->global_batch, "Samples per step G, over all --data-parallel replicas")
      ->required();
  command->add_option("--fit-tolerance", flags->fit_tolerance,
                      "Largest relative residual of a layer's fitted line before it is interpolated instead")
      ->capture_default_str();

  addLayoutPlanFlags(command, flags->layout);
  command->callback([flags, command] {
    if (command->count("--gpus") > 0) {
      runLayoutPlan(flags->layout, flags->partition, flags->global_batch, *command);
      return;
    }
    const PartitionFlags& partition_flags = flags->partition;
    std::string tensor_parallel_note;
    const Profile profile = readPricedProfile(partition_flags.profile_path, 0, partition_flags.tp_bandwidth,
                                              partition_flags.tp_latency, &tensor_parallel_note);
    if (!(flags->fit_tolerance >= 0)) {
      throw Error("--fit-tolerance " + formatMs(flags->fit_tolerance) + ": must be 0 or more, e.g. 0.1");
    }
    PlanRequest request;
    request.global_batch = flags->global_batch;
    request.fit_tolerance = flags->fit_tolerance;
    request.partition = resolvePartitionFlags(partition_flags, profile);
    request.choose_chunks = choosesChunks(request.partition.schedule) && !partition_flags.chunksGiven();
    const MicrobatchPlan plan = planMicrobatches(profile, request, partition_flags.profile_path);
    requireFeasibleRow(plan);
    const nlohmann::json document = planToJson(planDocument(plan));
    const std::optional<OutputPath> output = partition_flags.output();
    if (output) writeOutputFile(*output, toJsonText(document));
    if (partition_flags.json) {
      std::cout << toJsonText(document);
    } else {
      printPlan(std::cout, plan, profile);
      if (!tensor_parallel_note.empty()) std::cout << tensor_parallel_note << "\n";
      if (output) std::cout << "\nwrote " << output->path << "\n";
    }
  });
}

}  // namespace stagecut
