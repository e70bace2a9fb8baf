#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/parallel_degrees.h"

namespace stagecut {

struct LayerChain;

/// Settings of a zoo model (the union of every family's; each takes those its entry names, and
/// model.config records them: profiler/recorded_config.h). Zero means "the preset's or family's
/// default".
struct ZooOptions {
  std::string family;  ///< a registered family's name (model_families.h): "mlp", "gpt", "llama", "vgg16"
  /// One of the family's presets (ModelFamily::presets); empty: its default
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
  int image_size = 0;  ///< vgg16 input height and width (default 224)
  int classes = 0;     ///< vgg16 classes (default 1000)
  std::uint64_t seed = 0;  ///< weights and batches derive from it
  /// Families with shards (gpt, llama): each layer is the shard one of parallel.tensor_parallel
  /// ranks holds, as Megatron shards it (heads, KV heads, FFN and the padded vocabulary divided
  /// by it), with its collectives described beside it (ChainLayer::tensor_parallel_comm); with
  /// parallel.sequence_parallel, Megatron's sequence parallelism (all-gather and reduce-scatter
  /// instead of each all-reduce; the same bytes on a ring). The defaults: no sharding.
  ParallelDegrees parallel;
  /// Bytes a parameter takes in this machine's memory, for the check that the model fits: its
  /// float32 weight and gradient (8), or its float32 weight alone (4) where the model is built
  /// here and trained on a GPU, which holds the gradients.
  double host_bytes_per_parameter = 8.0;
  /// The model is built one layer at a time (describeZooModel, as the profiler builds it), so the
  /// memory check is about its largest layer; buildZooModel builds it whole and checks the whole.
  bool one_layer_at_a_time = false;
};

/// The checks buildZooModel makes before it allocates anything, through the family registry
/// (model_families.h): a known family and preset, then the family's own (for the built-in ones:
/// sizes of 1 or more within the zoo's bounds, heads that divide the width and KV heads that
/// divide the heads, an image size vgg16 can halve five times, and weights that fit in this
/// machine's memory). Throws Error (input) naming the flag ("--hidden 1000000: ...").
void checkZooOptions(const ZooOptions& options);

/// Describes a zoo model layer by layer through its family's entry, nothing built: each layer is
/// built when needed (buildLayer, layer_chain.h) with weights from options.seed and its index,
/// the same in every process and whichever layers are built. Sets the chain's fingerprint of its
/// source and config. The checks are buildZooModel's, but the memory one is about the largest
/// layer when options.one_layer_at_a_time.
LayerChain describeZooModel(const ZooOptions& options);

/// Builds a zoo model with weights from options.seed: the same options give bit-identical weights
/// in every process. Throws Error (input) for an unknown family or preset (with a suggestion) and
/// for impossible shapes (hidden not divisible by heads, zero sizes).
LayerChain buildZooModel(const ZooOptions& options);

}  // namespace stagecut
