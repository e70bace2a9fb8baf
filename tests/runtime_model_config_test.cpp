#include <catch2/catch.hpp>

#include "core/error.h"
#include "core/parallel_degrees.h"
#include "core/profile.h"
#include "profiler/layer_chain.h"
#include "profiler/model_families.h"
#include "profiler/recorded_config.h"
#include "profiler/zoo.h"
#include "runtime/model_config.h"

namespace {

// What validate rebuilds a zoo model from: the profile's model.config, read back into options.
stagecut::ZooOptions roundTrip(const stagecut::ZooOptions& options) {
  return stagecut::readZooConfig(options.family, stagecut::buildZooModel(options).config, "p.json");
}

// checkModelConfig's refusal of a zoo profile with this config, "" when it accepts it.
std::string refusal(const std::string& family, const nlohmann::json& config) {
  stagecut::Profile profile;
  profile.model.source = stagecut::zooSource(family);
  profile.model.config = config;
  try {
    stagecut::checkModelConfig(profile, "p.json", stagecut::modelFamilies());
  } catch (const stagecut::Error& e) {
    return e.what();
  }
  return "";
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

TEST_CASE("every registered family's model.config describes the same model again", "[runtime][model-config]") {
  for (const stagecut::ModelFamily& family : stagecut::modelFamilies()) {
    INFO(family.name);
    stagecut::ZooOptions options;
    options.family = family.name;
    options.seed = 7;
    // Small shapes: a family's test preset ("gpt-tiny"), and the smallest image vgg16 takes.
    for (const std::string& preset : family.presets) {
      if (preset.size() > 5 && preset.compare(preset.size() - 5, 5, "-tiny") == 0) options.preset = preset;
    }
    options.image_size = family.takes("image_size") ? 32 : 0;
    const stagecut::LayerChain original = stagecut::describeZooModel(options);
    const stagecut::ZooOptions read = stagecut::readZooConfig(family.name, original.config, "p.json");
    CHECK(read.seed == 7);
    const stagecut::LayerChain again = stagecut::describeZooModel(read);
    CHECK(again.config == original.config);
    CHECK(again.fingerprint == original.fingerprint);
    CHECK(again.layers.size() == original.layers.size());
  }
}

TEST_CASE("a zoo model.config is read by its owner, the tensor-parallel degree included", "[runtime][model-config]") {
  stagecut::ZooOptions shard;
  shard.family = "llama";
  shard.preset = "llama-tiny";
  shard.parallel = {2, true};
  const nlohmann::json config = stagecut::describeZooModel(shard).config;
  CHECK(stagecut::readZooConfig("llama", config, "p.json").parallel == stagecut::ParallelDegrees{2, true});
  CHECK(refusal("llama", config) ==
        "p.json: its layers are tensor-parallel shards (profiled with --tensor-parallel 2), and validate runs each "
        "stage on one device without tensor parallelism; profile without --tensor-parallel to validate a split");
  CHECK(refusal("llama", {{"layers", 2}, {"tensor_parallel", "two"}}) ==
        "p.json: model.config field \"tensor_parallel\" must be a whole number from 1 to 1024, got \"two\"; profile "
        "the model again");
  CHECK(refusal("mlp", {{"layers", 2}, {"hidden", 8}, {"seed", 0}}).empty());
  CHECK(refusal("mlp", {{"rope_theta", -1}}) ==
        "p.json: model.config field \"rope_theta\" must be a number above 0, got -1; profile the model again");
  CHECK(refusal("mlp", {{"qkv_bias", 1}}) ==
        "p.json: model.config field \"qkv_bias\" must be true or false, got 1; profile the model again");
  CHECK(refusal("resnet", {{"layers", 2}}) ==
        "p.json: model.config describes no model stagecut can build (--model resnet: not a built-in model; use one "
        "of: mlp, gpt, llama, vgg16); profile the model again");
}
