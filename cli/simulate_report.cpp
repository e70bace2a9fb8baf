#include "cli/simulate_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "cli/text_table.h"
#include "core/units.h"
#include "schedule/ascii_gantt.h"
#include "schedule/closed_form.h"
#include "schedule/svg_gantt.h"

namespace stagecut {

namespace {

inline constexpr const char* kSimulationFormat = "stagecut.simulation/1";

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

std::string runTitle(const SimulatedRun& run, const SimulationReport& report) {
  std::string title = scheduleTitle(run.schedule) + ": step " +
                      formatTime(run.result.step_ms, report.unit_costs) + " " + report.timeUnit() +
                      ", bubble " + formatPercent(run.result.bubble);
  if (run.plain_step_ms) {
    title += ", all-reduce exposed " +
             formatTime(std::max(0.0, run.result.step_ms - *run.plain_step_ms), report.unit_costs) +
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
  for (const SimulatedRun& run : report.runs) {
    out << "\n" << runTitle(run, report) << "\n"
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
  for (const SimulatedRun& run : report.runs) {
    std::vector<std::string> peaks;
    for (const RankStats& rank : run.result.ranks) peaks.push_back(std::to_string(rank.peak_in_flight));
    const std::string closed_form =
        run.closed_form_bubble
            ? formatPercent(*run.closed_form_bubble) + " = " + closedFormText(parseScheduleName(run.schedule.name))
            : "-";
    std::string name = run.schedule.name;
    if (run.schedule.chunks > 1) name += " (v=" + std::to_string(run.schedule.chunks) + ")";
    chunked = chunked || run.schedule.chunks > 1;
    splits = splits || run.schedule.splits_backward;
    std::vector<std::string> row{name, formatTime(run.result.step_ms, report.unit_costs),
                                 formatPercent(run.result.bubble), closed_form, joined(peaks, " ")};
    if (data_parallel) {
      double longest = 0.0;
      for (const RankStats& rank : run.result.ranks) longest = std::max(longest, rank.allreduce_ms);
      row.push_back(formatTime(longest, report.unit_costs));
      row.push_back(formatTime(std::max(0.0, run.result.step_ms - run.plain_step_ms.value_or(run.result.step_ms)),
                               report.unit_costs));
    }
    table.addRow(row);
  }
  out << "\n";
  table.print(out, "  ");
  out << "\n  Peak in flight: microbatches whose activations a stage holds at once\n  (forward done, "
      << (splits ? "backward or W" : "backward") << " not yet)";
  out << (chunked ? "; interleaved-1f1b counts (microbatch, chunk) pairs.\n" : ".\n");
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
  for (const SimulatedRun& run : report.runs) {
    table.addColumn(run.schedule.name, TextTable::Align::kRight);
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
    for (const SimulatedRun& run : report.runs) {
      const RankStats& rank = run.result.ranks[s];
      row.push_back(formatBytes(rank.peak_activation_bytes) + " (" +
                    std::to_string(rank.peak_in_flight) + ")");
    }
    table.addRow(row);
  }
  out << "\n  Per stage: costs per microbatch (B and W as zb-h1 runs them; the others run B + W as\n"
      << "  one backward), the transfer to the next stage, and each schedule's peak activation\n"
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

nlohmann::json simulationToJson(const SimulationReport& report) {
  nlohmann::json document = {{"format", kSimulationFormat},
                             {"costs", report.unit_costs ? "unit" : "profile"},
                             {"time_unit", report.timeUnit()},
                             {"stages", report.stages},
                             {"microbatches", report.microbatches}};
  if (!report.unit_costs) {
    document["profile"] = report.profile_path;
    document["partition"] = report.partition_path;
    document["communication"] = report.comm_text;
  }
  if (!report.stage_recompute.empty()) document["stage_recompute"] = report.stage_recompute;
  if (report.data_parallel > 1) {
    document["data_parallel"] = report.data_parallel;
    document["allreduce"] = report.dp_text;
  }
  nlohmann::json schedules = nlohmann::json::array();
  for (const SimulatedRun& run : report.runs) {
    nlohmann::json entry = {{"schedule", run.schedule.name},
                            {"chunks", run.schedule.chunks},
                            {"step_time", run.result.step_ms},
                            {"bubble", run.result.bubble}};
    if (run.closed_form_bubble) entry["closed_form_bubble"] = *run.closed_form_bubble;
    nlohmann::json peaks = nlohmann::json::array(), busy = nlohmann::json::array(),
                   idle = nlohmann::json::array(), bytes = nlohmann::json::array();
    for (const RankStats& rank : run.result.ranks) {
      peaks.push_back(rank.peak_in_flight);
      busy.push_back(rank.busy_ms);
      idle.push_back(rank.idle_ms);
      bytes.push_back(rank.peak_activation_bytes);
    }
    entry["peak_in_flight"] = peaks;
    entry["busy_time"] = busy;
    entry["idle_time"] = idle;
    if (!report.unit_costs) entry["peak_activation_bytes"] = bytes;
    if (run.plain_step_ms) {
      nlohmann::json allreduce = nlohmann::json::array();
      for (const RankStats& rank : run.result.ranks) allreduce.push_back(rank.allreduce_ms);
      entry["allreduce_time"] = allreduce;
      entry["exposed_allreduce"] = std::max(0.0, run.result.step_ms - *run.plain_step_ms);
    }
    schedules.push_back(entry);
  }
  document["schedules"] = schedules;
  if (!report.notes.empty()) document["notes"] = report.notes;
  return document;
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

nlohmann::json tradeoffToJson(const TradeoffReport& report) {
  nlohmann::json rows = nlohmann::json::array();
  for (const TradeoffRow& row : report.tradeoff.rows) {
    rows.push_back({{"schedule", row.schedule},
                    {"stages", row.stages},
                    {"replicas", row.replicas},
                    {"microbatches", row.microbatches},
                    {"layers_per_stage", row.layers_per_stage},
                    {"step_time", row.step_ms},
                    {"bubble", row.bubble},
                    {"allreduce_time", row.allreduce_ms},
                    {"exposed_allreduce", row.exposed_allreduce_ms},
                    {"samples_per_s", row.samples_per_s},
                    {"peak_memory_bytes", row.peak_memory_bytes},
                    {"recompute", row.recompute}});
  }
  nlohmann::json document = {{"format", kSimulationFormat},
                             {"costs", "profile"},
                             {"time_unit", "ms"},
                             {"profile", report.profile_path},
                             {"ranks", report.ranks},
                             {"microbatch_size", report.tradeoff.microbatch_size},
                             {"allreduce", report.dp_text},
                             {"tradeoff", rows}};
  if (report.global_batch > 0) document["global_batch"] = report.global_batch;
  if (!report.tradeoff.notes.empty()) document["notes"] = report.tradeoff.notes;
  return document;
}

}  // namespace stagecut
