#pragma once

#include "core/profile.h"
#include "profiler/profile_request.h"
#include "profiler/torch_runtime.h"

namespace stagecut::testing {

/// A profile of the zoo's MLP (`layers` linear layers of width 16 and the loss, weights from
/// `seed`), measured in one round at 2 rows per microbatch: a chain for runs whose timings do not
/// matter, built in milliseconds.
inline Profile quickMlpProfile(int layers, int seed) {
  ProfileRequest request;
  request.zoo.family = "mlp";
  request.zoo.layers = layers;
  request.zoo.hidden = 16;
  request.zoo.seed = seed;
  request.measure.microbatch_size = 2;
  request.measure.warmup_rounds = 0;
  request.measure.min_repeats = 1;
  request.measure.max_repeats = 1;
  return runProfile(request);
}

}  // namespace stagecut::testing
