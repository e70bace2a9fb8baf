// libFuzzer target: the partition reader from file text to Partition (parseJsonDocument, then
// partitionFromJson and the coverage check against a profile). A partition it accepts must
// survive partitionToJson and a second read unchanged.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/json_document.h"
#include "core/partition_json.h"
#include "fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  stagecut::fuzz::expectCleanOutcome([&] {
    const stagecut::Partition partition = stagecut::partitionFromJson(
        stagecut::parseJsonDocument(text, "fuzz.json"), "fuzz.json");
    const std::string written = stagecut::toJsonText(stagecut::partitionToJson(partition));
    try {
      const stagecut::Partition again = stagecut::partitionFromJson(
          stagecut::parseJsonDocument(written, "again.json"), "again.json");
      if (!(again == partition)) stagecut::fuzz::finding("a partition changed through write and read");
    } catch (const stagecut::Error& e) {
      stagecut::fuzz::finding(std::string("an accepted partition was rejected after writing: ") +
                              e.what());
    }
    (void)partition.layersPerStage();
    stagecut::checkPartitionCoversLayers(partition, 12, "fuzz.json");
  });
  return 0;
}
