// A model family of the tests' own, added as docs/extending.md says a family is added: this one
// file (its layers' descriptions, its checks and its entry) and one line that registers it. It is
// compiled into stagecut_tiny_family, the stagecut-torch command line plus this file, so that
// profile, partition and validate run it as they run a built-in family
// (tests/runtime_tiny_family_test.cpp).
//
// resmlp: an input projection, `layers` identical residual blocks x + tanh(W x) of `hidden`
// features, a head to `classes` logits and a cross-entropy loss.

#include "profiler/model_families.h"
#include "profiler/recorded_config.h"
#include "profiler/zoo_builders.h"
#include "profiler/zoo_checks.h"

namespace {

using stagecut::LayerChain;
using stagecut::ZooOptions;

// Features of the samples the family makes; --hidden is the blocks' width.
constexpr int kInputFeatures = 8;
constexpr int kClasses = 4;

struct ResidualTanhImpl : torch::nn::Module {
  explicit ResidualTanhImpl(int64_t width) : linear(register_module("linear", torch::nn::Linear(width, width))) {}
  torch::Tensor forward(const torch::Tensor& x) { return x + torch::tanh(linear(x)); }
  torch::nn::Linear linear;
};
TORCH_MODULE(ResidualTanh);

int blocksOf(const ZooOptions& options) { return options.layers ? options.layers : 4; }
int widthOf(const ZooOptions& options) { return options.hidden ? options.hidden : 16; }

void checkResmlp(const ZooOptions& options) {
  stagecut::requireSize("--layers", blocksOf(options), 64);
  stagecut::requireSize("--hidden", widthOf(options), 1024);
}

LayerChain describeResmlp(const ZooOptions& options) {
  const int blocks = blocksOf(options);
  const int width = widthOf(options);
  LayerChain chain;
  chain.model_name = "resmlp";
  chain.source = stagecut::zooSource("resmlp");
  ZooOptions settings;
  settings.layers = blocks;
  settings.hidden = width;
  settings.seed = options.seed;
  chain.config = stagecut::recordZooConfig(settings);
  stagecut::addLayer(chain, options.seed, "embed", "Linear",
                     [width] { return torch::nn::Linear(kInputFeatures, width); });
  for (int i = 0; i < blocks; ++i) {
    stagecut::addLayer(chain, options.seed, "block." + std::to_string(i), "ResidualTanh",
                       [width] { return ResidualTanh(width); });
    chain.layers.back().signature = "resmlp block " + std::to_string(width);
  }
  stagecut::addLayer(chain, options.seed, "head", "Linear", [width] { return torch::nn::Linear(width, kClasses); });
  chain.layers.push_back(
      stagecut::lossLayer("loss", "CrossEntropyLoss", [](const torch::Tensor& logits, const torch::Tensor& target) {
        return torch::nn::functional::cross_entropy(logits, target);
      }));
  chain.make_batch = [](int rows, std::uint64_t seed) {
    auto generator = stagecut::seededGenerator(seed);
    stagecut::ChainBatch batch;
    batch.input = torch::randn({rows, kInputFeatures}, generator);
    batch.target = torch::randint(0, kClasses, {rows}, generator, torch::kLong);
    return batch;
  };
  return chain;
}

stagecut::ModelFamily resmlpFamily() {
  stagecut::ModelFamily family;
  family.name = "resmlp";
  family.settings = {"layers", "hidden"};
  family.check = checkResmlp;
  family.describe = describeResmlp;
  return family;
}

// The registry line: at start-up, before the command line is read.
[[maybe_unused]] const bool kResmlpRegistered = (stagecut::addModelFamily(resmlpFamily()), true);

}  // namespace
