// libFuzzer target: the profile reader from file text to Profile (parseJsonDocument, then
// profileFromJson). A profile it accepts must survive profileToJson and a second read unchanged,
// since every command writes what it read.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/json_document.h"
#include "core/profile_json.h"
#include "fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  stagecut::fuzz::expectCleanOutcome([&] {
    const stagecut::Profile profile =
        stagecut::profileFromJson(stagecut::parseJsonDocument(text, "fuzz.json"), "fuzz.json");
    const std::string written = stagecut::toJsonText(stagecut::profileToJson(profile));
    try {
      const stagecut::Profile again = stagecut::profileFromJson(
          stagecut::parseJsonDocument(written, "again.json"), "again.json");
      if (!(again.layers == profile.layers)) {
        stagecut::fuzz::finding("a profile's layers changed through write and read");
      }
    } catch (const stagecut::Error& e) {
      stagecut::fuzz::finding(std::string("an accepted profile was rejected after writing: ") +
                              e.what());
    }
  });
  return 0;
}
