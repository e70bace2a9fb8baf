#include "profiler/model_fingerprint.h"

#include "core/json_document.h"
#include "core/sha256.h"

namespace stagecut {

std::string torchScriptFingerprint(const std::string& path) { return "sha256:" + sha256Hex(readTextFile(path)); }

std::string zooFingerprint(const std::string& source, const nlohmann::json& config) {
  return "sha256:" + sha256Hex(source + "\n" + config.dump());
}

}  // namespace stagecut
