#pragma once

// The commands that run LibTorch. In a LibTorch build they live in a second executable,
// stagecut-torch, next to stagecut: stagecut hands these commands to it (exec, same arguments),
// so every other command starts without loading LibTorch (docs/architecture.md).

#include <cstring>

namespace stagecut {

struct TorchCommand {
  const char* name;
  const char* description;
};

inline constexpr TorchCommand kTorchCommands[] = {
    {"demo", "The end-to-end tour on the built-in demo model: profile, partition, simulate, validate, report"},
    {"profile", "Measure every layer's forward, backward (B and W apart) and memory"},
    {"validate", "Run a partition for real as a multi-process pipeline and compare it with the prediction"},
};

/// The LibTorch part's file name, looked for next to stagecut itself.
inline constexpr const char* kTorchPartName = "stagecut-torch";

/// The description of the LibTorch command `name` (one of kTorchCommands); "" for another name.
inline const char* torchCommandDescription(const char* name) {
  for (const TorchCommand& command : kTorchCommands) {
    if (std::strcmp(command.name, name) == 0) return command.description;
  }
  return "";
}

}  // namespace stagecut
