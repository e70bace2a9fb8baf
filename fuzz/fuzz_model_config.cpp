// libFuzzer target: a profile's model.config as validate reads it before any rank starts
// (runtime/model_config.cpp, with the config's owner, profiler/recorded_config.cpp, and the zoo's
// checks it applies). The first byte picks the model source and whether a model.fingerprint is
// recorded; the rest is the config's JSON. An accepted zoo config must give options the zoo's own
// check passes; an accepted TorchScript one, an input spec --input would take.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/json_document.h"
#include "fuzz/fuzz_check.h"
#include "profiler/model_fingerprint.h"
#include "profiler/recorded_config.h"
#include "profiler/zoo_checks.h"
#include "runtime/model_config.h"

namespace {

// The built-in families as validate's checks see them: their descriptions need LibTorch, which
// the fuzz build leaves out, and the checks need none.
std::vector<stagecut::ModelFamily> checkedFamilies() {
  const auto family = [](const char* name, std::vector<std::string> presets, const char* default_preset,
                         bool tensor_parallel, void (*check)(const stagecut::ZooOptions&)) {
    stagecut::ModelFamily entry;
    entry.name = name;
    entry.presets = std::move(presets);
    entry.default_preset = default_preset;
    entry.tensor_parallel = tensor_parallel;
    entry.check = check;
    return entry;
  };
  return {family("mlp", {}, "", false, stagecut::checkMlp),
          family("gpt", stagecut::gptPresets(), stagecut::kGptDefaultPreset, true, stagecut::checkGpt),
          family("llama", stagecut::llamaPresets(), stagecut::kLlamaDefaultPreset, true, stagecut::checkLlama),
          family("vgg16", {}, "", false, stagecut::checkVgg16)};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  static const char* const kSources[] = {"zoo:gpt",          "zoo:mlp", "zoo:vgg16", "zoo:llama",
                                         "torchscript:m.pt", "zoo:",    "import:x"};
  static const std::vector<stagecut::ModelFamily> families = checkedFamilies();
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  stagecut::fuzz::expectCleanOutcome([&] {
    stagecut::Profile profile;
    profile.model.source = kSources[data[0] % 7];
    profile.model.config = stagecut::parseJsonDocument(text, "fuzz.json");
    if (data[0] & 0x80) profile.model.fingerprint = stagecut::zooFingerprint(profile.model.source, profile.model.config);
    if (data[0] & 0x40) profile.model.fingerprint = "sha256:0";
    stagecut::checkModelConfig(profile, "fuzz.json", families);
    if (const auto family = stagecut::zooFamilyOfSource(profile.model.source)) {
      stagecut::checkZooOptions(families, stagecut::readZooConfig(*family, profile.model.config, "fuzz.json"));
      if (data[0] & 0x40) stagecut::fuzz::finding("a zoo config accepted against another fingerprint");
    } else {
      const stagecut::InputSpec spec = stagecut::readInputSpec(profile.model.config, "fuzz.json");
      if (spec.shape.empty()) stagecut::fuzz::finding("a TorchScript input without dimensions accepted");
    }
  });
  return 0;
}
