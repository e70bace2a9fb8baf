#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace stagecut {

struct LayerChain;

/// Settings of a built-in model. Zero means "the preset's or family's default".
struct ZooOptions {
  std::string family;  ///< "mlp", "gpt" or "vgg16"
  std::string preset;  ///< gpt: "gpt2-small", "gpt2-medium", "gpt2-large", "gpt-tiny", "gpt-demo"
  int layers = 0;      ///< gpt blocks or mlp hidden layers
  int hidden = 0;      ///< gpt model width or mlp width
  int heads = 0;
  int ffn = 0;         ///< gpt MLP width (default 4 x hidden)
  int seq = 0;         ///< gpt sequence length
  int vocab = 0;
  int image_size = 0;  ///< vgg16 input height and width (default 64)
  int classes = 0;     ///< vgg16 classes (default 1000)
  std::uint64_t seed = 0;  ///< weights and batches derive from it
};

/// The zoo's family and preset names, for help texts and suggestions.
std::vector<std::string> zooFamilies();
std::vector<std::string> gptPresets();

/// The checks buildZooModel makes before it allocates anything: a known family and preset, sizes
/// of 1 or more within the zoo's bounds, heads that divide the width, an image size vgg16 can
/// halve five times, and weights that fit in this machine's memory. Throws Error (input) naming
/// the flag ("--hidden 1000000: ...").
void checkZooOptions(const ZooOptions& options);

/// Builds a zoo model with weights from options.seed: the same options give bit-identical weights
/// in every process. Throws Error (input) for an unknown family or preset (with a suggestion) and
/// for impossible shapes (hidden not divisible by heads, zero sizes).
LayerChain buildZooModel(const ZooOptions& options);

}  // namespace stagecut
