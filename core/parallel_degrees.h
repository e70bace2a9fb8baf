#pragma once

// The parallel degrees a profile's layers were measured at, and the one place that writes them
// into model.config and reads them back: the zoo records them, prediction prices the
// collectives they imply, validate refuses what it cannot run. Free of LibTorch.

#include <string>

#include <nlohmann/json.hpp>

namespace stagecut {

/// How the measured layers were sharded: each layer is the shard one of `tensor_parallel` ranks
/// holds (1: the whole layer), with Megatron's sequence parallelism or without, over the share of
/// the sequence one of `context_parallel` ranks holds (1: all of it; Megatron's load-balanced
/// causal chunks otherwise). A profile measured at several points (profile --tensor-parallel
/// 1,2,4,8 --context-parallel 1,2) keys each point's layers by this type (Profile::shards).
struct ParallelDegrees {
  int tensor_parallel = 1;
  bool sequence_parallel = false;  ///< all-gather and reduce-scatter instead of each all-reduce
  int context_parallel = 1;

  bool operator==(const ParallelDegrees& other) const {
    return tensor_parallel == other.tensor_parallel && sequence_parallel == other.sequence_parallel &&
           context_parallel == other.context_parallel;
  }
  /// tensor_parallel x context_parallel: the GPUs one shard's layer spans.
  int ranks() const { return tensor_parallel * context_parallel; }
  bool operator!=(const ParallelDegrees& other) const { return !(*this == other); }
};

/// The largest tensor- or context-parallel degree a profile may record: beyond it a degree is a typo.
inline constexpr int kMaxTensorParallel = 1024;

/// Records `degrees` in a model.config as "tensor_parallel" and "sequence_parallel" (TP > 1) and
/// "context_parallel" (CP > 1), replacing any it held; nothing for unsharded layers, so that
/// their profiles keep the bytes (and fingerprints) they always had.
void writeParallelDegrees(const ParallelDegrees& degrees, nlohmann::json& config);

/// The degrees a model.config records; the defaults (1, no sequence parallelism) where it records
/// none. Throws Error (input) naming `where` and the field when "tensor_parallel" or
/// "context_parallel" is not a whole number from 1 to kMaxTensorParallel or "sequence_parallel"
/// is not true or false.
ParallelDegrees readParallelDegrees(const nlohmann::json& config, const std::string& where);

}  // namespace stagecut
