// libFuzzer target: the side file of an interrupted profile (profile --resume reads it,
// profiler/measure_checkpoint.cpp). An accepted file must hold usable sizes (1 to 999999999), a
// size marked complete must have samples for every unit, and writing what was read must read back
// the same.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/json_document.h"
#include "fuzz/fuzz_check.h"
#include "profiler/measure_checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  stagecut::fuzz::expectCleanOutcome([&] {
    const nlohmann::json document = stagecut::parseJsonDocument(text, "fuzz.resume.json");
    const stagecut::MeasureCheckpoint checkpoint = stagecut::measureCheckpointFromJson(document, "fuzz.resume.json");
    for (const auto& entry : checkpoint.sizes) {
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
