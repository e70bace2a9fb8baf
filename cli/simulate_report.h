#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "prediction/simulation_json.h"
#include "schedule/pipeline_schedule.h"
#include "schedule/simulator.h"
#include "schedule/stage_costs.h"

namespace stagecut {

/// One schedule as `stagecut simulate` ran it: the op lists and timeline its charts draw.
struct SimulatedRun {
  Schedule schedule;
  PipelineCosts costs;
  SimulationResult result;
};

/// Everything `stagecut simulate` prints: the stagecut.simulation/1 document (what was simulated
/// on which costs, each schedule's figures) and what only the human text shows.
struct SimulationReport : SimulationDocument {
  /// The runs behind `schedules`, in the same order.
  std::vector<SimulatedRun> runs;
  /// Per partition stage (profile mode): its layer range "0-3" and summed costs.
  std::vector<std::string> stage_layers;
  std::vector<StageOpCosts> stage_costs;
  std::vector<double> boundary_comm_ms;  ///< after each stage but the last (profile mode)
  std::vector<double> stage_allreduce_ms; ///< per partition stage (D > 1)
};

/// What `stagecut simulate PROFILE --ranks R` prints: the stagecut.simulation/1 trade-off and
/// what only the human text shows.
struct TradeoffReport : TradeoffDocument {
  std::string pipeline_text;  ///< the link between stages
  bool recompute = false;     ///< a recompute policy other than none
  std::string memory_cap;     ///< as given; empty: none
};

/// The trade-off table: per layout N, D, M per replica, split, step, bubble, all-reduce,
/// exposed all-reduce, samples/s, the fullest stage's memory (and each stage's recompute mode
/// with a recompute policy); notes on layouts left out.
void printTradeoffText(std::ostream& out, const TradeoffReport& report);

/// The human report: a heading, a Gantt chart per run scaled to `width_columns`, and the tables.
void printSimulationText(std::ostream& out, const SimulationReport& report, int width_columns);

}  // namespace stagecut
