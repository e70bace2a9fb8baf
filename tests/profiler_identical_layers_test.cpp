#include <catch2/catch.hpp>

#include <algorithm>

#include "core/profile.h"
#include "profiler/layer_chain.h"
#include "profiler/layer_profiler.h"
#include "profiler/profile_request.h"
#include "profiler/torch_runtime.h"
#include "profiler/zoo.h"

namespace {

stagecut::ZooOptions tinyGpt(int blocks) {
  stagecut::ZooOptions zoo;
  zoo.family = "gpt";
  zoo.preset = "gpt-tiny";
  zoo.layers = blocks;
  zoo.seq = 16;
  zoo.hidden = 32;
  zoo.heads = 2;
  zoo.vocab = 128;
  return zoo;
}

stagecut::Profile profileOf(int blocks, bool time_every_layer) {
  stagecut::ProfileRequest request;
  request.zoo = tinyGpt(blocks);
  request.measure.microbatch_size = 2;
  request.measure.min_repeats = 2;
  request.measure.max_repeats = 2;
  request.measure.time_every_layer = time_every_layer;
  return stagecut::runProfile(request);
}

}  // namespace

TEST_CASE("a run of identical blocks is timed on its first, middle and last", "[profiler][identical]") {
  const stagecut::LayerChain chain = stagecut::buildZooModel(tinyGpt(8));  // embed, block.0-7, head, loss
  const auto times_from = stagecut::identicalLayerSamples(chain, false);
  REQUIRE(times_from.size() == 11u);
  const std::vector<int> sample = {1, 5, 8};
  for (int i = 0; i < 11; ++i) {
    INFO("layer " << i);
    const bool copied = i >= 1 && i <= 8 && std::find(sample.begin(), sample.end(), i) == sample.end();
    CHECK(times_from[static_cast<std::size_t>(i)] == (copied ? sample : std::vector<int>{}));
  }
  for (const auto& from : stagecut::identicalLayerSamples(chain, true)) CHECK(from.empty());
  // Three blocks: the sample would be all of them.
  for (const auto& from : stagecut::identicalLayerSamples(stagecut::buildZooModel(tinyGpt(3)), false)) {
    CHECK(from.empty());
  }
}

TEST_CASE("layers that differ in shape are never copied from each other", "[profiler][identical]") {
  stagecut::LayerChain chain = stagecut::buildZooModel(tinyGpt(6));
  chain.layers[3].signature += " (another width)";
  const auto times_from = stagecut::identicalLayerSamples(chain, false);
  // Layers 1, 2, 4, 5, 6 stay a group of 5, timed on 1, 4 (the middle) and 6; layer 3 alone.
  CHECK(times_from[3].empty());
  CHECK(times_from[4].empty());
  CHECK(times_from[2] == std::vector<int>{1, 4, 6});
  CHECK(times_from[5] == std::vector<int>{1, 4, 6});
}

TEST_CASE("copied layers take the timed ones' pooled samples and their memory", "[profiler][identical]") {
  stagecut::pinThreads(1);
  const stagecut::Profile profile = profileOf(6, false);  // blocks at layers 1-6; timed 1, 4, 6
  const std::vector<int> sample = {1, 4, 6};
  double fastest = 1e9, slowest = 0;
  for (int from : sample) {
    const auto& timed = profile.layers[static_cast<std::size_t>(from)];
    CHECK_FALSE(timed.times_from.has_value());
    CHECK(timed.forward_ms.repeats == 2);
    fastest = std::min(fastest, timed.forward_ms.min);
    slowest = std::max(slowest, timed.forward_ms.max);
  }
  // Memory is measured once per group, on its first layer: the other samples take it too.
  for (int other : {4, 6}) {
    CHECK(profile.layers[static_cast<std::size_t>(other)].activation_bytes == profile.layers[1].activation_bytes);
    CHECK(profile.layers[static_cast<std::size_t>(other)].weight_pending_bytes == profile.layers[1].weight_pending_bytes);
  }
  // On the CPU no warm-up pass runs by default: the memory sweep has run every kind of layer.
  CHECK(profile.run.warmup == 0);
  for (int copy : {2, 3, 5}) {
    INFO("layer " << copy);
    const auto& layer = profile.layers[static_cast<std::size_t>(copy)];
    REQUIRE(layer.times_from.has_value());
    CHECK(*layer.times_from == sample);
    CHECK(layer.forward_ms.repeats == 6);  // 2 samples of each of the 3
    CHECK(layer.forward_ms.min == fastest);
    CHECK(layer.forward_ms.max == slowest);
    CHECK(layer.activation_bytes == profile.layers[1].activation_bytes);
    CHECK(layer.backward_transient_bytes == profile.layers[1].backward_transient_bytes);
  }

  const stagecut::Profile every = profileOf(6, true);
  for (const auto& layer : every.layers) CHECK_FALSE(layer.times_from.has_value());
}
