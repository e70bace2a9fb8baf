// The built-in families' checks before anything is allocated (their presets, shapes and bounds)
// and the rules they share (sizes, memory). Validate runs them on a profile's model.config
// before any rank starts.
#include "profiler/zoo_checks.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/error.h"
#include "core/suggest.h"
#include "profiler/machine_memory.h"

namespace stagecut {

namespace {

struct GptPreset {
  const char* name;
  GptShape shape;
};

// GPT-2 shapes (Radford et al. 2019); gpt-tiny is the fast one for tests.
constexpr GptPreset kPresets[] = {
    {"gpt2-small", {12, 768, 12, 3072, 1024, 50257}},
    {"gpt2-medium", {24, 1024, 16, 4096, 1024, 50257}},
    {"gpt2-large", {36, 1280, 20, 5120, 1024, 50257}},
    {"gpt-tiny", {4, 128, 4, 512, 64, 8192}},
    // The demo's model: profiled in about a minute on 2 cores, with a vocabulary large enough
    // that the embedding holds many parameters and little compute and the head the opposite.
    {"gpt-demo", {6, 256, 4, 1024, 128, 16384}},
};

struct LlamaPreset {
  const char* name;
  LlamaShape shape;
};

// {layers, hidden, heads, kv_heads, ffn, seq, vocab, rope_theta, norm_eps, qkv_bias}, from each
// model's published config.json (seq: its context length, max_position_embeddings).
constexpr LlamaPreset kLlamaPresets[] = {
    {"llama2-7b", {32, 4096, 32, 32, 11008, 4096, 32000, 1e4, 1e-5, false}},
    {"llama3-8b", {32, 4096, 32, 8, 14336, 8192, 128256, 5e5, 1e-5, false}},
    {"llama3-70b", {80, 8192, 64, 8, 28672, 8192, 128256, 5e5, 1e-5, false}},
    // Llama 3.1's "llama3" rope scaling (factor 8) changes the rotary frequencies, not the cost:
    // not modelled.
    {"llama3.1-405b", {126, 16384, 128, 8, 53248, 131072, 128256, 5e5, 1e-5, false}},
    // Mistral-7B v0.1 (theta 1e4; v0.2 and later use 1e6). Its sliding window is 4096 tokens:
    // the default seq stays within it, where the window equals the full causal attention here.
    {"mistral-7b", {32, 4096, 32, 8, 14336, 4096, 32000, 1e4, 1e-5, false}},
    // Qwen2.5-7B: the LLaMA layout with biases on q, k and v.
    {"qwen2.5-7b", {28, 3584, 28, 4, 18944, 32768, 152064, 1e6, 1e-6, true}},
    {"tinyllama-1.1b", {22, 2048, 32, 4, 5632, 2048, 32000, 1e4, 1e-5, false}},
    // For tests: every part of the layout (grouped-query attention too) in milliseconds.
    {"llama-tiny", {2, 64, 4, 2, 176, 32, 512, 1e4, 1e-5, false}},
};

// A floating-point model setting: finite, above 0 and at most `max`.
void requireAboveZero(const char* flag, double value, double max) {
  if (std::isfinite(value) && value > 0 && value <= max) return;
  std::ostringstream text;
  text << flag << " " << value << ": must be a number above 0 and at most " << max;
  throw Error(text.str());
}

// The sizes every decoder family shares, within the zoo's bounds.
template <typename Shape>
void requireDecoderSizes(const Shape& shape) {
  requireSize("--layers", shape.layers, 4096);
  requireSize("--hidden", shape.hidden, 65536);
  requireSize("--heads", shape.heads, 4096);
  requireSize("--ffn", shape.ffn, 262144);
  requireSize("--seq", shape.seq, 131072);
  requireSize("--vocab", shape.vocab, 1 << 22);
}

// --tensor-parallel and --sequence-parallel against a decoder's shape: Megatron splits the heads,
// the KV heads (query groups) and the FFN evenly, so t must divide each.
template <typename Shape>
void requireTensorParallel(Shape& shape, const ZooOptions& options, int kv_heads) {
  requireSize("--tensor-parallel", options.parallel.tensor_parallel, kMaxTensorParallel);
  shape.tensor_parallel = options.parallel.tensor_parallel;
  const int t = options.parallel.tensor_parallel;
  if (options.parallel.sequence_parallel && t < 2) {
    throw Error("--sequence-parallel: shards the sequence across tensor-parallel ranks; give --tensor-parallel 2 or more");
  }
  const std::pair<const char*, int> divided[] = {{"--heads", shape.heads}, {"--kv-heads", kv_heads}, {"--ffn", shape.ffn}};
  for (const auto& [flag, value] : divided) {
    if (value % t != 0) {
      throw Error("--tensor-parallel " + std::to_string(t) + ": does not divide " + flag + " " + std::to_string(value) +
                  " (Megatron splits it evenly across the ranks); pick a degree that divides it");
    }
  }
}

// A family's preset by name, or one line naming the family's presets.
template <typename Preset, std::size_t N>
const Preset& findPreset(const Preset (&table)[N], const std::string& preset, const char* family,
                         const std::vector<std::string>& names) {
  for (const auto& candidate : table) {
    if (preset == candidate.name) return candidate;
  }
  throw Error("--preset " + preset + ": not a " + family + " preset" + unknownNameHint(preset, names));
}

}  // namespace

GptShape resolveGptShape(const ZooOptions& options) {
  const std::string preset = options.preset.empty() ? kGptDefaultPreset : options.preset;
  GptShape shape = findPreset(kPresets, preset, "gpt", gptPresets()).shape;
  if (options.layers) shape.layers = options.layers;
  if (options.hidden) shape.hidden = options.hidden;
  if (options.heads) shape.heads = options.heads;
  if (options.ffn) shape.ffn = options.ffn;
  else if (options.hidden) shape.ffn = 4 * options.hidden;
  if (options.seq) shape.seq = options.seq;
  if (options.vocab) shape.vocab = options.vocab;
  requireDecoderSizes(shape);
  if (shape.hidden % shape.heads != 0) {
    throw Error("--hidden " + std::to_string(shape.hidden) + " is not divisible by --heads " +
                std::to_string(shape.heads) + "; pick a head count that divides the width");
  }
  requireTensorParallel(shape, options, shape.heads);
  return shape;
}

int shardVocab(int vocab, int tensor_parallel) {
  if (tensor_parallel <= 1) return vocab;
  const long long multiple = 128LL * tensor_parallel;
  return static_cast<int>((vocab + multiple - 1) / multiple * multiple / tensor_parallel);
}

std::vector<std::string> gptPresets() {
  std::vector<std::string> names;
  for (const auto& preset : kPresets) names.push_back(preset.name);
  return names;
}

void checkGpt(const ZooOptions& options) {
  const GptShape shape = resolveGptShape(options);
  const double hidden = shape.hidden;
  const double block = 4.0 * hidden * hidden + 2.0 * hidden * shape.ffn;
  const double embed = (static_cast<double>(shape.vocab) + shape.seq) * hidden;
  const double head = static_cast<double>(shape.vocab) * hidden;
  requireWeightsFit(embed + shape.layers * block + head, std::max({embed, block, head}), options);
}

LlamaShape resolveLlamaShape(const ZooOptions& options) {
  const std::string preset = options.preset.empty() ? kLlamaDefaultPreset : options.preset;
  const LlamaShape& base = findPreset(kLlamaPresets, preset, "llama", llamaPresets()).shape;
  LlamaShape shape = base;
  if (options.layers) shape.layers = options.layers;
  if (options.hidden) shape.hidden = options.hidden;
  if (options.heads) shape.heads = options.heads;
  if (options.kv_heads) {
    shape.kv_heads = options.kv_heads;
  } else if (options.heads && options.heads % (base.heads / base.kv_heads) == 0) {
    shape.kv_heads = options.heads / (base.heads / base.kv_heads);
  }
  if (options.ffn) {
    shape.ffn = options.ffn;
  } else if (options.hidden) {
    // Clamped so that an absurd width reaches its own check (--hidden) as a number, not an overflow.
    const double scaled = std::round(static_cast<double>(base.ffn) * options.hidden / base.hidden);
    shape.ffn = static_cast<int>(std::clamp(scaled, 1.0, 2147483647.0));
  }
  if (options.seq) shape.seq = options.seq;
  if (options.vocab) shape.vocab = options.vocab;
  if (options.rope_theta != 0) shape.rope_theta = options.rope_theta;
  if (options.norm_eps != 0) shape.norm_eps = options.norm_eps;
  if (options.qkv_bias) shape.qkv_bias = *options.qkv_bias;
  requireDecoderSizes(shape);
  requireSize("--kv-heads", shape.kv_heads, 4096);
  // Beyond these a value is a typo: published models use theta 1e4 to 1e7 and epsilon 1e-6 to 1e-5.
  requireAboveZero("--rope-theta", shape.rope_theta, 1e12);
  requireAboveZero("--norm-eps", shape.norm_eps, 1.0);
  if (shape.hidden % shape.heads != 0) {
    throw Error("--hidden " + std::to_string(shape.hidden) + " is not divisible by --heads " +
                std::to_string(shape.heads) + "; pick a head count that divides the width");
  }
  if ((shape.hidden / shape.heads) % 2 != 0) {
    throw Error("--hidden " + std::to_string(shape.hidden) + " over --heads " + std::to_string(shape.heads) +
                " gives heads " + std::to_string(shape.hidden / shape.heads) +
                " wide; rotary embeddings rotate pairs of features: pick a head count that leaves an even head width");
  }
  if (shape.heads % shape.kv_heads != 0) {
    throw Error("--heads " + std::to_string(shape.heads) + " is not divisible by " +
                (options.kv_heads ? "" : "the preset's ") + "--kv-heads " + std::to_string(shape.kv_heads) +
                "; pick a KV head count that divides the heads");
  }
  requireTensorParallel(shape, options, shape.kv_heads);
  return shape;
}

namespace {

// A llama block's parameters.
double llamaBlockParameters(const LlamaShape& shape) {
  const double hidden = shape.hidden;
  const double kv_width = static_cast<double>(shape.kv_heads) * (shape.hidden / shape.heads);
  return 2.0 * hidden                               // the two RMSNorm weights
         + 2.0 * hidden * hidden                    // q and o
         + 2.0 * hidden * kv_width                  // k and v
         + (shape.qkv_bias ? hidden + 2.0 * kv_width : 0.0)
         + 3.0 * hidden * shape.ffn;                // gate, up and down
}

}  // namespace

double llamaParameterCount(const LlamaShape& shape) {
  const double hidden = shape.hidden;
  return static_cast<double>(shape.vocab) * hidden + shape.layers * llamaBlockParameters(shape) + hidden +
         hidden * static_cast<double>(shape.vocab);
}

std::vector<std::string> llamaPresets() {
  std::vector<std::string> names;
  for (const auto& preset : kLlamaPresets) names.push_back(preset.name);
  return names;
}

void checkLlama(const ZooOptions& options) {
  const LlamaShape shape = resolveLlamaShape(options);
  const double head = static_cast<double>(shape.vocab) * shape.hidden + shape.hidden;
  requireWeightsFit(llamaParameterCount(shape), std::max(llamaBlockParameters(shape), head), options);
}

void checkMlp(const ZooOptions& options) {
  const int depth = options.layers ? options.layers : 4;
  const int width = options.hidden ? options.hidden : 256;
  requireSize("--layers", depth, 4096);
  requireSize("--hidden", width, 65536);
  requireWeightsFit(static_cast<double>(depth) * width * width, static_cast<double>(width) * width, options);
}

void checkVgg16(const ZooOptions& options) {
  const int image = options.image_size ? options.image_size : 224;
  const int classes = options.classes ? options.classes : 1000;
  requireSize("--image-size", image, 8192);
  requireSize("--classes", classes, 1 << 20);
  if (image % 32 != 0) {
    throw Error("--image-size " + std::to_string(image) +
                ": vgg16 halves the image five times; use a multiple of 32 (e.g. 224 or 64)");
  }
  // The convolutions hold 14.7M parameters; the first fully connected layer grows with the image.
  const double spatial = image / 32;
  const double first_fully_connected = 512.0 * spatial * spatial * 4096;
  requireWeightsFit(14.7e6 + first_fully_connected + 4096.0 * 4096 + 4096.0 * classes,
                    std::max({first_fully_connected, 4096.0 * 4096, 4096.0 * classes}), options);
}

void requireSize(const char* flag, int value, int max) {
  if (value < 1) throw Error(std::string(flag) + " " + std::to_string(value) + ": must be 1 or more");
  if (value > max) {
    throw Error(std::string(flag) + " " + std::to_string(value) + ": at most " + std::to_string(max) +
                " for a zoo model; choose a smaller size");
  }
}

void requireWeightsFit(double parameters, double largest_layer_parameters, const ZooOptions& options) {
  const bool gradients_here = options.host_bytes_per_parameter > 4.0;
  const std::string what = gradients_here ? "weights and their gradients" : "float32 weights";
  const std::string model = "--model " + options.family + (options.preset.empty() ? "" : " --preset " + options.preset);
  if (options.one_layer_at_a_time) {
    requireFitsInMemory(largest_layer_parameters * options.host_bytes_per_parameter, model,
                        "the " + what + " of its largest layer alone", "choose a smaller --hidden or --vocab");
    return;
  }
  requireFitsInMemory(parameters * options.host_bytes_per_parameter, model, "its " + what + " alone",
                      "choose smaller sizes (fewer --layers, a smaller --hidden)");
}

}  // namespace stagecut
