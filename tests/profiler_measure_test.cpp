#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "core/error.h"
#include "profiler/layer_memory.h"
#include "profiler/layer_profiler.h"
#include "profiler/memory_counter.h"
#include "profiler/torch_runtime.h"
#include "profiler/zoo.h"
#include "profiler/zoo_builders.h"

using stagecut::ChainLayer;
using stagecut::LayerChain;
using stagecut::MeasureOptions;
using stagecut::Profile;

namespace {

struct LinearGeluImpl : torch::nn::Module {
  LinearGeluImpl() : linear(register_module("linear", torch::nn::Linear(1024, 4096))) {}
  torch::Tensor forward(const torch::Tensor& x) { return torch::gelu(linear(x)); }
  torch::nn::Linear linear;
};
TORCH_MODULE(LinearGelu);

// A two-block zoo model at seq 16: small enough to profile in a test.
stagecut::ZooOptions twoBlockZooOptions(const std::string& family, const std::string& preset) {
  stagecut::ZooOptions zoo;
  zoo.family = family;
  zoo.preset = preset;
  zoo.layers = 2;
  zoo.seq = 16;
  return zoo;
}

MeasureOptions quickOptions() {
  MeasureOptions options;
  options.microbatch_size = 2;
  options.warmup_rounds = 1;
  options.min_repeats = 3;
  options.max_repeats = 3;
  return options;
}

}  // namespace

TEST_CASE("activation bytes of Linear + GELU are the tensors it saves", "[profiler][memory]") {
  stagecut::pinThreads(1);
  LayerChain chain;
  stagecut::addLayer(chain, 0, "fc", "Linear+GELU", [] { return LinearGelu(); });
  stagecut::buildAllLayers(chain);
  const ChainLayer& layer = chain.layers.front();
  const torch::Tensor input = torch::randn({64, 1024});
  // Linear saves its input (64 x 1024 floats) for the weight gradient; GELU saves its input, the
  // Linear's output (64 x 4096 floats). The GELU output goes to the next layer and is not counted.
  const double saved = 4.0 * (64 * 1024 + 64 * 4096);
  const double measured = static_cast<double>(stagecut::measureActivationBytes(layer, input, {}));
  CHECK(measured == Approx(saved).epsilon(0.2));
}

TEST_CASE("a layer that saves nothing keeps no activation bytes", "[profiler][memory]") {
  ChainLayer scale;
  scale.name = "scale";
  scale.forward = [](const torch::Tensor& x, const torch::Tensor&) { return x * 2.0; };
  CHECK(stagecut::measureActivationBytes(scale, torch::randn({256, 256}), {}) == 0u);
}

TEST_CASE("a measured profile has every layer with consistent figures", "[profiler][measure]") {
  stagecut::pinThreads(1);
  stagecut::ZooOptions zoo;
  zoo.family = "mlp";
  zoo.layers = 3;
  zoo.hidden = 64;
  LayerChain chain = stagecut::buildZooModel(zoo);
  stagecut::SteadyClockTimer timer;
  std::vector<stagecut::MeasureProgress> progress;
  MeasureOptions options = quickOptions();
  options.on_progress = [&](const stagecut::MeasureProgress& step) { progress.push_back(step); };
  const Profile profile = stagecut::measureLayerChain(chain, options, timer);
  REQUIRE(profile.layers.size() == 4u);
  // One untimed whole-model pass, then three timed rounds over the four layers, in order.
  REQUIRE(progress.size() == 1u + 3u * 4u);
  CHECK(progress[0].warmup);
  CHECK(progress[0].layer_name == "whole model");
  for (std::size_t call = 1; call < progress.size(); ++call) {
    INFO("progress call " << call);
    CHECK_FALSE(progress[call].warmup);
    CHECK(progress[call].round == static_cast<int>((call - 1) / 4));
    CHECK(progress[call].layer == static_cast<int>((call - 1) % 4));
    CHECK(progress[call].rounds_at_least == 3);
  }
  // Nothing is timed before the first layer of the first round: no estimate, not a huge one.
  CHECK(progress[1].estimated_left_s < 0);
  CHECK(progress[2].estimated_left_s >= 0);
  // At the last layer of the last round a quarter of a round is left, and the run has spent at
  // least the whole round it scales from. (Set against the estimate after one layer instead,
  // this flaked: on layers of microseconds one preempted round outweighs the rest.)
  CHECK(progress.back().estimated_left_s <= 0.25 * progress.back().elapsed_s + 1e-9);
  for (const auto& layer : profile.layers) {
    INFO(layer.name);
    CHECK(layer.forward_ms.repeats == 3);
    CHECK(layer.forward_ms.median > 0);
    CHECK(layer.forward_ms.min <= layer.forward_ms.median);
    CHECK(layer.backward_ms.median > 0);
    REQUIRE(layer.backward_input_ms.has_value());
    REQUIRE(layer.backward_weight_ms.has_value());
  }
  // fc.k: 64 x 64 weights + 64 biases; the loss has none and no weight gradient.
  CHECK(profile.layers[0].params == 64u * 64u + 64u);
  CHECK(profile.layers[0].param_bytes == 4u * (64u * 64u + 64u));
  CHECK(profile.layers[3].params == 0u);
  CHECK(profile.layers[3].backward_weight_ms->median == 0.0);
  CHECK(profile.layers[0].output_bytes == 2u * 64u * 4u);
  CHECK(*profile.layers[0].output_shape == std::vector<std::int64_t>{2, 64});
  CHECK(profile.layers[3].output_shape->empty());
  REQUIRE(profile.whole_model.has_value());
  CHECK(profile.whole_model->forward_ms > 0);
  CHECK(profile.whole_model->in_chain_forward_ms.size() == profile.layers.size());
  CHECK(profile.whole_model->in_chain_backward_ms.size() == profile.layers.size());
  CHECK(profile.run.timer == "steady_clock");
  CHECK(profile.run.microbatch_size == 2);
  // B and W are timed as zero-bubble runs them, and W's gradients are not left on the model.
  CHECK(profile.run.weightTimedAfterInput());
  for (const auto& layer : chain.layers) {
    for (const auto& parameter : layer.parameters) CHECK_FALSE(parameter.grad().defined());
  }
}

TEST_CASE("the timed passes start with the gradient buffers held, and an embedding's backward is all W", "[profiler][measure]") {
  // A stage's weights hold their .grad from a step's first microbatch on; the first timed pass
  // must not be the one that allocates them (that doubled a llama3-70b block's W in it).
  stagecut::pinThreads(1);
  LayerChain chain = stagecut::buildZooModel(twoBlockZooOptions("llama", "llama-tiny"));
  stagecut::SteadyClockTimer timer;
  MeasureOptions options = quickOptions();
  options.warmup_rounds = 0;
  int checked_layers = 0;
  options.on_progress = [&](const stagecut::MeasureProgress& step) {
    if (step.warmup || step.round != 0) return;
    for (const auto& layer : chain.layers) {
      for (const auto& parameter : layer.parameters) {
        INFO(layer.name << " before the first pass's layer " << step.layer);
        CHECK(parameter.grad().defined());
      }
    }
    ++checked_layers;
  };
  const Profile profile = stagecut::measureLayerChain(chain, options, timer);
  CHECK(checked_layers == static_cast<int>(chain.layers.size()));
  // The embedding's input is token ids: its B has nothing to compute and its W is its backward,
  // the same samples (a W split off on its own re-made the whole table, 20 times the backward).
  const auto& embed = profile.layers.front();
  REQUIRE(embed.name == "embed");
  REQUIRE(embed.backward_weight_ms.has_value());
  CHECK(embed.backward_input_ms->median == 0.0);
  CHECK(embed.backward_weight_ms->median == embed.backward_ms.median);
  CHECK(embed.backward_weight_ms->repeats == embed.backward_ms.repeats);
  // A block's input takes a gradient: B and W are timed apart, and both do work.
  const auto& block = profile.layers[1];
  CHECK(block.backward_input_ms->median > 0.0);
  CHECK(block.backward_weight_ms->median > 0.0);
  CHECK(block.backward_weight_ms->median != block.backward_ms.median);
  for (const auto& layer : chain.layers) {
    for (const auto& parameter : layer.parameters) CHECK_FALSE(parameter.grad().defined());
  }
}

TEST_CASE("the whole-model pass times each layer in chain order", "[profiler][measure]") {
  // Each layer sleeps a known time in its forward and, through a hook on its output, at the start
  // of its backward: the in-chain medians must land on the right layers (the backward runs the
  // chain in reverse) and the whole pass must be their sum.
  stagecut::pinThreads(1);
  const std::vector<int> forward_sleep_ms = {2, 7, 12};
  const std::vector<int> backward_sleep_ms = {12, 7, 2};
  LayerChain chain;
  chain.model_name = "sleepers";
  for (std::size_t i = 0; i < forward_sleep_ms.size(); ++i) {
    ChainLayer layer;
    layer.name = "sleep." + std::to_string(i);
    auto weight = std::make_shared<torch::Tensor>(torch::ones({4, 4}).requires_grad_(true));
    layer.parameters = {*weight};
    layer.owner = weight;
    const int forward_ms = forward_sleep_ms[i];
    const int backward_ms = backward_sleep_ms[i];
    layer.forward = [weight, forward_ms, backward_ms](const torch::Tensor& x, const torch::Tensor&) {
      std::this_thread::sleep_for(std::chrono::milliseconds(forward_ms));
      torch::Tensor y = torch::matmul(x, *weight);
      if (y.requires_grad()) {  // not under the no-grad setup passes
        y.register_hook([backward_ms](torch::Tensor grad) {
          std::this_thread::sleep_for(std::chrono::milliseconds(backward_ms));
          return grad;
        });
      }
      return y;
    };
    chain.layers.push_back(layer);
  }
  chain.make_batch = [](int rows, std::uint64_t) { return stagecut::ChainBatch{torch::ones({rows, 4}), {}}; };
  stagecut::SteadyClockTimer timer;
  const Profile profile = stagecut::measureLayerChain(chain, quickOptions(), timer);
  REQUIRE(profile.whole_model.has_value());
  const auto& whole = *profile.whole_model;
  REQUIRE(whole.in_chain_forward_ms.size() == 3);
  REQUIRE(whole.in_chain_backward_ms.size() == 3);
  double forward_sum = 0, backward_sum = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    INFO("layer " << i);
    CHECK(whole.in_chain_forward_ms[i] >= forward_sleep_ms[i]);
    CHECK(whole.in_chain_backward_ms[i] >= backward_sleep_ms[i]);
    forward_sum += whole.in_chain_forward_ms[i];
    backward_sum += whole.in_chain_backward_ms[i];
  }
  // 5 ms apart by construction: a sleep's overshoot is far less, a swapped layer far more.
  CHECK(whole.in_chain_forward_ms[0] < whole.in_chain_forward_ms[1]);
  CHECK(whole.in_chain_forward_ms[1] < whole.in_chain_forward_ms[2]);
  CHECK(whole.in_chain_backward_ms[0] > whole.in_chain_backward_ms[1]);
  CHECK(whole.in_chain_backward_ms[1] > whole.in_chain_backward_ms[2]);
  // The layers' own figures are the pass's: each timed in the order a stage runs it.
  for (std::size_t i = 0; i < 3; ++i) {
    INFO("layer " << i);
    CHECK(profile.layers[i].forward_ms.median == whole.in_chain_forward_ms[i]);
    CHECK(profile.layers[i].backward_ms.median == whole.in_chain_backward_ms[i]);
    CHECK(profile.layers[i].forward_ms.repeats == profile.run.extra.at("whole_model_repeats").get<int>());
    // B and W split off the same graph, in the same pass: B runs the output's hook (its sleep).
    REQUIRE(profile.layers[i].backward_input_ms.has_value());
    CHECK(profile.layers[i].backward_input_ms->repeats == profile.layers[i].forward_ms.repeats);
    CHECK(profile.layers[i].backward_input_ms->median >= backward_sleep_ms[i]);
  }
  // The whole pass is the median of the per-round sums; with 3 rounds it is one of them.
  CHECK(whole.forward_ms == Approx(forward_sum).epsilon(0.25));
  CHECK(whole.backward_ms == Approx(backward_sum).epsilon(0.25));
  for (const auto& layer : chain.layers) {
    for (const auto& parameter : layer.parameters) CHECK_FALSE(parameter.grad().defined());
  }
}

TEST_CASE("what B keeps for W, counted inside a round, is what a split counted alone keeps", "[profiler][memory]") {
  // A profile resumed from a finished one runs no round: its B/W memory is counted by the split
  // alone, the independent count the rounds' must equal.
  stagecut::pinThreads(1);
  stagecut::ZooOptions zoo = twoBlockZooOptions("gpt", "gpt-tiny");
  zoo.hidden = 32;
  zoo.heads = 2;
  zoo.vocab = 128;
  LayerChain chain = stagecut::buildZooModel(zoo);
  MeasureOptions options = quickOptions();
  stagecut::SizeCheckpoint finished;
  options.on_checkpoint = [&finished](const stagecut::SizeCheckpoint& samples) { finished = samples; };
  stagecut::SteadyClockTimer timer;
  const Profile measured = stagecut::measureLayerChain(chain, options, timer);
  REQUIRE(finished.complete);
  options.on_checkpoint = {};
  options.resume = &finished;
  const Profile resumed = stagecut::measureLayerChain(chain, options, timer);
  bool some_pending = false;
  for (std::size_t i = 0; i < measured.layers.size(); ++i) {
    INFO(measured.layers[i].name);
    REQUIRE(measured.layers[i].weight_pending_bytes.has_value());
    CHECK(measured.layers[i].weight_pending_bytes == resumed.layers[i].weight_pending_bytes);
    some_pending = some_pending || *measured.layers[i].weight_pending_bytes > 0;
  }
  CHECK(some_pending);
}

TEST_CASE("B + W is close to the whole backward on a large layer", "[profiler][measure]") {
  // Loosely: on a layer dominated by two GEMMs (input grad, weight grad) their sum should be
  // within 35% of the backward that computes both: the bound allows the machine's noise.
  stagecut::pinThreads(1);
  LayerChain chain;
  chain.model_name = "linear";
  stagecut::addLayer(chain, 0, "fc", "Linear", [] { return torch::nn::Linear(1024, 1024); });
  chain.make_batch = [](int rows, std::uint64_t seed) {
    auto generator = stagecut::seededGenerator(seed);
    return stagecut::ChainBatch{torch::randn({rows, 1024}, generator), {}};
  };
  MeasureOptions options = quickOptions();
  options.microbatch_size = 512;
  options.min_repeats = 5;
  options.max_repeats = 5;
  stagecut::SteadyClockTimer timer;
  const Profile profile = stagecut::measureLayerChain(chain, options, timer);
  const auto& layer = profile.layers[0];
  const double split = layer.backward_input_ms->median + layer.backward_weight_ms->median;
  CHECK(split == Approx(layer.backward_ms.median).epsilon(0.35));
}

TEST_CASE("a CUDA memory counter counts what CUDA's allocator reports, and not the CPU's", "[profiler][memory]") {
  // The caching allocator reports each tensor's block through the same hook as the CPU
  // allocator, with a CUDA device: a fake report stands in for it where there is no GPU.
  stagecut::MemoryCounter cuda(c10::DeviceType::CUDA);
  int block = 0;
  const c10::Device gpu(c10::DeviceType::CUDA, 0);
  c10::reportMemoryUsageToProfiler(&block, 4096, 4096, 1 << 20, gpu);
  const torch::Tensor on_cpu = torch::ones({1024});
  CHECK(cuda.liveBytes() == 4096);
  c10::reportMemoryUsageToProfiler(&block, 2048, 6144, 1 << 20, gpu);
  c10::reportMemoryUsageToProfiler(&block, -6144, 0, 1 << 20, gpu);
  CHECK(cuda.liveBytes() == 0);
  CHECK(cuda.peakBytes() == 6144);
}
