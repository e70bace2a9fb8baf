#include "profiler/clock_warmup.h"

#include <algorithm>
#include <vector>

namespace stagecut {

ClockWarmup warmUntilSteady(RegionTimer& timer, const std::function<void()>& work, const ClockWarmupOptions& options) {
  ClockWarmup result;
  std::vector<double> samples;
  while (true) {
    timer.start();
    work();
    const double ms = timer.stopMs();
    samples.push_back(ms);
    result.seconds += ms / 1000.0;
    const int count = static_cast<int>(samples.size());
    if (count >= std::max(options.min_samples, options.window)) {
      const auto last = samples.end() - options.window;
      const double low = *std::min_element(last, samples.end());
      const double high = *std::max_element(last, samples.end());
      result.steady_ms = low;
      if (high <= low * (1.0 + options.tolerance)) {
        result.steady = true;
        break;
      }
    }
    if (result.seconds >= options.max_seconds) break;
  }
  result.first_ms = samples.front();
  result.samples = static_cast<int>(samples.size());
  if (result.steady_ms == 0.0) result.steady_ms = samples.back();
  return result;
}

}  // namespace stagecut
