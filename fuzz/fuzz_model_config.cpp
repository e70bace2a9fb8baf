// libFuzzer target: a profile's model.config as validate reads it before any rank starts
// (runtime/model_config.cpp, with the zoo's checks it applies). The first byte picks the model
// source and whether a model.fingerprint is recorded; the rest is the config's JSON. An accepted
// zoo config must give options the zoo's own check passes; an accepted TorchScript one, an input
// spec --input would take.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/json_document.h"
#include "fuzz/fuzz_check.h"
#include "profiler/model_fingerprint.h"
#include "runtime/model_config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  static const char* const kSources[] = {"zoo:gpt",          "zoo:mlp", "zoo:vgg16", "zoo:llama",
                                         "torchscript:m.pt", "zoo:",    "import:x"};
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  stagecut::fuzz::expectCleanOutcome([&] {
    stagecut::Profile profile;
    profile.model.source = kSources[data[0] % 7];
    profile.model.config = stagecut::parseJsonDocument(text, "fuzz.json");
    if (data[0] & 0x80) profile.model.fingerprint = stagecut::zooFingerprint(profile.model.source, profile.model.config);
    if (data[0] & 0x40) profile.model.fingerprint = "sha256:0";
    stagecut::checkModelConfig(profile, "fuzz.json");
    if (profile.model.source.rfind("zoo:", 0) == 0) {
      stagecut::checkZooOptions(stagecut::zooOptionsFromConfig(profile, "fuzz.json"));
      if (data[0] & 0x40) stagecut::fuzz::finding("a zoo config accepted against another fingerprint");
    } else {
      const stagecut::InputSpec spec = stagecut::inputSpecFromConfig(profile.model.config, "fuzz.json");
      if (spec.shape.empty()) stagecut::fuzz::finding("a TorchScript input without dimensions accepted");
    }
  });
  return 0;
}
