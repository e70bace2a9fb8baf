// libFuzzer target: the side file of an interrupted profile (profile --resume reads it,
// profiler/measure_checkpoint.cpp). An input without a "digest" is sealed with its correct one
// first, so that the checks behind the digest are what the fuzzer reaches. An accepted file must
// hold usable sizes (1 to 999999999), each once, one layer count for the sizes begun, samples for
// every unit of a size marked complete, and writing what was read must read back the same.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/json_document.h"
#include "fuzz/fuzz_check.h"
#include "profiler/measure_checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  stagecut::fuzz::expectCleanOutcome([&] {
    nlohmann::json document = stagecut::parseJsonDocument(text, "fuzz.resume.json");
    if (document.is_object() && !document.contains("digest")) {
      document["digest"] = stagecut::measureCheckpointDigest(document);
    }
    const stagecut::MeasureCheckpoint checkpoint = stagecut::measureCheckpointFromJson(document, "fuzz.resume.json");
    std::size_t layer_count = 0;
    for (const auto& entry : checkpoint.sizes) {
      if (&entry != checkpoint.find(entry.microbatch_size)) stagecut::fuzz::finding("a microbatch size listed twice");
      if (!entry.layers.empty() && layer_count != 0 && entry.layers.size() != layer_count) {
        stagecut::fuzz::finding("sizes with different layer counts");
      }
      if (!entry.layers.empty()) layer_count = entry.layers.size();
      if (entry.microbatch_size < 1 || entry.microbatch_size > 999999999) {
        stagecut::fuzz::finding("microbatch size " + std::to_string(entry.microbatch_size) + " accepted");
      }
      if (!entry.complete) continue;
      if (entry.layers.empty() || entry.whole.repeats() == 0) stagecut::fuzz::finding("a complete size without samples");
      for (const auto& layer : entry.layers) {
        if (layer.repeats() == 0) stagecut::fuzz::finding("a complete size with a layer without samples");
      }
    }
    const nlohmann::json written = stagecut::measureCheckpointToJson(checkpoint);
    const nlohmann::json again =
        stagecut::measureCheckpointToJson(stagecut::measureCheckpointFromJson(written, "written.resume.json"));
    if (written != again) stagecut::fuzz::finding("a side file that does not read back as written");
  });
  return 0;
}
