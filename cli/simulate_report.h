#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "partitioner/data_parallel_plan.h"
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
  /// With data parallelism: the same step without the all-reduce ops, ms.
  std::optional<double> plain_step_ms;
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
  int data_parallel = 1;                  ///< D replicas of every stage
  std::string dp_text;                    ///< how the all-reduce is modelled (D > 1)
  std::vector<double> stage_allreduce_ms; ///< per partition stage (D > 1)
  /// Per partition stage, its recompute mode from the partition; empty when none recomputes.
  std::vector<std::string> stage_recompute;

  /// "units" with unit costs, "ms" with a profile.
  std::string timeUnit() const { return unit_costs ? "units" : "ms"; }
};

/// What `stagecut simulate PROFILE --ranks R` prints: the N x D trade-off.
struct TradeoffReport {
  std::string profile_path;
  int ranks = 0;
  int global_batch = 0;       ///< 0: M per replica was given
  std::string pipeline_text;  ///< the link between stages
  std::string dp_text;        ///< the all-reduce link
  bool recompute = false;     ///< a recompute policy other than none
  std::string memory_cap;     ///< as given; empty: none
  Tradeoff tradeoff;
};

/// The trade-off table: per layout N, D, M per replica, split, step, bubble, all-reduce,
/// exposed all-reduce, samples/s, the fullest stage's memory (and each stage's recompute mode
/// with a recompute policy); notes on layouts left out.
void printTradeoffText(std::ostream& out, const TradeoffReport& report);

/// The `stagecut.simulation/1` document of a trade-off: "ranks", "global_batch" and "tradeoff"
/// rows (schedule, stages, replicas, microbatches, layers_per_stage, step_time, bubble,
/// allreduce_time, exposed_allreduce, samples_per_s, peak_memory_bytes, recompute[]).
nlohmann::json tradeoffToJson(const TradeoffReport& report);

/// The human report: a heading, a Gantt chart per run scaled to `width_columns`, and the tables.
void printSimulationText(std::ostream& out, const SimulationReport& report, int width_columns);

/// The `stagecut.simulation/1` document of a report.
nlohmann::json simulationToJson(const SimulationReport& report);

}  // namespace stagecut
