#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/memory_parts.h"
#include "prediction/pipeline_prediction.h"
#include "schedule/simulator.h"

namespace stagecut {

/// Format tag of `stagecut simulate --json`, in both of its shapes (one pipeline, the N x D
/// trade-off).
inline constexpr const char* kSimulationFormat = "stagecut.simulation/1";

/// One schedule's figures as stagecut.simulation/1 holds them. Times are ms, or unit slots on
/// unit costs (the document's time unit).
struct SimulatedScheduleFigures {
  std::string schedule;  ///< its name: "1f1b"
  /// The document's ranks, the schedule's chunks per rank (its "chunks") and their style.
  Placement placement;
  double step_ms = 0.0;
  double bubble = 0.0;   ///< idle fraction of the step's compute
  std::optional<double> closed_form_bubble;  ///< where the schedule has one
  /// One per pipeline rank: busy and idle time, peak microbatches in flight, peak activation
  /// bytes (written with profile costs) and all-reduce time (written with exposed_allreduce_ms).
  std::vector<RankStats> ranks;
  /// With data parallelism: how much longer the step is than the same step without all-reduce.
  std::optional<double> exposed_allreduce_ms;
  /// Profile costs: per rank, the memory timeline's peak and its parts (absent in documents from
  /// before they were written).
  std::vector<std::uint64_t> peak_memory_bytes;
  std::vector<MemoryParts> memory_parts;
};

/// The figures of one predicted schedule: `closed_form_bubble` as closedFormBubble() gave it,
/// and with `data_parallel` > 1 the exposed all-reduce (the step minus the pipeline's own step).
SimulatedScheduleFigures simulatedScheduleFigures(const PipelinePrediction& prediction,
                                                  std::optional<double> closed_form_bubble,
                                                  int data_parallel);

/// What `stagecut simulate --json` prints of one pipeline: what was simulated on which costs,
/// and each schedule's figures.
struct SimulationDocument {
  bool unit_costs = true;
  std::string profile_path;    ///< empty with unit costs
  std::string partition_path;  ///< empty with unit costs
  std::string comm_text;       ///< profile costs: "none" or "25GB/s + 10us latency per boundary"
  int stages = 0;
  int microbatches = 0;
  int data_parallel = 1;   ///< D replicas of every stage
  std::string dp_text;     ///< how the all-reduce is modelled (D > 1)
  /// Per partition stage, its recompute mode from the partition; empty when none recomputes.
  std::vector<std::string> stage_recompute;
  std::vector<SimulatedScheduleFigures> schedules;  ///< in the order they ran
  std::vector<std::string> notes;

  /// "units" with unit costs, "ms" with a profile.
  std::string timeUnit() const { return unit_costs ? "units" : "ms"; }
};

/// One layout of the trade-off, split by the exact partitioner (which charges the exposed
/// all-reduce) and simulated with the gradient all-reduce ops.
struct TradeoffRow {
  std::string schedule;
  int stages = 0;        ///< N
  int replicas = 0;      ///< D
  int microbatches = 0;  ///< M per replica
  std::vector<int> layers_per_stage;
  double step_ms = 0.0;
  double bubble = 0.0;                ///< idle fraction of the N x D devices' compute
  double allreduce_ms = 0.0;          ///< the slowest stage's all-reduce
  double exposed_allreduce_ms = 0.0;  ///< step minus the same step without all-reduce
  double samples_per_s = 0.0;         ///< M x D x microbatch size / step
  std::uint64_t peak_memory_bytes = 0;  ///< the fullest stage's memory (partition model)
  std::vector<std::string> recompute;   ///< per stage, its recompute mode
};

/// The rows, and notes on layouts left out (N above the layer count, a global batch that does
/// not divide, interleaved-1f1b with M not a multiple of N, no split within the memory caps).
/// dataParallelTradeoff() (partitioner/data_parallel_plan.h) makes it.
struct Tradeoff {
  int microbatch_size = 0;  ///< samples per microbatch: the profile's run.microbatch_size
  std::vector<TradeoffRow> rows;
  std::vector<std::string> notes;
};

/// What `stagecut simulate PROFILE --ranks R --json` prints: the N x D trade-off.
struct TradeoffDocument {
  std::string profile_path;
  int ranks = 0;
  int global_batch = 0;  ///< 0: M per replica was given
  std::string dp_text;   ///< the all-reduce link
  Tradeoff tradeoff;
};

/// The stagecut.simulation/1 document of one pipeline: "costs", "time_unit", "stages",
/// "microbatches", with a profile "profile", "partition" and "communication", with D > 1
/// "data_parallel" and "allreduce", "stage_recompute" where a stage recomputes, and "schedules"
/// (schedule, chunks, step_time, bubble, closed_form_bubble, per rank peak_in_flight, busy_time,
/// idle_time, peak_activation_bytes with a profile and allreduce_time with D > 1,
/// exposed_allreduce); "notes" when there are any.
nlohmann::json simulationToJson(const SimulationDocument& document);

/// The stagecut.simulation/1 document of a trade-off: "profile", "ranks", "microbatch_size",
/// "allreduce", "global_batch" (when given), "notes" and "tradeoff" rows (schedule, stages,
/// replicas, microbatches, layers_per_stage, step_time, bubble, allreduce_time,
/// exposed_allreduce, samples_per_s, peak_memory_bytes, recompute[]).
nlohmann::json tradeoffToJson(const TradeoffDocument& document);

/// A stagecut.simulation/1 document read back: one pipeline's schedules, or the trade-off.
using AnySimulationDocument = std::variant<SimulationDocument, TradeoffDocument>;

/// Reads a stagecut.simulation/1 document: the trade-off where it has "tradeoff", else one
/// pipeline's "schedules". What it gives back writes the same bytes through simulationToJson()
/// or tradeoffToJson(). Throws Error (input) with one line naming `source`, the schedule or
/// layout and the field for another format, a missing field or one of the wrong type, a
/// negative time or count, a fraction above 1, a "time_unit" the "costs" do not use, or a
/// per-rank or per-stage list without one entry per stage.
AnySimulationDocument simulationFromJson(const nlohmann::json& document, const std::string& source);

}  // namespace stagecut
