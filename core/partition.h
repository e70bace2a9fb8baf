#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/memory_parts.h"
#include "core/placement.h"

namespace stagecut {

/// Format tag of partition files this build reads and writes.
inline constexpr const char* kPartitionFormat = "stagecut.partition/1";

/// Format tag of `stagecut compare --json` documents: {"format", "splits": [<partition>, ...]}.
inline constexpr const char* kComparisonFormat = "stagecut.comparison/1";

/// One pipeline stage (one chunk of a chunked split): the inclusive layer range [first, last] and
/// what it costs per microbatch.
struct StageCost {
  int first = 0;
  int last = 0;
  double forward_ms = 0.0;
  double backward_ms = 0.0;
  double comm_ms = 0.0;  ///< receiving its input and sending its output, both directions
  double cost_ms = 0.0;  ///< (forward + backward + comm) / stage speed
  std::uint64_t params = 0;
  /// The predicted peak of the rank that runs the stage (in a chunked split, of all its chunks):
  /// weights, gradients, optimizer state, activations in flight, buffers and the largest op's
  /// temporaries at the point of the step where their sum is largest.
  std::uint64_t memory_bytes = 0;
  /// memory_bytes by part (absent in files from before it was written, and for imported splits).
  std::optional<MemoryParts> memory_parts;
  /// Written by a split made with --recompute: how the stage keeps activations ("none", "full",
  /// "selective:<kinds>") and the extra forward it runs per microbatch, ms. Every prediction
  /// of the split charges them; absent means none.
  std::optional<std::string> recompute;
  std::optional<double> recompute_ms;
  /// Written by a split made with --data-parallel D > 1: the stage's gradient all-reduce per
  /// step and the part of it later stages' cool-down does not hide, ms.
  std::optional<double> allreduce_ms;
  std::optional<double> exposed_allreduce_ms;

  int layerCount() const { return last - first + 1; }
  bool operator==(const StageCost& other) const;
};

/// A split of the layer chain into contiguous, non-empty stages, with its predicted figures. In a
/// chunked split the stages are the N x v chunks in chain order and `placement` says which rank
/// runs each; bottleneck_ms is then the slowest rank's sum of its chunks' cost_ms.
struct Partition {
  std::string method;  ///< "compute", "params", "uniform", ...
  std::vector<StageCost> stages;
  /// How the stages sit on ranks; absent: one stage per rank (Placement::loop(stages, 1)).
  std::optional<Placement> placement;
  double bottleneck_ms = 0.0;
  double lower_bound_ms = 0.0;
  double predicted_step_ms = 0.0;
  double predicted_bubble = 0.0;  ///< fraction of the step, 0..1

  /// Layers per stage, e.g. {4, 5, 5, 3}.
  std::vector<int> layersPerStage() const;
  /// `placement`, or one stage per rank.
  Placement rankPlacement() const {
    return placement ? *placement : Placement::loop(static_cast<int>(stages.size()), 1);
  }
  bool operator==(const Partition& other) const;
};

/// A split in each training framework's words: format name ("megatron", "deepspeed", ...) -> text.
/// Produced when a split is printed (partitioner/framework_formats.h), not carried by Partition.
using FrameworkOutputs = std::map<std::string, std::string>;

/// A partition file as written: the split and its "outputs".
struct PartitionDocument {
  Partition partition;
  FrameworkOutputs outputs;
};

/// One schedule of a comparison file's "schedules": its best split, simulated under it, or why
/// the schedule was left out (partitioner/schedule_choices.h makes them).
struct ScheduleComparison {
  std::string schedule;  ///< "1f1b", "zb-h1", "interleaved-1f1b", "zb-v", "dualpipe-v"
  /// Its ranks and chunks per rank (the file's "chunks"): its split's own, or for an entry left
  /// out the comparison's ranks in loop order (the file records no style for it).
  Placement placement;
  std::optional<PartitionDocument> split;  ///< absent when left out
  bool exact = false;    ///< whether the split's slowest rank is proven optimal
  double step_ms = 0.0;  ///< the step simulated under the schedule
  double bubble = 0.0;   ///< 0..1
  double peak_bytes = 0.0;  ///< the fullest rank's predicted peak
  std::string left_out;     ///< why there is no split; empty when there is one
};

/// A comparison file as written (stagecut.comparison/1): the splits, the fingerprint of the
/// profile they were made from ("" in files from before it was recorded), and each schedule on
/// its own best split (optional: empty in files from before it was written).
struct ComparisonDocument {
  std::vector<PartitionDocument> splits;
  std::string profile_fingerprint;
  std::vector<ScheduleComparison> schedules;
};

}  // namespace stagecut
