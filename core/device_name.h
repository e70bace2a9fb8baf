#pragma once

#include <optional>
#include <string>

namespace stagecut {

/// A device as `--device` names it to profile and validate: "cpu", "cuda" (no GPU named) or
/// "cuda:K".
struct DeviceName {
  bool cuda = false;
  int ordinal = -1;  ///< K of "cuda:K" (0-9999); -1 for "cpu" and a bare "cuda"
};

/// Reads `text`; std::nullopt for any other name (the caller names its flag and its choices).
std::optional<DeviceName> parseDeviceName(const std::string& text);

}  // namespace stagecut
