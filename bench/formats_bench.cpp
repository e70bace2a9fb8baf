// How long the profile reader and writer take on large chains (an imported graph can have
// tens of thousands of nodes): prints the median of repeated runs and the per-layer cost.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <utility>
#include <vector>

#include "core/json_document.h"
#include "core/profile_json.h"
#include "core/sample_stats.h"

namespace {

stagecut::Profile syntheticProfile(int layers) {
  stagecut::Profile profile;
  profile.model.name = "bench-chain";
  profile.device.kind = "cpu";
  for (int i = 0; i < layers; ++i) {
    stagecut::LayerCost layer;
    layer.index = i;
    layer.name = "block." + std::to_string(i);
    layer.kind = "TransformerBlock";
    layer.forward_ms = {1.0 + i % 7, 0.9, 1.2 + i % 7, 0.02};
    layer.backward_ms = {2.0 + i % 5, 1.9, 2.4 + i % 5, 0.03};
    layer.backward_input_ms = layer.forward_ms;
    layer.backward_weight_ms = layer.forward_ms;
    layer.params = 7'000'000;
    layer.param_bytes = 28'000'000;
    layer.activation_bytes = 50'000'000;
    layer.output_bytes = 6'291'456;
    layer.output_shape = std::vector<std::int64_t>{4, 512, 768};
    profile.layers.push_back(layer);
  }
  return profile;
}

template <typename Fn>
double medianMs(int repeats, Fn&& fn) {
  std::vector<double> samples;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    samples.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  return stagecut::medianOf(std::move(samples));
}

}  // namespace

int main() {
  std::printf("%10s %14s %14s %16s\n", "layers", "write ms", "read ms", "read us/layer");
  for (int layers : {100, 1000, 10000, 100000}) {
    const stagecut::Profile profile = syntheticProfile(layers);
    std::string text;
    const int repeats = layers >= 100000 ? 5 : 11;
    const double write_ms = medianMs(repeats, [&] {
      text = stagecut::toJsonText(stagecut::profileToJson(profile));
    });
    std::size_t read_layers = 0;
    const double read_ms = medianMs(repeats, [&] {
      read_layers = stagecut::profileFromJson(stagecut::parseJsonDocument(text, "bench"), "bench")
                        .layerCount();
    });
    if (read_layers != profile.layerCount()) return 1;
    std::printf("%10d %14.2f %14.2f %16.2f\n", layers, write_ms, read_ms, 1000.0 * read_ms / layers);
  }
  return 0;
}
