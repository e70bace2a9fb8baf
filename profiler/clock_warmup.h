#pragma once

// A GPU starts a run at its idle clock (an H200 read 345-390 MHz before the first kernel, 1980
// MHz after a second of work): layers timed first would be timed slower than those timed last.
// The profiler therefore repeats a fixed piece of work until its time stops falling.

#include <functional>

#include "profiler/region_timer.h"

namespace stagecut {

/// When the warm-up stops.
struct ClockWarmupOptions {
  int window = 3;            ///< the last `window` samples must agree...
  double tolerance = 0.02;   ///< ...within this fraction of their smallest
  int min_samples = 5;
  double max_seconds = 15.0;  ///< of summed sample time; then it stops unsteady
};

/// What the warm-up saw, in milliseconds of the fixed work.
struct ClockWarmup {
  double first_ms = 0.0;
  double steady_ms = 0.0;  ///< the smallest of the last window
  int samples = 0;
  double seconds = 0.0;    ///< summed sample time
  bool steady = false;     ///< false: max_seconds ran out first
};

/// Times `work` with `timer` until the last window of samples agree (ClockWarmupOptions) or the
/// time runs out. Exceptions from `work` or `timer` pass through.
ClockWarmup warmUntilSteady(RegionTimer& timer, const std::function<void()>& work,
                            const ClockWarmupOptions& options = {});

}  // namespace stagecut
