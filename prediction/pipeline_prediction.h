#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/partition.h"
#include "core/profile.h"
#include "prediction/memory_prediction.h"
#include "schedule/pipeline_schedule.h"
#include "schedule/profile_costs.h"
#include "schedule/schedule_kind.h"
#include "schedule/simulator.h"
#include "schedule/stage_costs.h"

namespace stagecut {

/// What a predicted step depends on beyond the profile and the split. The split's own choices
/// (each stage's recomputation, StageCost::recompute) come with the Partition.
struct PredictionOptions {
  ScheduleKind schedule = ScheduleKind::kOneFOneB;
  int microbatches = 1;  ///< M per step
  /// The ranks and chunks the schedule runs; absent: the split's own (Partition::rankPlacement).
  /// Given with a split of one chunk per rank and v > 1, each rank's stage is divided evenly
  /// into its v chunks (the split fixes a rank's work, not its chunks); a chunked split runs as
  /// it is placed.
  std::optional<Placement> placement;
  std::vector<double> stage_speed;  ///< per partition stage, relative to the profiled device; empty: all 1
  int data_parallel = 1;            ///< D replicas: each rank's list ends with its gradient all-reduce
  BoundaryLink link;                ///< between pipeline stages
  BoundaryLink dp_link;             ///< between the replicas of a stage (ring all-reduce)
  OptimizerMemory optimizer;        ///< the optimizer state and step the memory timeline charges
  /// false: leave `memory` empty, for searches that compare the steps of many splits first.
  bool memory = true;
};

/// One split's predicted step: the op lists every rank runs, the costs they were simulated on
/// and the simulated timeline with its per-rank figures.
struct PipelinePrediction {
  Schedule schedule;          ///< with one all-reduce op per chunk and rank when D > 1
  PipelineCosts costs;        ///< per model stage, with recomputation and stage speed charged
  SimulationResult simulated; ///< step, bubble, per-rank busy time, in-flight and activation peaks
  MemoryPrediction memory;    ///< per rank: the memory timeline over the step and its peak
  /// The step without the all-reduce ops: what the pipeline alone takes (the step itself when D = 1).
  double pipeline_step_ms = 0.0;
  /// From costsFromPartition(): layers whose backward was split evenly into B and W, and layers
  /// whose W is the backward minus B. They matter only where the schedule splits W off.
  int layers_with_even_split = 0;
  int layers_with_w_from_backward = 0;
  /// Whether some stage of the split recomputes its activations.
  bool recomputes = false;

  /// The part of the gradient all-reduce that the pipeline's cool-down does not hide: the step
  /// beyond the pipeline alone (0 when D = 1).
  double exposedAllReduceMs() const { return simulated.step_ms > pipeline_step_ms ? simulated.step_ms - pipeline_step_ms : 0.0; }
};

/// The op lists of a schedule as every command runs or simulates them: generateSchedule() on
/// `placement` and M = `microbatches`, with the gradient all-reduce appended when
/// `data_parallel` > 1. Throws Error (input) as generateSchedule() and ringAllReduceCost() do.
Schedule pipelineSchedule(ScheduleKind kind, const Placement& placement, int microbatches, int data_parallel);

/// The one prediction path from a split to its figures (partition --simulate, compare, simulate,
/// plan, report, demo and validate all call it): the schedule's op lists, the costs from the
/// profile's medians (costsFromPartition) with each stage's recomputation (its extra forward
/// before B, and only the bytes it keeps) and speed applied, the data-parallel all-reduce, and
/// the event simulation. `source` names the partition in messages. Throws Error (input) when the
/// partition does not cover the profile, a stage names an unknown recompute mode, the options do
/// not fit the split (speeds per stage), or the schedule cannot run the shape.
PipelinePrediction predictPipeline(const Profile& profile, const Partition& partition,
                                   const PredictionOptions& options, const std::string& source);

/// The lesson: schedule `kind` on `placement` with unit costs (F = 1, B = 1, W = 1 per rank and
/// microbatch, schedule/stage_costs.h) and no communication. Throws Error (input) as
/// generateSchedule() does.
PipelinePrediction predictUnitCosts(ScheduleKind kind, const Placement& placement, int microbatches);

}  // namespace stagecut
