#pragma once

// The built-in families' checks, free of LibTorch: what a request, or a profile's model.config,
// may ask for (the builders in zoo_*.cpp expect options these checks passed). Internal to the
// profiler; kept apart from the builders so that the fuzz target of validate's model.config
// checks (runtime/model_config.h) compiles them without LibTorch.

#include <string>
#include <vector>

#include "profiler/zoo.h"

namespace stagecut {

/// The presets an empty ZooOptions::preset means.
inline constexpr const char* kGptDefaultPreset = "gpt2-small";
inline constexpr const char* kLlamaDefaultPreset = "llama3-8b";

/// The gpt and llama families' preset names, for their entries and suggestions.
std::vector<std::string> gptPresets();
std::vector<std::string> llamaPresets();

/// A gpt model's shape: its preset's, with the options' overrides.
struct GptShape {
  int layers, hidden, heads, ffn, seq, vocab;
  int tensor_parallel = 1;  ///< the layers are the shards of one of this many ranks
};

/// The preset's shape with the options' sizes. Throws Error (input) for an unknown preset, a
/// size out of the zoo's bounds, or heads that do not divide the width.
GptShape resolveGptShape(const ZooOptions& options);

/// A llama model's shape: its preset's, with the options' overrides.
struct LlamaShape {
  int layers, hidden, heads, kv_heads, ffn, seq, vocab;
  double rope_theta, norm_eps;
  bool qkv_bias;  ///< q, k and v projections with biases (Qwen2); o and the MLP never have one
  int tensor_parallel = 1;  ///< the layers are the shards of one of this many ranks
};

/// The vocabulary one of `tensor_parallel` ranks holds: Megatron pads the vocabulary to a multiple
/// of 128 x tensor_parallel (--make-vocab-size-divisible-by 128) and splits it evenly; the whole
/// vocabulary when tensor_parallel is 1.
int shardVocab(int vocab, int tensor_parallel);

/// The preset's shape with the options' overrides (a width given alone scales the preset's FFN
/// with it; heads given alone keep the preset's heads per KV head). Throws Error (input) naming
/// the flag for an unknown preset, a size out of the zoo's bounds, heads that do not divide the
/// width, KV heads that do not divide the heads, an odd head width (rotary embeddings rotate
/// pairs) or a rope theta or norm epsilon that is not a positive finite number in range.
LlamaShape resolveLlamaShape(const ZooOptions& options);

/// Parameters of a llama model with this shape: token embedding, blocks (two RMSNorm weights,
/// q/k/v/o projections, SwiGLU MLP), final RMSNorm and the untied LM head. Allocates nothing.
double llamaParameterCount(const LlamaShape& shape);

/// A size of a zoo model: 1 or more, and at most `max`. Beyond the bounds a size is a typo on
/// this tool's runs, and the shapes' int arithmetic would overflow.
void requireSize(const char* flag, int value, int max);

/// Refuses a model whose parameters (options.host_bytes_per_parameter each: float32 weights and
/// gradients, or the weights alone for a GPU run) would not fit in this machine's memory, before
/// an allocation tries and fails with a LibTorch error: the whole model's, or its largest layer's
/// when it is built one layer at a time (options.one_layer_at_a_time).
void requireWeightsFit(double parameters, double largest_layer_parameters, const ZooOptions& options);

/// Each built-in family's own checks (ModelFamily::check), after checkZooOptions's.
void checkGpt(const ZooOptions& options);
void checkLlama(const ZooOptions& options);
void checkMlp(const ZooOptions& options);
void checkVgg16(const ZooOptions& options);

}  // namespace stagecut
