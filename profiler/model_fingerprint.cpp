#include "profiler/model_fingerprint.h"

#include <sys/stat.h>

#include <cstdint>
#include <limits>

#include "core/error.h"
#include "core/json_document.h"
#include "core/sha256.h"

namespace stagecut {

// A TorchScript module is as large as its weights, not a document: no size bound.
std::string torchScriptFingerprint(const std::string& path) {
  struct stat file {};
  // torch.jit.save writes a file; a folder is the usual slip (a model directory), worth its words.
  if (::stat(path.c_str(), &file) == 0 && S_ISDIR(file.st_mode)) {
    throw Error(path + ": is a folder; give the TorchScript file saved in it");
  }
  return "sha256:" + sha256Hex(readTextFile(path, std::numeric_limits<std::uint64_t>::max()));
}

std::string zooFingerprint(const std::string& source, const nlohmann::json& config) {
  return "sha256:" + sha256Hex(source + "\n" + config.dump());
}

}  // namespace stagecut
