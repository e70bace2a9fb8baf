#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace stagecut {

/// The fingerprint a profile records of its model (core/profile.h, ModelInfo::fingerprint),
/// computed the same way where the profile is made and where a later step checks it.

/// "sha256:<hex>" of a TorchScript file's bytes. Throws Error (input) when it cannot be read.
std::string torchScriptFingerprint(const std::string& path);

/// "sha256:<hex>" of a zoo model's source ("zoo:gpt") and config (its sizes and seed).
std::string zooFingerprint(const std::string& source, const nlohmann::json& config);

}  // namespace stagecut
