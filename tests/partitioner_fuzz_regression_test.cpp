// Every input kept in data/fuzz/regressions/ (docs/reliability.md) goes back through the reader it
// broke, named by the file's prefix: profile_json-, partition_json-, pipedream_import-, units-,
// split_text-.
// Each must now end in a value or a stagecut::Error with a one-line message, never a crash, another
// exception or a sanitizer report (make test-asan runs this too).

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/json_document.h"
#include "core/partition_json.h"
#include "core/profile_json.h"
#include "core/units.h"
#include "partitioner/pipedream_import.h"
#include "fuzz/split_text_chain.h"
#include "partitioner/split_text.h"

namespace {

bool startsWith(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

// Feeds `content` to the reader `name` names, as the fuzz target of the same name does.
void feed(const std::string& name, const std::string& content) {
  if (startsWith(name, "profile_json-")) {
    const stagecut::Profile profile =
        stagecut::profileFromJson(stagecut::parseJsonDocument(content, name), name);
    stagecut::profileFromJson(stagecut::profileToJson(profile), name);
  } else if (startsWith(name, "partition_json-")) {
    const stagecut::Partition partition =
        stagecut::partitionFromJson(stagecut::parseJsonDocument(content, name), name);
    stagecut::partitionFromJson(stagecut::partitionToJson(partition), name);
    stagecut::checkPartitionCoversLayers(partition, 12, name);
  } else if (startsWith(name, "pipedream_import-")) {
    const stagecut::PipedreamImport imported = stagecut::importPipedreamGraph(content, name);
    stagecut::profileFromJson(stagecut::profileToJson(imported.profile), name);
  } else if (startsWith(name, "units-")) {
    if (content.empty()) return;
    const std::string text = content.substr(1);
    switch (static_cast<unsigned char>(content[0]) % 3) {
      case 0: stagecut::parseBytes(text, "--memory-cap"); break;
      case 1: stagecut::parseBandwidthBytesPerS(text, "--bandwidth"); break;
      default: stagecut::parseDurationMs(text, "--latency"); break;
    }
  } else if (startsWith(name, "split_text-")) {
    if (content.empty()) return;
    const std::vector<int> counts = stagecut::parseSplitText(
        content.substr(1), stagecut::fuzz::splitTextChain(), static_cast<unsigned char>(content[0]) % 11, "--split");
    int total = 0;
    for (int count : counts) {
      CHECK(count > 0);
      total += count;
    }
    CHECK(total == 9);
  } else {
    FAIL(name << ": name it after its fuzz target: profile_json-, partition_json-, "
                 "pipedream_import-, units- or split_text-");
  }
}

}  // namespace

TEST_CASE("every kept fuzz input ends in a value or a one-line Error", "[partitioner][fuzz][regression]") {
  std::vector<std::filesystem::path> inputs;
  for (const auto& entry :
       std::filesystem::directory_iterator(STAGECUT_SOURCE_DIR "/data/fuzz/regressions")) {
    if (entry.is_regular_file() && entry.path().filename() != "README.md") inputs.push_back(entry.path());
  }
  std::sort(inputs.begin(), inputs.end());
  CHECK(!inputs.empty());
  for (const auto& path : inputs) {
    const std::string name = path.filename().string();
    INFO(name);
    try {
      feed(name, stagecut::readTextFile(path.string()));
    } catch (const stagecut::Error& e) {
      const std::string message = e.what();
      CHECK(!message.empty());
      CHECK(message.find('\n') == std::string::npos);
    }
  }
}
