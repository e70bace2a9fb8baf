#pragma once

// The parallel degrees a profile's layers were measured at, and the one place that writes them
// into model.config and reads them back: the zoo records them, prediction prices the
// collectives they imply, validate refuses what it cannot run. Free of LibTorch.

#include <string>

#include <nlohmann/json.hpp>

namespace stagecut {

/// How the measured layers were sharded: each layer is the shard one of `tensor_parallel` ranks
/// holds (1: the whole layer), with Megatron's sequence parallelism or without. A profile holds
/// one such point today; measuring at several (profile --tensor-parallel 1,2,4,8, and a
/// context-parallel degree beside it) adds fields here and keys its measurements by this type.
struct ParallelDegrees {
  int tensor_parallel = 1;
  bool sequence_parallel = false;  ///< all-gather and reduce-scatter instead of each all-reduce

  bool operator==(const ParallelDegrees& other) const {
    return tensor_parallel == other.tensor_parallel && sequence_parallel == other.sequence_parallel;
  }
  bool operator!=(const ParallelDegrees& other) const { return !(*this == other); }
};

/// The largest tensor-parallel degree a profile may record: beyond it a degree is a typo.
inline constexpr int kMaxTensorParallel = 1024;

/// Adds `degrees` to a model.config as "tensor_parallel" and "sequence_parallel"; nothing for
/// unsharded layers, so that their profiles keep the bytes (and fingerprints) they always had.
void writeParallelDegrees(const ParallelDegrees& degrees, nlohmann::json& config);

/// The degrees a model.config records; the defaults (1, no sequence parallelism) where it records
/// none. Throws Error (input) naming `where` and the field when "tensor_parallel" is not a whole
/// number from 1 to kMaxTensorParallel or "sequence_parallel" is not true or false.
ParallelDegrees readParallelDegrees(const nlohmann::json& config, const std::string& where);

}  // namespace stagecut
