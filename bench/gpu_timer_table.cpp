// Puts a --timer cuda-events profile and a --timer cupti profile of the same model side by side,
// layer by layer: CUDA-event time, CUPTI kernel time, and the share of the event time that
// kernels filled (the rest is launch latency and host work). Used by scripts/gpu-check.sh.
#include <cstdio>
#include <string>

#include "core/error.h"
#include "core/profile_json.h"

namespace {

double share(double kernel_ms, double event_ms) { return event_ms > 0 ? kernel_ms / event_ms : 0.0; }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: gpu_timer_table EVENTS.json CUPTI.json\n");
    return 2;
  }
  try {
    const auto events = stagecut::readProfileFile(argv[1]);
    const auto cupti = stagecut::readProfileFile(argv[2]);
    if (events.run.timer != "cuda-events" || cupti.run.timer != "cupti") {
      std::fprintf(stderr, "gpu_timer_table: expected a cuda-events and a cupti profile, got %s and %s\n",
                   events.run.timer.c_str(), cupti.run.timer.c_str());
      return 2;
    }
    if (events.layers.size() != cupti.layers.size()) {
      std::fprintf(stderr, "gpu_timer_table: the profiles have %zu and %zu layers\n", events.layers.size(),
                   cupti.layers.size());
      return 2;
    }
    std::printf("%s on %s\n", events.model.name.c_str(), events.device.name.c_str());
    std::printf("%-12s %11s %11s %7s %11s %11s %7s\n", "layer", "fwd event", "fwd kernel", "share", "bwd event",
                "bwd kernel", "share");
    double event_total = 0, kernel_total = 0;
    for (std::size_t i = 0; i < events.layers.size(); ++i) {
      const auto& e = events.layers[i];
      const auto& k = cupti.layers[i];
      std::printf("%-12s %11.3f %11.3f %6.0f%% %11.3f %11.3f %6.0f%%\n", e.name.c_str(), e.forward_ms.median,
                  k.forward_ms.median, 100 * share(k.forward_ms.median, e.forward_ms.median), e.backward_ms.median,
                  k.backward_ms.median, 100 * share(k.backward_ms.median, e.backward_ms.median));
      event_total += e.forward_ms.median + e.backward_ms.median;
      kernel_total += k.forward_ms.median + k.backward_ms.median;
    }
    std::printf("%-12s %11.3f ms of events, %.3f ms of kernels: %.0f%% of the GPU time is kernels\n", "all layers",
                event_total, kernel_total, 100 * share(kernel_total, event_total));
    // The cupti profile also holds, per layer, the event time of the very regions whose kernels
    // it summed: no run-to-run noise between the two columns.
    const auto breakdown = cupti.run.extra.find("cupti");
    if (breakdown != cupti.run.extra.end() && breakdown->contains("layers")) {
      // Beside them, the events run's event time of the same forward: what CUPTI's own
      // bookkeeping adds to a region's event time (about 35% per block forward on an H200).
      std::printf("\nsame regions, one run (%s), beside the events run's forward:\n", argv[2]);
      std::printf("%-12s %11s %11s %13s %12s %9s\n", "layer", "fwd event", "fwd kernel", "bwd kernel %",
                  "events run", "overhead");
      double cupti_events = 0, plain_events = 0;
      std::size_t index = 0;
      for (const auto& layer : (*breakdown)["layers"]) {
        const double under_cupti = layer.value("forward_event_ms", 0.0);
        const double plain = index < events.layers.size() ? events.layers[index].forward_ms.median : 0.0;
        cupti_events += under_cupti;
        plain_events += plain;
        std::printf("%-12s %11.3f %11.3f %12.0f%% %12.3f %+8.0f%%\n", layer.value("name", "?").c_str(), under_cupti,
                    layer.value("forward_kernel_ms", 0.0), 100 * layer.value("backward_kernel_share", 0.0), plain,
                    plain > 0 ? 100 * (under_cupti / plain - 1) : 0.0);
        ++index;
      }
      std::printf("%-12s forward events %.3f ms under CUPTI, %.3f ms without: %+.0f%%; partition on the events "
                  "profile\n",
                  "all layers", cupti_events, plain_events, plain_events > 0 ? 100 * (cupti_events / plain_events - 1) : 0.0);
      const auto dropped = breakdown->value("dropped_records", 0u);
      if (dropped > 0) std::printf("warning: CUPTI dropped %u kernel records; kernel sums are too small\n", dropped);
    }
  } catch (const stagecut::Error& e) {
    std::fprintf(stderr, "gpu_timer_table: %s\n", e.what());
    return 2;
  }
  return 0;
}
