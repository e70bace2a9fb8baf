#include <catch2/catch.hpp>

#include "core/profile.h"
#include "profiler/layer_chain.h"
#include "profiler/layer_profiler.h"
#include "profiler/profile_request.h"
#include "profiler/region_timer.h"
#include "profiler/torch_runtime.h"
#include "profiler/whole_model_window.h"
#include "profiler/zoo.h"

namespace {

stagecut::ZooOptions tinyLlama(int blocks) {
  stagecut::ZooOptions zoo;
  zoo.family = "llama";
  zoo.preset = "llama-tiny";
  zoo.layers = blocks;
  zoo.seq = 16;
  zoo.seed = 7;
  return zoo;
}

stagecut::LayerCost costOf(std::uint64_t resident, std::uint64_t transient = 0) {
  stagecut::LayerCost cost;
  cost.param_bytes = resident;
  cost.gradient_bytes = 0;
  cost.forward_transient_bytes = transient;
  return cost;
}

}  // namespace

TEST_CASE("a described layer built alone has the weights it has in the whole model", "[profiler][one-layer]") {
  const stagecut::LayerChain whole = stagecut::buildZooModel(tinyLlama(4));
  stagecut::LayerChain described = stagecut::describeZooModel(tinyLlama(4));
  for (const auto& layer : described.layers) CHECK((!layer.built() || !layer.build));
  // Built out of order and alone: block.2 first, then the head.
  for (const std::size_t index : {std::size_t{3}, std::size_t{5}}) {
    INFO(whole.layers[index].name);
    stagecut::buildLayer(described, index);
    const auto& built = described.layers[index].parameters;
    const auto& reference = whole.layers[index].parameters;
    REQUIRE(built.size() == reference.size());
    for (std::size_t k = 0; k < built.size(); ++k) CHECK(torch::equal(built[k], reference[k]));
    stagecut::releaseLayer(described, index);
    CHECK_FALSE(described.layers[index].built());
  }
  // Two blocks of one model draw different weights (a matrix: the norms start at ones in both).
  const auto firstMatrix = [](const stagecut::ChainLayer& layer) {
    for (const auto& parameter : layer.parameters) {
      if (parameter.dim() == 2) return parameter;
    }
    return torch::Tensor();
  };
  CHECK_FALSE(torch::equal(firstMatrix(whole.layers[1]), firstMatrix(whole.layers[2])));
}

TEST_CASE("the whole-model window is the longest run of layers that fits", "[profiler][one-layer]") {
  const std::vector<stagecut::LayerCost> layers = {costOf(50), costOf(10), costOf(10), costOf(10), costOf(60),
                                                   costOf(10), costOf(10)};
  CHECK(stagecut::wholeModelWindow(layers, 0) == std::pair<int, int>{0, 6});
  CHECK(stagecut::wholeModelWindow(layers, 160) == std::pair<int, int>{0, 6});
  // With 80: 0-3 (80) is the longest; 1-4 would hold 90.
  CHECK(stagecut::wholeModelWindow(layers, 80) == std::pair<int, int>{0, 3});
  CHECK(stagecut::wholeModelWindow(layers, 30) == std::pair<int, int>{1, 3});
  // The largest transient in the window counts once: 1-3 holds 30 and, with layer 2's 25 on top,
  // no longer fits 50.
  CHECK(stagecut::wholeModelWindow(layers, 50) == std::pair<int, int>{1, 3});
  std::vector<stagecut::LayerCost> with_transient = layers;
  with_transient[2] = costOf(10, 25);
  CHECK(stagecut::wholeModelWindow(with_transient, 50) == std::pair<int, int>{1, 2});
  // Nothing fits: one layer still.
  CHECK(stagecut::wholeModelWindow(layers, 1) == std::pair<int, int>{0, 0});
}

TEST_CASE("a pass over a window allocates its layers' kept bytes and its largest transient", "[profiler][one-layer]") {
  std::vector<stagecut::LayerCost> layers(4);
  for (std::size_t i = 0; i < layers.size(); ++i) {
    layers[i].param_bytes = 1000;  // held before the pass: not counted
    layers[i].activation_bytes = 10 * (i + 1);
    layers[i].output_bytes = 1;
  }
  layers[1].backward_transient_bytes = 70;
  layers[2].forward_transient_bytes = 50;
  layers[3].backward_transient_bytes = 500;  // outside the window below
  // Layers 1-2: kept 20 + 1 + 30 + 1, the larger transient 70.
  CHECK(stagecut::windowPassBytes(layers, {1, 2}) == 52u + 70u);
  CHECK(stagecut::windowPassBytes(layers, {0, 3}) == 104u + 500u);
}

TEST_CASE("a profile builds one layer at a time and, short of memory, checks a window of the model", "[profiler][one-layer]") {
  stagecut::ProfileRequest request;
  request.zoo = tinyLlama(6);
  request.measure.microbatch_size = 2;
  request.measure.warmup_rounds = 0;
  request.measure.min_repeats = 2;
  request.measure.max_repeats = 2;
  const stagecut::Profile whole = stagecut::runProfile(request);
  REQUIRE(whole.whole_model);
  CHECK(whole.whole_model->window.empty());
  CHECK(whole.whole_model->in_chain_forward_ms.size() == whole.layers.size());

  // A budget that holds the embedding and two blocks' worth.
  std::uint64_t budget = 0;
  for (int i = 0; i < 3; ++i) budget += stagecut::layerResidentBytes(whole.layers[i]);
  budget += budget / 10;
  request.measure.window_bytes = [budget] { return budget; };
  const stagecut::Profile windowed = stagecut::runProfile(request);
  REQUIRE(windowed.whole_model);
  const auto expected = stagecut::wholeModelWindow(windowed.layers, budget);
  REQUIRE(windowed.whole_model->window == std::vector<int>{expected.first, expected.second});
  CHECK(expected.second - expected.first + 1 < static_cast<int>(windowed.layers.size()));
  CHECK(windowed.whole_model->in_chain_forward_ms.empty());
  // Every layer is still timed or takes its sample's figures, and the copies their weights' count.
  for (std::size_t i = 0; i < windowed.layers.size(); ++i) {
    INFO(windowed.layers[i].name);
    CHECK(windowed.layers[i].params == whole.layers[i].params);
    CHECK(windowed.layers[i].forward_ms.repeats >= 2);
  }
}

TEST_CASE("the sweep for the inputs neither builds nor runs a copy of an identical block", "[profiler][one-layer]") {
  // 8 blocks: 1, 4 and 8 are timed, the other 5 copies. With a window of one layer (the
  // embedding), no copy is in a pass either: none may be built at all, and every figure still there.
  stagecut::LayerChain chain = stagecut::describeZooModel(tinyLlama(8));
  std::vector<int> builds(chain.layers.size(), 0);
  for (std::size_t i = 0; i < chain.layers.size(); ++i) {
    auto build = chain.layers[i].build;
    if (!build) continue;  // the loss: nothing to build
    chain.layers[i].build = [build, &builds, i](stagecut::ChainLayer& layer) {
      ++builds[i];
      build(layer);
    };
  }
  stagecut::MeasureOptions options;
  options.microbatch_size = 2;
  options.warmup_rounds = 0;
  options.min_repeats = 2;
  options.max_repeats = 2;
  options.window_bytes = [] { return std::uint64_t{1}; };
  stagecut::SteadyClockTimer timer;
  const stagecut::Profile profile = stagecut::measureLayerChain(chain, options, timer);
  REQUIRE(profile.layers.size() == chain.layers.size());
  int copies = 0;
  for (std::size_t i = 0; i < profile.layers.size(); ++i) {
    const auto& layer = profile.layers[i];
    INFO(layer.name);
    if (!layer.times_from) {
      CHECK((builds[i] >= 1 || !chain.layers[i].build));
      continue;
    }
    ++copies;
    CHECK(builds[i] == 0);
    // Its figures are its samples', its memory and output its group's first's.
    CHECK(layer.forward_ms.median > 0);
    CHECK(layer.activation_bytes == profile.layers[1].activation_bytes);
    CHECK(layer.output_bytes == profile.layers[1].output_bytes);
    CHECK(layer.params == profile.layers[1].params);
  }
  CHECK(copies == 5);
}
