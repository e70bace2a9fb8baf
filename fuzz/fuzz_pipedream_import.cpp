// libFuzzer target: the PipeDream graph.txt importer. A graph it accepts must give a profile that
// stagecut's own reader accepts, as `stagecut import` checks before writing it.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/profile_json.h"
#include "fuzz/fuzz_check.h"
#include "partitioner/pipedream_import.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  stagecut::fuzz::expectCleanOutcome([&] {
    const stagecut::PipedreamImport imported = stagecut::importPipedreamGraph(text, "graph.txt");
    try {
      stagecut::profileFromJson(stagecut::profileToJson(imported.profile), "imported.json");
    } catch (const stagecut::Error& e) {
      stagecut::fuzz::finding(std::string("an imported graph gave a profile stagecut rejects: ") +
                              e.what());
    }
  });
  return 0;
}
