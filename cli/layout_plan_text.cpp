#include "cli/layout_plan_text.h"

#include <map>

#include "cli/text_table.h"
#include "core/error.h"
#include "core/units.h"
#include "planner/layout_formats.h"

namespace stagecut {

std::string frameworkText(const PlanInputs& inputs, const LayoutFigures& best) {
  try {
    const Profile shard = inputs.shardAt(best.layout.degrees, best.layout.microbatch_size);
    if (inputs.target().framework == Framework::kMegatron) {
      return megatronLayoutFlags(best, shard, inputs.target().global_batch);
    }
    return torchtitanLayoutToml(best, shard, inputs.target().global_batch, inputs.profile().run.seq_len);
  } catch (const Error& error) {
    if (error.kind() != ErrorKind::kInput) throw;
    return std::string("(") + frameworkName(inputs.target().framework) + " cannot print this split: " + error.what() + ")";
  }
}

namespace {

// The part of the step `row` spends beyond `best`'s, by where the time went.
std::string whyBehind(const LayoutFigures& row, const LayoutFigures& best) {
  // The step is the busiest rank's compute (TP collectives in it), the data-parallel time the
  // pipeline does not hide, and the rest: that rank's wait for the others.
  const auto wait = [](const LayoutFigures& figures) {
    return figures.step_ms - figures.compute_ms - figures.data_parallel_ms;
  };
  const std::pair<const char*, double> parts[] = {
      {"bubble", wait(row) - wait(best)},
      {"TP collectives", row.tensor_parallel_ms - best.tensor_parallel_ms},
      {"data-parallel", row.data_parallel_ms - best.data_parallel_ms},
      {"compute", (row.compute_ms - row.tensor_parallel_ms) - (best.compute_ms - best.tensor_parallel_ms)}};
  const auto* largest = &parts[0];
  for (const auto& part : parts) {
    if (part.second > largest->second) largest = &part;
  }
  if (largest->second <= 0) return "";
  return std::string(largest->first) + " +" + formatMs(largest->second) + " ms";
}

std::string fullestRankCell(const LayoutFigures& row, const Cluster& cluster) {
  return formatBytes(static_cast<std::uint64_t>(row.fullest_bytes)) + " (" + formatPercent(row.memoryShare(cluster), 0) + ")";
}

void printTable(std::ostream& out, const PlanInputs& inputs, const LayoutPlan& plan) {
  const bool mfu = !plan.ranked.empty() && plan.ranked.front().mfu.has_value();
  const char* sharded = shardedDataParallelName(inputs.target().framework);
  TextTable table;
  for (const char* header : {"#", "TP", "CP", "PP", "v", "DP", "mbs", "M"}) table.addColumn(header, TextTable::Align::kRight);
  for (const char* header : {"schedule", "recompute", sharded}) table.addColumn(header, TextTable::Align::kLeft);
  for (const char* header : {"step ms", "tokens/s/GPU"}) table.addColumn(header, TextTable::Align::kRight);
  if (mfu) table.addColumn("MFU", TextTable::Align::kRight);
  table.addColumn("bubble", TextTable::Align::kRight);
  table.addColumn("fullest rank", TextTable::Align::kRight);
  table.addColumn("vs #1", TextTable::Align::kLeft);
  for (std::size_t i = 0; i < plan.ranked.size(); ++i) {
    const LayoutFigures& row = plan.ranked[i];
    const ParallelLayout& layout = row.layout;
    std::vector<std::string> cells = {std::to_string(i + 1), std::to_string(layout.degrees.tensor_parallel),
                                      std::to_string(layout.degrees.context_parallel), std::to_string(layout.placement.ranks),
                                      std::to_string(layout.placement.chunks_per_rank), std::to_string(layout.data_parallel),
                                      std::to_string(layout.microbatch_size), std::to_string(layout.microbatches),
                                      scheduleName(layout.schedule), layout.recompute.text(),
                                      layout.sharded_data_parallel ? "on" : "off", formatMs(row.step_ms),
                                      formatMs(row.tokens_per_s_per_gpu)};
    if (mfu) cells.push_back(row.mfu ? formatPercent(*row.mfu) : "");
    cells.push_back(formatPercent(row.bubble));
    cells.push_back(fullestRankCell(row, inputs.cluster()));
    const LayoutFigures& best = plan.ranked.front();
    cells.push_back(i == 0 ? "" : formatSignedPercent(row.step_ms / best.step_ms - 1.0) + ": " + whyBehind(row, best));
    table.addRow(cells);
  }
  table.print(out, "  ");
}

void printPlanScope(std::ostream& out, const PlanInputs& inputs, const LayoutPlan& plan) {
  const Profile& profile = inputs.profile();
  const Cluster& cluster = inputs.cluster();
  out << "plan for " << (profile.model.name.empty() ? inputs.source() : profile.model.name) << " ("
      << (profile.run.dtype.empty() ? "?" : profile.run.dtype) << ", seq " << profile.run.seq_len << "): "
      << cluster.gpus << " GPUs in nodes of " << cluster.gpus_per_node << " (" << cluster.name << ", " << cluster.gpu << ", "
      << formatBytes(cluster.memory_bytes) << " each), global batch " << inputs.target().global_batch << ", "
      << frameworkName(inputs.target().framework) << "\n";
  if (!inputs.onClusterGpu()) {
    out << "note: measured on " << profile.device.name << " (" << profile.device.kind << "), not on the cluster's "
        << cluster.gpu << ": the layouts are ranked by this device's layer times against the cluster's links and "
        << "memory; profile on the GPU for times that are the GPU's (MFU left out)\n";
  }
  std::map<std::string, long long> rejected;
  for (const RejectedLayout& layout : plan.rejected) ++rejected[layoutProblemName(layout.problem.kind)];
  std::string kinds;
  for (const auto& [kind, count] : rejected) kinds += (kinds.empty() ? "" : ", ") + kind + " " + std::to_string(count);
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.2f", plan.seconds);
  out << "searched " << plan.candidates << " layouts in " << seconds << " s: " << plan.evaluated << " priced in full, "
      << plan.pruned << " left out by their step's lower bound (none can be faster), "
      << plan.rejected.size() << " cannot run" << (kinds.empty() ? "" : " (" + kinds + ")") << "\n";
  if (plan.unproven_splits > 0) {
    out << "note: " << plan.unproven_splits << " of the splits priced were not proven the fastest within the search's "
        << "budget; each slowest rank is at most " << formatPercent(plan.largest_split_gap, 2)
        << " above its proven bound\n";
  }
  out << "\n";
}

}  // namespace

void printLayoutPlan(std::ostream& out, const PlanInputs& inputs, const LayoutPlan& plan, const std::string& pinned,
                     const LayoutPlan* free_plan) {
  printPlanScope(out, inputs, plan);
  if (plan.ranked.empty()) {
    out << "no layout" << (pinned.empty() ? "" : " with --fix " + pinned) << " runs: ";
    if (!plan.rejected.empty()) out << "e.g. " << layoutText(plan.rejected.front().layout, inputs.target().framework) << ": "
                                    << plan.rejected.front().problem.reason;
    out << "\n";
    return;
  }
  if (!pinned.empty()) out << "fixed: " << pinned << " (the rest searched)\n";
  printTable(out, inputs, plan);
  const LayoutFigures& best = plan.ranked.front();
  out << "\nbest: " << layoutText(best.layout, inputs.target().framework) << ", " << formatMs(best.step_ms)
      << " ms per step\n";
  if (free_plan && !free_plan->ranked.empty()) {
    const LayoutFigures& chosen = free_plan->ranked.front();
    out << "the search's own choice: " << layoutText(chosen.layout, inputs.target().framework) << ", "
        << formatMs(chosen.step_ms) << " ms, " << formatSignedPercent(best.step_ms / chosen.step_ms - 1.0)
        << " for the fixed layout (" << (whyBehind(best, chosen).empty() ? "no slower" : whyBehind(best, chosen)) << ")\n";
  }
  out << "\n" << frameworkName(inputs.target().framework) << ":\n";
  const std::string text = frameworkText(inputs, best);
  std::size_t begin = 0;
  while (begin < text.size()) {
    const std::size_t end = std::min(text.find('\n', begin), text.size());
    out << "  " << text.substr(begin, end - begin) << "\n";
    begin = end + 1;
  }
}

}  // namespace stagecut
