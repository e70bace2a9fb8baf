#pragma once

// The raw samples of an unfinished profile, so that an interrupted run can resume. LibTorch-free:
// the CLI writes and reads it as the side file next to the output.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace stagecut {

/// Timed samples of one unit (a layer, or the whole model), in ms, and the seconds spent on it.
struct UnitSampleLog {
  std::vector<double> forward, backward, backward_input, backward_weight, recompute;
  double spent_s = 0.0;

  std::size_t repeats() const { return forward.size(); }
};

/// Every sample taken so far at one microbatch size.
struct SizeCheckpoint {
  int microbatch_size = 0;
  bool complete = false;  ///< every unit stopped: the size need not be timed again
  std::vector<UnitSampleLog> layers;
  UnitSampleLog whole;
  /// Each layer's forward and backward inside the whole-model pass (one per layer, or none in a
  /// file written before they were timed).
  std::vector<UnitSampleLog> in_chain;

  /// Timed samples over all units (for messages).
  std::size_t sampleCount() const;
};

/// The side file: what was asked (`request`, compared on resume) and the samples per size.
struct MeasureCheckpoint {
  nlohmann::json request = nlohmann::json::object();
  std::vector<SizeCheckpoint> sizes;

  /// The entry of `microbatch_size`, or nullptr.
  const SizeCheckpoint* find(int microbatch_size) const;
};

/// Format tag of the side file.
inline constexpr const char* kMeasureCheckpointFormat = "stagecut.profile-progress/2";
/// The version before the digest: refused, its samples could have been edited unseen.
inline constexpr const char* kMeasureCheckpointFormatV1 = "stagecut.profile-progress/1";

/// "sha256:<hex>" of the side file's contents, every field but "digest" itself. The writer
/// records it and the reader recomputes it, so a hand-edited or forged file is refused.
std::string measureCheckpointDigest(const nlohmann::json& document);

nlohmann::json measureCheckpointToJson(const MeasureCheckpoint& checkpoint);

/// Reads a side file written by measureCheckpointToJson, strictly: its digest, every field (none
/// unknown), each microbatch size once and one layer count for all sizes. Throws Error (input)
/// naming `source` when it is not one (a damaged side file is better re-measured than trusted).
MeasureCheckpoint measureCheckpointFromJson(const nlohmann::json& document, const std::string& source);

}  // namespace stagecut
