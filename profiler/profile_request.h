#pragma once

// The profiler's entry point, free of LibTorch headers so that the CLI compiles fast.

#include <cstdint>
#include <functional>
#include <string>

#include "core/profile.h"
#include "profiler/zoo.h"

namespace stagecut {

/// Where the profiler is in its rounds, for a progress bar.
struct MeasureProgress {
  int round = 0;        ///< 0-based, warm-up rounds included
  bool warmup = false;
  int rounds_at_least = 0;
  int layer = 0;        ///< 0-based index of the layer being timed
  int layers = 0;
  std::string layer_name;
  double elapsed_s = 0.0;
  double estimated_left_s = 0.0;  ///< for the minimum number of rounds; more may follow
};

/// How to time: warm-up rounds, then rounds until every layer's coefficient of variation is under
/// `cv_target` (after at least `min_repeats`), its time budget is spent, or `max_repeats` ran.
/// Each round times the whole model once, then every layer, so that drift hits both alike.
struct MeasureOptions {
  int microbatch_size = 4;
  int warmup_rounds = 1;
  int min_repeats = 3;
  int max_repeats = 30;
  double cv_target = 0.03;
  double budget_s_per_layer = 3.0;
  std::uint64_t seed = 0;
  std::function<void(const MeasureProgress&)> on_progress;
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
  MeasureOptions measure;
};

/// Builds or loads the model, pins threads, measures every layer and the whole model, and
/// returns the profile. Throws Error: kInput for bad requests (unknown model, bad input spec,
/// a module that is not a chain, an unknown --timer or one that does not fit the device,
/// --device cuda without a GPU or CUDA LibTorch); kRuntime when a CUDA driver or CUPTI call fails.
Profile runProfile(const ProfileRequest& request);

}  // namespace stagecut
