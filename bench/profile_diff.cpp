// Compares two profiles of the same model layer by layer: how far apart their medians are.
// Used by bench/profiler_repeatability.sh to check that two runs of one command agree.
#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "core/profile_json.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: profile_diff FIRST.json SECOND.json\n");
    return 2;
  }
  try {
    const auto first = stagecut::readProfileFile(argv[1]);
    const auto second = stagecut::readProfileFile(argv[2]);
    if (first.layers.size() != second.layers.size()) {
      std::fprintf(stderr, "profile_diff: the profiles have %zu and %zu layers\n", first.layers.size(),
                   second.layers.size());
      return 2;
    }
    std::printf("%-12s %10s %10s %8s %10s %10s %8s\n", "layer", "fwd 1", "fwd 2", "diff", "bwd 1", "bwd 2", "diff");
    double worst = 0;
    int compared = 0;
    for (std::size_t i = 0; i < first.layers.size(); ++i) {
      const auto& a = first.layers[i];
      const auto& b = second.layers[i];
      const double forward_diff = std::abs(a.forward_ms.median - b.forward_ms.median) / a.forward_ms.median;
      const double backward_diff =
          a.backward_ms.median > 0 ? std::abs(a.backward_ms.median - b.backward_ms.median) / a.backward_ms.median : 0;
      std::printf("%-12s %10.3f %10.3f %7.1f%% %10.3f %10.3f %7.1f%%\n", a.name.c_str(), a.forward_ms.median,
                  b.forward_ms.median, 100 * forward_diff, a.backward_ms.median, b.backward_ms.median,
                  100 * backward_diff);
      // The repeatability target is for layers longer than 1 ms; shorter ones are shown only.
      if (a.forward_ms.median > 1.0) worst = std::max(worst, forward_diff), ++compared;
      if (a.backward_ms.median > 1.0) worst = std::max(worst, backward_diff), ++compared;
    }
    std::printf("largest difference over %d figures longer than 1 ms: %.1f%%\n", compared, 100 * worst);
    if (first.whole_model && second.whole_model) {
      std::printf("layers' sum vs whole model: %+.1f%% and %+.1f%%\n", 100 * first.whole_model->sum_of_layers_vs_whole,
                  100 * second.whole_model->sum_of_layers_vs_whole);
    }
  } catch (const stagecut::Error& e) {
    std::fprintf(stderr, "profile_diff: %s\n", e.what());
    return 2;
  }
  return 0;
}
