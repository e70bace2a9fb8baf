#pragma once

// Pieces shared by the zoo families (internal to the profiler).

#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <ATen/CPUGeneratorImpl.h>

#include "core/error.h"
#include "profiler/layer_chain.h"
#include "profiler/zoo.h"
#include "profiler/zoo_checks.h"

namespace stagecut {

/// The seed of the weights of a zoo model's layer `index`: each layer draws from its own, so that
/// it is built alike alone (one layer at a time, or a stage's layers) and in the whole model.
std::uint64_t layerSeed(std::uint64_t seed, std::size_t index);

/// LibTorch's modules draw their initial weights from the global generator: whoever seeds it and
/// builds holds this lock (ranks that are threads of one process build their layers at once).
std::mutex& globalGeneratorLock();

/// Appends to `chain` a layer described by `make`, which returns a module holder with
/// `forward(Tensor)`: built when needed (buildLayer), its weights from layerSeed(seed, its index).
template <typename Make>
void addLayer(LayerChain& chain, std::uint64_t seed, std::string name, std::string kind, Make make) {
  ChainLayer layer;
  layer.name = std::move(name);
  layer.kind = std::move(kind);
  const std::uint64_t own_seed = layerSeed(seed, chain.layers.size());
  layer.build = [make, own_seed](ChainLayer& into) {
    auto module = [&] {
      const std::lock_guard<std::mutex> lock(globalGeneratorLock());
      torch::manual_seed(own_seed);
      return make();
    }();
    into.parameters = module->parameters();
    into.forward = [module](const torch::Tensor& input, const torch::Tensor&) mutable { return module->forward(input); };
    into.owner = module.ptr();
  };
  chain.layers.push_back(std::move(layer));
}

/// A parameter-free layer that compares its input with the batch's target.
template <typename LossFn>
ChainLayer lossLayer(std::string name, std::string kind, LossFn loss) {
  ChainLayer layer;
  layer.name = std::move(name);
  layer.kind = std::move(kind);
  layer.forward = [loss](const torch::Tensor& input, const torch::Tensor& target) {
    return loss(input, target);
  };
  return layer;
}

/// A CPU generator of its own, so that batches do not depend on (or disturb) the global RNG.
inline at::Generator seededGenerator(std::uint64_t seed) {
  return at::make_generator<at::CPUGeneratorImpl>(seed);
}

/// A language model's loss: cross-entropy of next-token logits [rows, seq, vocab] against token
/// ids, on the logits upcast to float32 (a no-op when they are), as Megatron, torchtitan and HF
/// compute it whatever the layers' precision. `sharded`: the logits are one tensor-parallel
/// rank's slice of the vocabulary, and the targets are taken into it (the cost of Megatron's
/// vocab-parallel cross-entropy, whose three all-reduces of per-token statistics it describes).
inline ChainLayer tokenCrossEntropyLayer(int vocab, bool sharded = false, int seq = 0) {
  ChainLayer layer =
      lossLayer("loss", "CrossEntropyLoss", [vocab, sharded](const torch::Tensor& logits, const torch::Tensor& target) {
        const torch::Tensor ids = sharded ? target.remainder(vocab) : target;
        return torch::nn::functional::cross_entropy(logits.reshape({-1, vocab}).to(torch::kFloat32), ids.reshape({-1}));
      });
  if (sharded) layer.tensor_parallel_comm = {3, 0, seq, true};
  return layer;
}

/// The collectives of a decoder's shards, rows of `seq` tokens of `hidden` features (Megatron):
/// a block all-reduces its attention's and its MLP's output forward and their inputs' gradients
/// backward; the vocab-parallel embedding its output forward; the column-parallel head its
/// input's gradient backward.
inline void describeDecoderComm(LayerChain& chain, int seq, int hidden) {
  const std::int64_t row = static_cast<std::int64_t>(seq) * hidden;
  for (ChainLayer& layer : chain.layers) {
    if (layer.kind == "Embedding") layer.tensor_parallel_comm = {1, 0, row, false};
    if (layer.kind == "TransformerBlock") layer.tensor_parallel_comm = {2, 2, row, false};
    if (layer.kind == "LMHead") layer.tensor_parallel_comm = {0, 1, row, false};
  }
}

/// What a decoder family records of its resolved shape (recordZooConfig, recorded_config.h): the
/// sizes every decoder has, the seed and the parallel degrees.
template <typename Shape>
ZooOptions decoderSettings(const Shape& shape, const ZooOptions& options) {
  ZooOptions settings;
  settings.layers = shape.layers;
  settings.hidden = shape.hidden;
  settings.heads = shape.heads;
  settings.ffn = shape.ffn;
  settings.seq = shape.seq;
  settings.vocab = shape.vocab;
  settings.seed = options.seed;
  settings.parallel = options.parallel;
  return settings;
}

/// A language model's batches: `rows` sequences of `seq` token ids below `vocab`, and as many
/// target ids, from the batch's seed.
inline std::function<ChainBatch(int, std::uint64_t)> tokenBatches(int vocab, int seq) {
  return [vocab, seq](int rows, std::uint64_t seed) {
    auto generator = seededGenerator(seed);
    ChainBatch batch;
    batch.input = torch::randint(0, vocab, {rows, seq}, generator, torch::kLong);
    batch.target = torch::randint(0, vocab, {rows, seq}, generator, torch::kLong);
    return batch;
  };
}

/// The llama family's description of its chain, layers not built yet, from options its check
/// passed (its ModelFamily::describe, with kFastest). How the llama blocks attend: kFastest takes
/// LibTorch's scaled_dot_product_attention where it has one (2.x; the flash or memory-efficient
/// kernels on a GPU) and the explicit softmax where not (1.13); kEager always takes the explicit
/// softmax (tests hold the two to each other). The chain's config records which ran
/// ("attention": "sdpa" or "eager").
enum class LlamaAttentionPath { kFastest, kEager };
LayerChain describeLlama(const ZooOptions& options, LlamaAttentionPath attention = LlamaAttentionPath::kFastest);

/// Whether this LibTorch has scaled_dot_product_attention (2.0 and later).
bool llamaHasSdpa();

/// A llama chain's parameters (the tensors themselves, not copies) under the names Hugging
/// Face's LlamaForCausalLM (Qwen2ForCausalLM with qkv_bias) gives them, e.g.
/// "model.layers.0.self_attn.q_proj.weight": how its weights are loaded into that model. Throws
/// Error when the chain is not a zoo llama chain.
std::vector<std::pair<std::string, torch::Tensor>> llamaStateDict(const LayerChain& chain);

}  // namespace stagecut
