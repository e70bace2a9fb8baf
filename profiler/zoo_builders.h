#pragma once

// Pieces shared by the zoo families (internal to the profiler).

#include <string>
#include <utility>
#include <vector>

#include <ATen/CPUGeneratorImpl.h>

#include "core/error.h"
#include "profiler/layer_chain.h"
#include "profiler/zoo.h"
#include "profiler/zoo_checks.h"

namespace stagecut {

/// A chain layer over a module holder with `forward(Tensor)`.
template <typename ModuleHolder>
ChainLayer moduleLayer(std::string name, std::string kind, ModuleHolder module) {
  ChainLayer layer;
  layer.name = std::move(name);
  layer.kind = std::move(kind);
  layer.parameters = module->parameters();
  layer.forward = [module](const torch::Tensor& input, const torch::Tensor&) mutable {
    return module->forward(input);
  };
  layer.owner = module.ptr();
  return layer;
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
/// compute it whatever the layers' precision.
inline ChainLayer tokenCrossEntropyLayer(int vocab) {
  return lossLayer("loss", "CrossEntropyLoss", [vocab](const torch::Tensor& logits, const torch::Tensor& target) {
    return torch::nn::functional::cross_entropy(logits.reshape({-1, vocab}).to(torch::kFloat32), target.reshape({-1}));
  });
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

/// Each family's builder, which expects options its check (zoo_checks.h) passed
/// (buildZooModel runs checkZooOptions first).
LayerChain buildGpt(const ZooOptions& options);
LayerChain buildMlp(const ZooOptions& options);
LayerChain buildVgg16(const ZooOptions& options);

/// How the llama blocks attend: kFastest takes LibTorch's scaled_dot_product_attention where it
/// has one (2.x; the flash or memory-efficient kernels on a GPU) and the explicit softmax where
/// not (1.13); kEager always takes the explicit softmax (tests hold the two to each other). The
/// chain's config records which ran ("attention": "sdpa" or "eager").
enum class LlamaAttentionPath { kFastest, kEager };
LayerChain buildLlama(const ZooOptions& options, LlamaAttentionPath attention = LlamaAttentionPath::kFastest);

/// Whether this LibTorch has scaled_dot_product_attention (2.0 and later).
bool llamaHasSdpa();

/// A llama chain's parameters (the tensors themselves, not copies) under the names Hugging
/// Face's LlamaForCausalLM (Qwen2ForCausalLM with qkv_bias) gives them, e.g.
/// "model.layers.0.self_attn.q_proj.weight": how its weights are loaded into that model. Throws
/// Error when the chain is not a zoo llama chain.
std::vector<std::pair<std::string, torch::Tensor>> llamaStateDict(const LayerChain& chain);

}  // namespace stagecut
