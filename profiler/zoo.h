#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace stagecut {

struct LayerChain;

/// Settings of a built-in model. Zero means "the preset's or family's default".
struct ZooOptions {
  std::string family;  ///< "mlp", "gpt", "llama" or "vgg16"
  /// gpt: "gpt2-small", "gpt2-medium", "gpt2-large", "gpt-tiny", "gpt-demo"; llama: llamaPresets()
  std::string preset;
  int layers = 0;      ///< gpt or llama blocks, or mlp hidden layers
  int hidden = 0;      ///< gpt or llama model width, or mlp width
  int heads = 0;       ///< attention (query) heads
  int kv_heads = 0;    ///< llama key/value heads (grouped-query attention); divides heads
  int ffn = 0;         ///< gpt MLP width (default 4 x hidden); llama SwiGLU width
  int seq = 0;         ///< gpt or llama sequence length
  int vocab = 0;
  double rope_theta = 0;  ///< llama rotary embedding base (the preset's when 0)
  double norm_eps = 0;    ///< llama RMSNorm epsilon (the preset's when 0)
  std::optional<bool> qkv_bias;  ///< llama: biases on q, k and v (Qwen2); unset: the preset's
  int image_size = 0;  ///< vgg16 input height and width (default 64)
  int classes = 0;     ///< vgg16 classes (default 1000)
  std::uint64_t seed = 0;  ///< weights and batches derive from it
  /// gpt and llama: each layer is the shard one of `tensor_parallel` ranks holds, as Megatron
  /// shards it (heads, KV heads, FFN and the padded vocabulary divided by it), with its
  /// collectives described beside it (ChainLayer::tensor_parallel_comm). 1: no sharding.
  int tensor_parallel = 1;
  /// With tensor_parallel > 1: Megatron's sequence parallelism (all-gather and reduce-scatter
  /// instead of each all-reduce; the same bytes on a ring).
  bool sequence_parallel = false;
  /// Bytes a parameter takes in this machine's memory, for the check that the model fits: its
  /// float32 weight and gradient (8), or its float32 weight alone (4) where the model is built
  /// here and trained on a GPU, which holds the gradients.
  double host_bytes_per_parameter = 8.0;
  /// The model is built one layer at a time (describeZooModel, as the profiler builds it), so the
  /// memory check is about its largest layer; buildZooModel builds it whole and checks the whole.
  bool one_layer_at_a_time = false;
};

/// The zoo's family and preset names, for help texts and suggestions.
std::vector<std::string> zooFamilies();
std::vector<std::string> gptPresets();
std::vector<std::string> llamaPresets();

/// The checks buildZooModel makes before it allocates anything: a known family and preset, sizes
/// of 1 or more within the zoo's bounds, heads that divide the width (and KV heads that divide
/// the heads), an image size vgg16 can halve five times, and weights that fit in this machine's
/// memory. Throws Error (input) naming the flag ("--hidden 1000000: ...").
void checkZooOptions(const ZooOptions& options);

/// Describes a zoo model layer by layer, nothing built: each layer is built when needed
/// (buildLayer, layer_chain.h) with weights from options.seed and its index, the same in every
/// process and whichever layers are built. The checks are buildZooModel's, but the memory one is
/// about the largest layer, not the whole model.
LayerChain describeZooModel(const ZooOptions& options);

/// Builds a zoo model with weights from options.seed: the same options give bit-identical weights
/// in every process. Throws Error (input) for an unknown family or preset (with a suggestion) and
/// for impossible shapes (hidden not divisible by heads, zero sizes).
LayerChain buildZooModel(const ZooOptions& options);

}  // namespace stagecut
