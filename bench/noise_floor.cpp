// How far this machine alone moves a timing. The same GEMM as a gpt2-small block's MLP
// up-projection at microbatch 4, seq 256 (1024x768 by 768x3072) is timed back to back for a few
// seconds with the profiler's thread and heap settings. bench/profiler_repeatability.sh runs it
// in a process before the first profile and in another after the second: how far the machine
// alone drifted while the two profiles ran, which no profiler setting can take out.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "core/sample_stats.h"
#include "profiler/torch_runtime.h"

int main(int argc, char** argv) {
  using Clock = std::chrono::steady_clock;
  const double seconds = argc > 1 ? std::atof(argv[1]) : 10.0;
  if (argc > 2 || !(seconds >= 1.0)) {
    std::fprintf(stderr, "usage: noise_floor [SECONDS >= 1, default 10]\n");
    return 2;
  }
  stagecut::pinThreads(1);
  stagecut::retainFreedMemory();
  const at::Tensor activations = at::randn({1024, 768});
  const at::Tensor weight = at::randn({768, 3072});
  for (int i = 0; i < 3; ++i) at::matmul(activations, weight);

  std::vector<double> times_ms;
  std::vector<double> window_medians_ms;  // per second: the machine's slow drift
  std::vector<double> window;
  const auto started = Clock::now();
  auto window_started = started;
  while (std::chrono::duration<double>(Clock::now() - started).count() < seconds) {
    const auto before = Clock::now();
    at::matmul(activations, weight);
    const auto after = Clock::now();
    const double ms = std::chrono::duration<double, std::milli>(after - before).count();
    times_ms.push_back(ms);
    window.push_back(ms);
    if (std::chrono::duration<double>(after - window_started).count() >= 1.0) {
      window_medians_ms.push_back(stagecut::summarizeSamples(window).median);
      window.clear();
      window_started = after;
    }
  }
  if (window_medians_ms.empty()) window_medians_ms.push_back(stagecut::summarizeSamples(window).median);
  const stagecut::TimeStatsMs all = stagecut::summarizeSamples(times_ms);
  const auto [lowest, highest] = std::minmax_element(window_medians_ms.begin(), window_medians_ms.end());
  std::printf("one GEMM, %zu runs in %.0f s: median %.3f ms, cv %.1f%%; medians of 1-s windows %.2f to %.2f ms (%.1f%% apart)\n",
              times_ms.size(), seconds, all.median, 100 * all.cv, *lowest, *highest, 100 * (*highest / *lowest - 1));
  return 0;
}
