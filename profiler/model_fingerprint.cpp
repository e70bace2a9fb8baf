#include "profiler/model_fingerprint.h"

#include <cstdint>
#include <limits>

#include "core/json_document.h"
#include "core/sha256.h"

namespace stagecut {

// A TorchScript module is as large as its weights, not a document: no size bound.
std::string torchScriptFingerprint(const std::string& path) {
  return "sha256:" + sha256Hex(readTextFile(path, std::numeric_limits<std::uint64_t>::max()));
}

std::string zooFingerprint(const std::string& source, const nlohmann::json& config) {
  return "sha256:" + sha256Hex(source + "\n" + config.dump());
}

}  // namespace stagecut
