#include "cli/simulate_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "cli/text_table.h"
#include "core/units.h"
#include "schedule/ascii_gantt.h"
#include "schedule/closed_form.h"
#include "schedule/schedule_kind.h"
#include "schedule/svg_gantt.h"

namespace stagecut {

namespace {

// Unit-cost steps are whole or simple fractions: "33", "28.5", "26.25".
std::string formatTime(double value, bool unit_costs) {
  if (!unit_costs) return formatMs(value);
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3f", value);
  std::string text = buffer;
  while (text.back() == '0') text.pop_back();
  if (text.back() == '.') text.pop_back();
  return text;
}

std::string runTitle(const SimulatedRun& run, const SimulatedScheduleFigures& figures,
                     const SimulationReport& report) {
  std::string title = scheduleTitle(run.schedule) + ": step " +
                      formatTime(figures.step_ms, report.unit_costs) + " " + report.timeUnit() +
                      ", bubble " + formatPercent(figures.bubble);
  if (figures.exposed_allreduce_ms) {
    title += ", all-reduce exposed " + formatTime(*figures.exposed_allreduce_ms, report.unit_costs) +
             " " + report.timeUnit();
  }
  return title;
}

std::string joined(const std::vector<std::string>& items, const char* separator) {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : separator) + item;
  return text;
}

void printHeading(std::ostream& out, const SimulationReport& report) {
  const std::string shape = std::to_string(report.stages) + " stages x " +
                            std::to_string(report.microbatches) + " microbatches";
  if (report.unit_costs) {
    out << "Simulated " << shape << " on unit costs: F = 1, B = 1, W = 1 per stage and "
        << "microbatch\n(where W is not split off, the backward takes B + W = 2); "
        << "no communication.\n";
  } else {
    out << "Simulated " << report.profile_path << " split by " << report.partition_path << ": "
        << shape << ",\ncosts from the profile's per-layer medians (ms per microbatch); "
        << "communication: " << report.comm_text << ".\n";
  }
  if (report.data_parallel > 1) {
    out << "Data parallel: every stage replicated " << report.data_parallel << " times; "
        << report.dp_text << ";\neach rank's all-reduce (A) starts after its last backward; the "
        << "bubble counts it as idle compute.\n";
  }
  for (const std::string& note : report.notes) out << "note: " << note << "\n";
}

void printCharts(std::ostream& out, const SimulationReport& report, int width_columns) {
  double longest_ms = 0;
  for (const SimulatedRun& run : report.runs) longest_ms = std::max(longest_ms, run.result.step_ms);
  AsciiGanttOptions options;
  options.width_columns = width_columns;
  options.time_unit = report.timeUnit();
  options.fit_ms = longest_ms;
  for (std::size_t i = 0; i < report.runs.size(); ++i) {
    const SimulatedRun& run = report.runs[i];
    out << "\n" << runTitle(run, report.schedules[i], report) << "\n"
        << renderAsciiGantt(run.schedule, run.result, options);
  }
}

void printScheduleTable(std::ostream& out, const SimulationReport& report) {
  TextTable table;
  table.addColumn("schedule", TextTable::Align::kLeft);
  table.addColumn("step (" + report.timeUnit() + ")", TextTable::Align::kRight);
  table.addColumn("bubble", TextTable::Align::kRight);
  table.addColumn(report.unit_costs ? "closed form" : "closed form if balanced",
                  TextTable::Align::kLeft);
  table.addColumn("peak in flight per stage", TextTable::Align::kLeft);
  const bool data_parallel = report.data_parallel > 1;
  if (data_parallel) {
    table.addColumn("all-reduce (" + report.timeUnit() + ")", TextTable::Align::kRight);
    table.addColumn("exposed", TextTable::Align::kRight);
  }
  bool chunked = false, splits = false;
  for (std::size_t i = 0; i < report.schedules.size(); ++i) {
    const SimulatedScheduleFigures& figures = report.schedules[i];
    std::vector<std::string> peaks;
    for (const RankStats& rank : figures.ranks) peaks.push_back(std::to_string(rank.peak_in_flight));
    const std::string closed_form =
        figures.closed_form_bubble
            ? formatPercent(*figures.closed_form_bubble) + " = " + closedFormText(parseScheduleName(figures.schedule))
            : "-";
    std::string name = figures.schedule;
    if (figures.placement.chunked()) name += " (v=" + std::to_string(figures.placement.chunks_per_rank) + ")";
    chunked = chunked || figures.placement.chunked();
    splits = splits || report.runs[i].schedule.splits_backward;
    std::vector<std::string> row{name, formatTime(figures.step_ms, report.unit_costs),
                                 formatPercent(figures.bubble), closed_form, joined(peaks, " ")};
    if (data_parallel) {
      double longest = 0.0;
      for (const RankStats& rank : figures.ranks) longest = std::max(longest, rank.allreduce_ms);
      row.push_back(formatTime(longest, report.unit_costs));
      row.push_back(formatTime(figures.exposed_allreduce_ms.value_or(0.0), report.unit_costs));
    }
    table.addRow(row);
  }
  out << "\n";
  table.print(out, "  ");
  out << "\n  Peak in flight: microbatches whose activations a stage holds at once\n  (forward done, "
      << (splits ? "backward or W" : "backward") << " not yet)";
  out << (chunked ? "; a chunked schedule counts (microbatch, chunk) pairs.\n" : ".\n");
  if (data_parallel) {
    out << "  All-reduce: the slowest rank's; exposed: how much longer the step is than without "
        << "all-reduce.\n";
  }
}

void printStageTable(std::ostream& out, const SimulationReport& report) {
  TextTable table;
  table.addColumn("stage", TextTable::Align::kRight);
  table.addColumn("layers", TextTable::Align::kLeft);
  table.addColumn("F ms", TextTable::Align::kRight);
  table.addColumn("B ms", TextTable::Align::kRight);
  table.addColumn("W ms", TextTable::Align::kRight);
  table.addColumn("send ms", TextTable::Align::kRight);
  if (report.data_parallel > 1) table.addColumn("all-reduce ms", TextTable::Align::kRight);
  if (!report.stage_recompute.empty()) table.addColumn("recompute", TextTable::Align::kLeft);
  for (const SimulatedScheduleFigures& figures : report.schedules) {
    table.addColumn(figures.schedule, TextTable::Align::kRight);
  }
  for (std::size_t s = 0; s < report.stage_costs.size(); ++s) {
    const StageOpCosts& stage = report.stage_costs[s];
    std::vector<std::string> row = {
        std::to_string(s), report.stage_layers[s], formatMs(stage.forward_ms),
        formatMs(stage.backward_input_ms), formatMs(stage.backward_weight_ms),
        s + 1 == report.stage_costs.size() ? "-"
        : report.boundary_comm_ms.empty()  ? formatMs(0.0)
                                           : formatMs(report.boundary_comm_ms[s])};
    if (report.data_parallel > 1) row.push_back(formatMs(report.stage_allreduce_ms[s]));
    if (!report.stage_recompute.empty()) row.push_back(report.stage_recompute[s]);
    for (std::size_t j = 0; j < report.schedules.size(); ++j) {
      // A chunked split's rows are its chunks: each shows the peak of the rank that runs it.
      const SimulatedScheduleFigures& figures = report.schedules[j];
      const bool chunk_rows = report.stage_costs.size() > figures.ranks.size();
      const int rank_index = chunk_rows ? report.runs[j].schedule.placement.rankOf(static_cast<int>(s)) : static_cast<int>(s);
      const RankStats& rank = figures.ranks[static_cast<std::size_t>(rank_index)];
      row.push_back((chunk_rows ? "rank " + std::to_string(rank_index) + ": " : std::string()) +
                    formatBytes(rank.peak_activation_bytes) + " (" + std::to_string(rank.peak_in_flight) + ")");
    }
    table.addRow(row);
  }
  bool splits_backward = false;
  for (const SimulatedScheduleFigures& figures : report.schedules) {
    splits_backward = splits_backward || splitsBackward(parseScheduleName(figures.schedule));
  }
  out << "\n  Per stage: costs per microbatch ("
      << (splits_backward ? "B and W as the zero-bubble schedules and dualpipe-v run them; the\n  others run B + W as one backward"
                          : "B and W as the profile split them; the schedules run B + W as\n  one backward")
      << "), the transfer to the next stage, and each schedule's peak activation\n"
      << "  memory (microbatches in flight):\n\n";
  table.print(out, "  ");
}

}  // namespace

void printSimulationText(std::ostream& out, const SimulationReport& report, int width_columns) {
  printHeading(out, report);
  printCharts(out, report, width_columns);
  printScheduleTable(out, report);
  if (!report.unit_costs) printStageTable(out, report);
}

void printTradeoffText(std::ostream& out, const TradeoffReport& report) {
  const Tradeoff& tradeoff = report.tradeoff;
  out << "Layouts of " << report.ranks << " ranks as N stages x D data-parallel replicas of "
      << report.profile_path << ",\n";
  if (report.global_batch > 0) {
    out << "global batch " << report.global_batch << " samples (microbatches of "
        << tradeoff.microbatch_size << ": M = global batch / (D x " << tradeoff.microbatch_size
        << ") per replica);\n";
  } else {
    out << "M microbatches per replica (of " << tradeoff.microbatch_size
        << " samples each), so the global batch grows with D;\n";
  }
  out << "each split the exact optimum for its N and D; stage link: " << report.pipeline_text
      << "; all-reduce: ring, " << report.dp_text << ".\n";
  for (const std::string& note : tradeoff.notes) out << "note: " << note << "\n";
  TextTable table;
  bool several = false;
  for (const TradeoffRow& row : tradeoff.rows) several = several || row.schedule != tradeoff.rows.front().schedule;
  if (several) table.addColumn("schedule", TextTable::Align::kLeft);
  for (const char* name : {"N", "D", "M"}) table.addColumn(name, TextTable::Align::kRight);
  table.addColumn("layers per stage", TextTable::Align::kLeft);
  table.addColumn("step ms", TextTable::Align::kRight);
  table.addColumn("bubble", TextTable::Align::kRight);
  table.addColumn("all-reduce ms", TextTable::Align::kRight);
  table.addColumn("exposed ms", TextTable::Align::kRight);
  table.addColumn("samples/s", TextTable::Align::kRight);
  table.addColumn("memory", TextTable::Align::kRight);
  if (report.recompute) table.addColumn("recompute", TextTable::Align::kLeft);
  for (const TradeoffRow& row : tradeoff.rows) {
    std::vector<std::string> cells;
    if (several) cells.push_back(row.schedule);
    char rate[32];
    std::snprintf(rate, sizeof rate, "%.1f", row.samples_per_s);
    cells.insert(cells.end(), {std::to_string(row.stages), std::to_string(row.replicas),
                               std::to_string(row.microbatches), joinNumbers(row.layers_per_stage),
                               formatMs(row.step_ms), formatPercent(row.bubble),
                               formatMs(row.allreduce_ms), formatMs(row.exposed_allreduce_ms),
                               std::string(rate), formatBytes(row.peak_memory_bytes)});
    if (report.recompute) cells.push_back(joined(row.recompute, ","));
    table.addRow(cells);
  }
  out << "\n";
  table.print(out, "  ");
  out << "\n  M: microbatches per replica. bubble: idle fraction of all N x D devices' compute "
      << "(all-reduce counts as idle).\n  all-reduce: the slowest stage's; exposed: how much "
      << "longer the step is than without it.\n  memory: the fullest stage's weights, "
      << "gradients, optimizer state and activations in flight"
      << (report.memory_cap.empty() ? std::string() : ", within --memory-cap " + report.memory_cap)
      << ".\n";
}

}  // namespace stagecut
