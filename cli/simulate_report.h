#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "schedule/pipeline_schedule.h"
#include "schedule/simulator.h"
#include "schedule/stage_costs.h"

namespace stagecut {

/// One schedule as `stagecut simulate` ran it.
struct SimulatedRun {
  Schedule schedule;
  PipelineCosts costs;
  SimulationResult result;
  std::optional<double> closed_form_bubble;
};

/// Everything `stagecut simulate` prints: what was simulated on which costs, and the runs.
struct SimulationReport {
  bool unit_costs = true;
  std::string profile_path;    ///< empty with unit costs
  std::string partition_path;  ///< empty with unit costs
  int stages = 0;
  int microbatches = 0;
  int chunks = 1;              ///< v of interleaved-1f1b
  std::string comm_text;       ///< "none" or "25GB/s + 10us per boundary"
  std::vector<std::string> notes;
  std::vector<SimulatedRun> runs;
  /// Per partition stage (profile mode): its layer range "0-3" and summed costs.
  std::vector<std::string> stage_layers;
  std::vector<StageOpCosts> stage_costs;
  std::vector<double> boundary_comm_ms;  ///< after each stage but the last (profile mode)

  /// "units" with unit costs, "ms" with a profile.
  std::string timeUnit() const { return unit_costs ? "units" : "ms"; }
};

/// The human report: a heading, a Gantt chart per run scaled to `width_columns`, and the tables.
void printSimulationText(std::ostream& out, const SimulationReport& report, int width_columns);

/// The `stagecut.simulation/1` document of a report.
nlohmann::json simulationToJson(const SimulationReport& report);

}  // namespace stagecut
