#include <catch2/catch.hpp>

#include "core/profile.h"
#include "profiler/layer_chain.h"
#include "profiler/zoo.h"
#include "runtime/model_config.h"

namespace {

// What validate rebuilds a zoo model from: the profile's model.config, read back into options.
stagecut::ZooOptions roundTrip(const stagecut::ZooOptions& options) {
  stagecut::Profile profile;
  profile.model.source = "zoo:" + options.family;
  profile.model.config = stagecut::buildZooModel(options).config;
  return stagecut::zooOptionsFromConfig(profile, "p.json");
}

}  // namespace

TEST_CASE("a llama's model.config rebuilds the same model, its q/k/v biases included", "[runtime][model-config]") {
  stagecut::ZooOptions qwen;
  qwen.family = "llama";
  qwen.preset = "qwen2.5-7b";  // the preset with q/k/v biases
  qwen.layers = 1;
  qwen.hidden = 64;
  qwen.heads = 4;
  qwen.kv_heads = 2;
  qwen.ffn = 176;
  qwen.vocab = 512;
  qwen.seq = 16;
  const stagecut::LayerChain original = stagecut::buildZooModel(qwen);
  const stagecut::LayerChain rebuilt = stagecut::buildZooModel(roundTrip(qwen));
  CHECK(rebuilt.config == original.config);
  CHECK(rebuilt.fingerprint == original.fingerprint);
  REQUIRE(rebuilt.parameters().size() == original.parameters().size());
  for (std::size_t i = 0; i < original.parameters().size(); ++i) {
    CHECK(rebuilt.parameters()[i].sizes() == original.parameters()[i].sizes());
    CHECK(rebuilt.parameters()[i].equal(original.parameters()[i]));
  }
}
