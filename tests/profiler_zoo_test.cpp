#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>

#include <unistd.h>

#include "core/error.h"
#include "profiler/layer_chain.h"
#include "profiler/torch_runtime.h"
#include "profiler/zoo.h"
#include "tests/test_support.h"

using stagecut::buildZooModel;
using stagecut::LayerChain;
using stagecut::ZooOptions;
using Catch::Matchers::Contains;

namespace {

ZooOptions tinyGpt() {
  ZooOptions options;
  options.family = "gpt";
  options.preset = "gpt-tiny";
  options.layers = 2;
  options.seq = 16;
  options.vocab = 512;
  options.seed = 7;
  return options;
}

// A checksum that changes with any weight: sum of |w| and of w x position over all parameters.
double parameterChecksum(const LayerChain& chain) {
  double checksum = 0;
  int position = 1;
  for (const auto& parameter : chain.parameters()) {
    checksum += parameter.abs().sum().item<double>() +
                position++ * parameter.flatten().index({0}).item<double>();
  }
  return checksum;
}

}  // namespace

TEST_CASE("a gpt chain has embed, blocks, head and loss in order", "[profiler][zoo]") {
  stagecut::pinThreads(1);
  const LayerChain chain = buildZooModel(tinyGpt());
  std::vector<std::string> names;
  for (const auto& layer : chain.layers) names.push_back(layer.name);
  CHECK(names == std::vector<std::string>{"embed", "block.0", "block.1", "head", "loss"});
  const auto batch = chain.make_batch(3, 1);
  const auto loss = chain.forward(batch);
  CHECK(loss.numel() == 1);
  // An untrained model over 512 tokens is close to uniform: cross-entropy near ln(512).
  CHECK(loss.item<double>() == Approx(std::log(512.0)).epsilon(0.1));
}

TEST_CASE("the same seed builds the same weights and batches; another seed does not",
          "[profiler][zoo]") {
  const LayerChain first = buildZooModel(tinyGpt());
  const LayerChain second = buildZooModel(tinyGpt());
  CHECK(parameterChecksum(first) == parameterChecksum(second));
  CHECK(torch::equal(first.make_batch(2, 5).input, second.make_batch(2, 5).input));
  ZooOptions other = tinyGpt();
  other.seed = 8;
  CHECK(parameterChecksum(buildZooModel(other)) != parameterChecksum(first));
}

TEST_CASE("zoo weights are identical across processes", "[profiler][zoo]") {
  // The pipelined runtime builds each stage in its own process; they must agree on every weight.
  // Run this test binary again as a child that writes its checksum, and compare.
  const stagecut::testing::TempDir dir;
  const std::string command = "STAGECUT_CHECKSUM_FILE='" + dir.file("checksum") +
                              "' /proc/" + std::to_string(::getpid()) + "/exe '[.checksum-child]' >/dev/null 2>&1";
  REQUIRE(std::system(command.c_str()) == 0);
  std::FILE* file = std::fopen(dir.file("checksum").c_str(), "r");
  REQUIRE(file != nullptr);
  double other_process = 0;
  CHECK(std::fscanf(file, "%lf", &other_process) == 1);
  std::fclose(file);
  CHECK(other_process == parameterChecksum(buildZooModel(tinyGpt())));
}

TEST_CASE("writes the zoo checksum for the cross-process test", "[.checksum-child]") {
  const char* path = std::getenv("STAGECUT_CHECKSUM_FILE");
  REQUIRE(path != nullptr);
  std::FILE* file = std::fopen(path, "w");
  REQUIRE(file != nullptr);
  std::fprintf(file, "%.17g\n", parameterChecksum(buildZooModel(tinyGpt())));
  std::fclose(file);
}

TEST_CASE("every zoo family builds and runs forward and backward", "[profiler][zoo]") {
  for (const char* family : {"mlp", "vgg16"}) {
    INFO(family);
    ZooOptions options;
    options.family = family;
    options.image_size = 32;
    options.classes = 10;
    options.hidden = 32;
    const LayerChain chain = buildZooModel(options);
    const auto loss = chain.forward(chain.make_batch(2, 0));
    loss.backward();
    CHECK(std::isfinite(loss.item<double>()));
    for (const auto& parameter : chain.parameters()) CHECK(parameter.grad().defined());
  }
  ZooOptions vgg;
  vgg.family = "vgg16";
  vgg.image_size = 32;
  // 13 conv + 5 pools + 3 fully connected + the loss.
  CHECK(buildZooModel(vgg).layers.size() == 22u);
}

TEST_CASE("impossible zoo settings are rejected with the fix", "[profiler][zoo][errors]") {
  ZooOptions options = tinyGpt();
  options.heads = 3;
  CHECK_THROWS_WITH(buildZooModel(options),
                    "--hidden 128 is not divisible by --heads 3; pick a head count that divides the width");
  options = tinyGpt();
  options.preset = "gpt2-smal";
  CHECK_THROWS_WITH(buildZooModel(options), "--preset gpt2-smal: not a gpt preset, did you mean 'gpt2-small'?");
  options.family = "resnet";
  CHECK_THROWS_WITH(buildZooModel(options), "--model resnet: not a built-in model; use one of: mlp, gpt, llama, vgg16");
  ZooOptions vgg;
  vgg.family = "vgg16";
  vgg.image_size = 100;
  CHECK_THROWS_WITH(buildZooModel(vgg), Contains("use a multiple of 32"));
  // A preset of a family without presets was ignored; now it is named.
  for (const char* family : {"mlp", "vgg16"}) {
    ZooOptions presetless;
    presetless.family = family;
    presetless.preset = "gpt2-small";
    CHECK_THROWS_WITH(buildZooModel(presetless), "--preset gpt2-small: --model " + std::string(family) +
                                                     " has no presets (gpt and llama have them); size it with "
                                                     "its own flags, or leave --preset out");
  }
}
