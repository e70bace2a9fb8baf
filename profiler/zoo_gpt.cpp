// The `gpt` family: token + position embedding, pre-norm transformer blocks with causal
// attention, final norm + LM head, cross-entropy loss. The embedding holds many parameters and
// little compute and the head much compute: the imbalance that equal-parameter splits miss.
#include <cmath>

#include "core/error.h"
#include "core/suggest.h"
#include "profiler/layer_chain.h"
#include "profiler/recorded_config.h"
#include "profiler/zoo_builders.h"
#include "profiler/zoo_family.h"

namespace stagecut {

namespace {

// `vocab` is the shard's (shardVocab); with tensor parallelism the token ids are taken into
// its range, as Megatron's vocab-parallel embedding masks the others (the position table is
// whole on every rank).
struct GptEmbedImpl : torch::nn::Module {
  GptEmbedImpl(int vocab, int seq, int hidden, bool sharded)
      : token(register_module("token", torch::nn::Embedding(vocab, hidden))),
        position(register_module("position", torch::nn::Embedding(seq, hidden))),
        vocab_shard(sharded ? vocab : 0) {}
  torch::Tensor forward(const torch::Tensor& tokens) {
    const auto positions = torch::arange(tokens.size(1), torch::TensorOptions(torch::kLong).device(tokens.device()));
    return token(vocab_shard ? tokens.remainder(vocab_shard) : tokens) + position(positions).unsqueeze(0);
  }
  torch::nn::Embedding token, position;
  int64_t vocab_shard;
};
TORCH_MODULE(GptEmbed);

// One of `t` tensor-parallel ranks' shard (t = 1: the whole block): heads / t of the attention
// (column-parallel qkv, row-parallel proj) and ffn / t of the MLP (column-parallel fc1,
// row-parallel fc2), as Megatron shards them; the norms are whole on every rank.
struct GptBlockImpl : torch::nn::Module {
  GptBlockImpl(int hidden, int head_count, int ffn, int t)
      : heads(head_count / t),
        head_dim(hidden / head_count),
        norm1(register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({hidden})))),
        qkv(register_module("qkv", torch::nn::Linear(hidden, 3 * heads * head_dim))),
        proj(register_module("proj", torch::nn::Linear(heads * head_dim, hidden))),
        norm2(register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({hidden})))),
        fc1(register_module("fc1", torch::nn::Linear(hidden, ffn / t))),
        fc2(register_module("fc2", torch::nn::Linear(ffn / t, hidden))) {}

  torch::Tensor attention(const torch::Tensor& x) {
    const auto batch = x.size(0), seq = x.size(1);
    auto split = qkv(x).view({batch, seq, 3, heads, head_dim}).permute({2, 0, 3, 1, 4});
    const auto q = split[0], k = split[1], v = split[2];
    auto scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(head_dim));
    const auto future = torch::ones({seq, seq}, torch::TensorOptions(torch::kBool).device(x.device())).triu(1);
    scores = scores.masked_fill(future, -std::numeric_limits<float>::infinity());
    const auto mixed = torch::matmul(torch::softmax(scores, -1), v);
    return proj(mixed.transpose(1, 2).reshape({batch, seq, heads * head_dim}));
  }

  torch::Tensor forward(const torch::Tensor& x) {
    const auto h = x + attention(norm1(x));
    return h + fc2(torch::gelu(fc1(norm2(h))));
  }

  int64_t heads, head_dim;
  torch::nn::LayerNorm norm1;
  torch::nn::Linear qkv, proj;
  torch::nn::LayerNorm norm2;
  torch::nn::Linear fc1, fc2;
};
TORCH_MODULE(GptBlock);

struct GptHeadImpl : torch::nn::Module {
  GptHeadImpl(int hidden, int vocab)
      : norm(register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({hidden})))),
        lm_head(register_module(
            "lm_head", torch::nn::Linear(torch::nn::LinearOptions(hidden, vocab).bias(false)))) {}
  torch::Tensor forward(const torch::Tensor& x) { return lm_head(norm(x)); }
  torch::nn::LayerNorm norm;
  torch::nn::Linear lm_head;
};
TORCH_MODULE(GptHead);

const char* const kGptName = "gpt";

LayerChain describeGpt(const ZooOptions& options) {
  const GptShape shape = resolveGptShape(options);
  LayerChain chain;
  chain.model_name = options.preset.empty() ? kGptDefaultPreset : options.preset;
  chain.source = zooSource(kGptName);
  chain.config = recordZooConfig(decoderSettings(shape, options));
  chain.seq_len = shape.seq;

  const std::uint64_t seed = options.seed;
  const int t = shape.tensor_parallel;
  const int vocab = shardVocab(shape.vocab, t);
  addLayer(chain, seed, "embed", "Embedding", [shape, vocab, t] { return GptEmbed(vocab, shape.seq, shape.hidden, t > 1); });
  const std::string block_signature = "gpt block " + std::to_string(shape.hidden) + "/" + std::to_string(shape.heads) +
                                      "/" + std::to_string(shape.ffn) + "/" + std::to_string(shape.seq) +
                                      (t > 1 ? "/tp" + std::to_string(t) : "");
  for (int i = 0; i < shape.layers; ++i) {
    addLayer(chain, seed, "block." + std::to_string(i), "TransformerBlock",
             [shape, t] { return GptBlock(shape.hidden, shape.heads, shape.ffn, t); });
    chain.layers.back().signature = block_signature;
  }
  addLayer(chain, seed, "head", "LMHead", [shape, vocab] { return GptHead(shape.hidden, vocab); });
  chain.layers.push_back(tokenCrossEntropyLayer(vocab, t > 1, shape.seq));
  if (t > 1) describeDecoderComm(chain, shape.seq, shape.hidden);
  chain.make_batch = tokenBatches(shape.vocab, shape.seq);
  return chain;
}

}  // namespace

ModelFamily gptFamily() {
  ModelFamily family;
  family.name = kGptName;
  family.presets = gptPresets();
  family.default_preset = kGptDefaultPreset;
  family.settings = {"layers", "hidden", "heads", "ffn", "seq", "vocab"};
  family.tensor_parallel = true;
  family.check = checkGpt;
  family.describe = describeGpt;
  return family;
}

}  // namespace stagecut
