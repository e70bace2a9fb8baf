#pragma once

// The profiler's entry point, free of LibTorch headers so that the CLI compiles fast.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/profile.h"
#include "profiler/measure_checkpoint.h"
#include "profiler/round_pace.h"
#include "profiler/zoo.h"

namespace stagecut {

/// Where the profiler is in its rounds, for a progress bar.
struct MeasureProgress {
  int round = 0;        ///< 0-based timed round; 0 during the warm-up
  bool warmup = false;  ///< an untimed whole-model pass (layer 0, named "whole model")
  int rounds_at_least = 0;  ///< timed rounds
  int layer = 0;        ///< 0-based index of the layer being timed
  int layers = 0;
  std::string layer_name;
  double elapsed_s = 0.0;
  double estimated_left_s = -1.0;  ///< for the minimum number of rounds; more may follow; < 0: not known yet
  int microbatch_size = 0;
  int size_position = 0;  ///< 0-based position of microbatch_size among the sizes measured
  int sizes = 1;
};

/// How to time: warm-up rounds, then rounds until every layer's coefficient of variation is under
/// `cv_target` (after at least `min_repeats`), its time budget is spent, or `max_repeats` ran.
/// Each round times the whole model once, then every layer, so that drift hits both alike.
inline constexpr int kAutoWarmupPasses = -1;

struct MeasureOptions {
  int microbatch_size = 4;
  /// Untimed whole-model passes before the rounds; kAutoWarmupPasses: none on the CPU, where the
  /// memory sweep before the rounds has run every kind of layer's forward and backward, one on a
  /// GPU (its caching allocator grows to the model's peak in the first pass).
  int warmup_rounds = kAutoWarmupPasses;
  int min_repeats = 3;
  int max_repeats = 30;
  double cv_target = 0.03;
  double budget_s_per_layer = 3.0;
  std::uint64_t seed = 0;
  /// Also time each layer's forward under no_grad: the extra forward that activation
  /// checkpointing runs (recompute_ms).
  bool recompute = false;
  /// Time every layer, even where identical layers (same ChainLayer::signature) could be timed
  /// for a sample: the first, the middle and the last of 4 or more (identicalLayerSamples).
  bool time_every_layer = false;
  /// The machine's pace between rounds, and what an odd phase does (profiler/round_pace.h).
  PaceOptions pace;
  /// Bytes the whole-model check may take, asked once the layers' memory is measured; empty or
  /// 0: no bound (the whole chain).
  std::function<std::uint64_t()> window_bytes;
  std::function<void(const MeasureProgress&)> on_progress;
  /// Polled before each timing: a signal number (SIGINT, SIGTERM) stops the run with
  /// Error::interrupted; 0 goes on.
  std::function<int()> stop_signal;
  /// Called after each timing with every sample of this size so far.
  std::function<void(const SizeCheckpoint&)> on_checkpoint;
  /// Samples of an earlier, interrupted run at this size to continue from; nullptr: none.
  const SizeCheckpoint* resume = nullptr;
};

/// What to profile and on what.
struct ProfileRequest {
  ZooOptions zoo;                  ///< used when torchscript_path is empty
  std::string torchscript_path;    ///< a torch.jit.save'd module whose children form a chain
  std::string input_spec;          ///< TorchScript sample input, e.g. "8x3x224x224:float32"
  std::string device = "cpu";      ///< "cpu", "cuda" or "cuda:K"
  /// "auto" (steady_clock on cpu, cuda-events on cuda), steady_clock (CPU), cuda-events or cupti
  /// (CUDA: kernel durations from CUPTI; see docs/profiler-gpu.md).
  std::string timer = "auto";
  int threads = 1;
  /// The precision the layers run in: "float32", "bfloat16", "float16" or a spelling
  /// core/precision.h knows; empty: the model's own (float32 for the zoo).
  std::string dtype;
  MeasureOptions measure;
  /// Microbatch sizes to measure, ascending; empty: measure.microbatch_size alone. With more than
  /// one, the profile lists every size (format 2) and its layers hold the largest.
  std::vector<int> microbatch_sizes;
  /// Called after each timing with every sample so far, over all sizes (for the side file).
  std::function<void(const MeasureCheckpoint&)> on_checkpoint;
  /// An interrupted run's samples to continue from.
  std::optional<MeasureCheckpoint> resume;
};

/// The zoo options a profile of `request` describes its model with (one layer at a time, the
/// host's share of a GPU run's memory): what its checks hold the model to.
ZooOptions profiledZooOptions(const ProfileRequest& request);

/// Builds or loads the model, pins threads, measures every layer and the whole model, and
/// returns the profile. Throws Error: kInput for bad requests (unknown model, bad input spec,
/// a module that is not a chain, an unknown --timer or one that does not fit the device,
/// --device cuda without a GPU or CUDA LibTorch); kRuntime when a CUDA driver or CUPTI call fails.
Profile runProfile(const ProfileRequest& request);

}  // namespace stagecut
