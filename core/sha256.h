#pragma once

#include <string>

namespace stagecut {

/// SHA-256 of `bytes` as 64 lowercase hex digits (FIPS 180-4). Fingerprints of models and
/// profiles use it, so that a later step can tell whether what it was given is what was measured.
std::string sha256Hex(const std::string& bytes);

}  // namespace stagecut
