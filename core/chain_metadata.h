#pragma once

#include <string>
#include <vector>

namespace stagecut {

/// What tools/stagecut_export.py writes beside a TorchScript chain, as the file `stagecut.json`
/// inside its archive: the layers' real names and kinds, which TorchScript's child names cannot
/// carry (they may not hold a dot). Format "stagecut-chain", version 1 (docs/formats.md).
struct ChainMetadata {
  struct Layer {
    std::string child;   ///< the TorchScript child it describes, e.g. "features_0"
    std::string name;    ///< the layer's name in stagecut's outputs, e.g. "features.0"
    std::string kind;    ///< e.g. "Conv2d"
    std::string module;  ///< the model's own module path, e.g. "features.0" or "transformer.h.3"
  };
  std::string source;  ///< what was exported, e.g. "torchvision:vgg16"
  std::string input;   ///< the --input it was exported and checked at
  std::vector<Layer> layers;
};

inline constexpr int kChainMetadataVersion = 1;

/// Reads the metadata's JSON text. Throws Error (input) naming `file` when it is not JSON, not
/// this format, of a newer version, or its layers lack a child or name, or repeat a name.
ChainMetadata parseChainMetadata(const std::string& text, const std::string& file);

}  // namespace stagecut
