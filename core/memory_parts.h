#pragma once

#include <nlohmann/json.hpp>

#include "core/json_fields.h"

namespace stagecut {

/// A rank's memory at one point of its step, by part, bytes: what a predicted peak is made of
/// (prediction/stage_memory.h) and what partition and validate documents carry as
/// `memory_parts`.
struct MemoryParts {
  double weights = 0.0;
  double gradients = 0.0;
  double optimizer = 0.0;    ///< the optimizer's state
  double activations = 0.0;  ///< kept by microbatches in flight, and what B leaves for W
  double buffers = 0.0;      ///< received gradients and sent ones not yet delivered
  double transient = 0.0;    ///< the op's temporaries, recomputed activations included
  double total() const { return weights + gradients + optimizer + activations + buffers + transient; }
  bool operator==(const MemoryParts& other) const;
};

/// {"weights": ..., "gradients": ..., "optimizer": ..., "activations": ..., "buffers": ...,
/// "transient": ...}, whole bytes.
nlohmann::json memoryPartsToJson(const MemoryParts& parts);
/// Reads the object memoryPartsToJson writes; throws Error (input) naming `fields`' place and
/// the part that is missing or negative.
MemoryParts memoryPartsFromJson(const JsonFields& fields);

}  // namespace stagecut
