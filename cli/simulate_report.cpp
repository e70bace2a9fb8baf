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
  std::string title = scheduleDisplayName(run.schedule.name);
  if (run.schedule.chunks > 1) title += " (v = " + std::to_string(run.schedule.chunks) + ")";
  return title + ": step " + formatTime(run.result.step_ms, report.unit_costs) + " " +
         report.timeUnit() + ", bubble " + formatPercent(run.result.bubble);
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
  bool chunked = false, splits = false;
  for (const SimulatedRun& run : report.runs) {
    std::vector<std::string> peaks;
    for (const RankStats& rank : run.result.ranks) peaks.push_back(std::to_string(rank.peak_in_flight));
    const std::string closed_form =
        run.closed_form_bubble
            ? formatPercent(*run.closed_form_bubble) + " = " + closedFormText(run.schedule.name)
            : "-";
    std::string name = run.schedule.name;
    if (run.schedule.chunks > 1) name += " (v=" + std::to_string(run.schedule.chunks) + ")";
    chunked = chunked || run.schedule.chunks > 1;
    splits = splits || run.schedule.splits_backward;
    table.addRow({name, formatTime(run.result.step_ms, report.unit_costs),
                  formatPercent(run.result.bubble), closed_form, joined(peaks, " ")});
  }
  out << "\n";
  table.print(out, "  ");
  out << "\n  Peak in flight: microbatches whose activations a stage holds at once\n  (forward done, "
      << (splits ? "backward or W" : "backward") << " not yet)";
  out << (chunked ? "; interleaved-1f1b counts (microbatch, chunk) pairs.\n" : ".\n");
}

void printStageTable(std::ostream& out, const SimulationReport& report) {
  TextTable table;
  table.addColumn("stage", TextTable::Align::kRight);
  table.addColumn("layers", TextTable::Align::kLeft);
  table.addColumn("F ms", TextTable::Align::kRight);
  table.addColumn("B ms", TextTable::Align::kRight);
  table.addColumn("W ms", TextTable::Align::kRight);
  table.addColumn("send ms", TextTable::Align::kRight);
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
    schedules.push_back(entry);
  }
  document["schedules"] = schedules;
  if (!report.notes.empty()) document["notes"] = report.notes;
  return document;
}

}  // namespace stagecut
