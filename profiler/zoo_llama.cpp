// The `llama` family: the layout most pipelines train today (LLaMA 2 and 3, Mistral, Qwen2,
// TinyLlama): token embedding, pre-norm blocks of RMSNorm, rotary grouped-query attention and a
// SwiGLU MLP, final RMSNorm + untied LM head, cross-entropy loss. Computed as Hugging Face's
// LlamaForCausalLM computes it, under its parameter names (tests/profiler_zoo_llama_test.cpp
// holds the chain to that model with the same weights).
#include <cmath>
#include <limits>

#include "core/error.h"
#include "profiler/layer_chain.h"
#include "profiler/recorded_config.h"
#include "profiler/torch_compat.h"
#include "profiler/zoo_builders.h"
#include "profiler/zoo_family.h"

namespace stagecut {

namespace {

// LibTorch 2.0 brought scaled_dot_product_attention (flash or memory-efficient kernels on a GPU,
// as users run them); Debian's 1.13 has only the explicit softmax form.
constexpr bool kHaveSdpa = STAGECUT_TORCH_AT_LEAST(2, 0);

const char* const kLlamaName = "llama";

struct RmsNormImpl : torch::nn::Module {
  RmsNormImpl(int hidden, double epsilon)
      : eps(epsilon), weight(register_parameter("weight", torch::ones({hidden}))) {}
  torch::Tensor forward(const torch::Tensor& x) {
    // In float32 and cast back, as HF's LlamaRMSNorm: a 16-bit mean of squares loses precision.
    const auto x32 = x.to(torch::kFloat);
    const auto normed = x32 * torch::rsqrt(x32.pow(2).mean(-1, true) + eps);
    return weight * normed.to(x.scalar_type());
  }
  double eps;
  torch::Tensor weight;
};
TORCH_MODULE(RmsNorm);

// `vocab` is the shard's (shardVocab); with tensor parallelism the token ids are taken into its
// range, as Megatron's vocab-parallel embedding masks the others.
struct LlamaEmbedImpl : torch::nn::Module {
  LlamaEmbedImpl(int vocab, int hidden, bool sharded)
      : embed_tokens(register_module("embed_tokens", torch::nn::Embedding(vocab, hidden))), vocab_shard(sharded ? vocab : 0) {}
  torch::Tensor forward(const torch::Tensor& tokens) {
    return embed_tokens(vocab_shard ? tokens.remainder(vocab_shard) : tokens);
  }
  torch::nn::Embedding embed_tokens;
  int64_t vocab_shard;
};
TORCH_MODULE(LlamaEmbed);

torch::nn::Linear projection(int64_t in, int64_t out, bool bias) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias));
}

// HF's rotate_half: the second half of the features, negated, before the first.
torch::Tensor rotateHalf(const torch::Tensor& x) {
  const auto half = x.size(-1) / 2;
  return torch::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

// One of shape.tensor_parallel ranks' shard: heads / t and KV heads / t (column-parallel q, k, v;
// row-parallel o), as Megatron splits them.
struct LlamaAttentionImpl : torch::nn::Module {
  LlamaAttentionImpl(const LlamaShape& shape, bool sdpa)
      : heads(shape.heads / shape.tensor_parallel),
        kv_heads(shape.kv_heads / shape.tensor_parallel),
        head_dim(shape.hidden / shape.heads),
        rope_theta(shape.rope_theta),
        use_sdpa(sdpa),
        q_proj(register_module("q_proj", projection(shape.hidden, heads * head_dim, shape.qkv_bias))),
        k_proj(register_module("k_proj", projection(shape.hidden, kv_heads * head_dim, shape.qkv_bias))),
        v_proj(register_module("v_proj", projection(shape.hidden, kv_heads * head_dim, shape.qkv_bias))),
        o_proj(register_module("o_proj", projection(heads * head_dim, shape.hidden, false))) {}

  // cos and sin of each position's angles, made on the input's device each forward (as HF's
  // LlamaRotaryEmbedding does once per forward), in float32 and cast to the input's dtype.
  std::pair<torch::Tensor, torch::Tensor> rotary(int64_t seq, const torch::Tensor& like) const {
    const auto on_device = torch::TensorOptions(torch::kLong).device(like.device());
    const auto exponents = torch::arange(0, head_dim, 2, on_device).to(torch::kFloat) / head_dim;
    const auto inv_freq = torch::pow(rope_theta, exponents).reciprocal();
    const auto freqs = torch::outer(torch::arange(seq, on_device).to(torch::kFloat), inv_freq);
    const auto angles = torch::cat({freqs, freqs}, -1);
    return {angles.cos().to(like.scalar_type()), angles.sin().to(like.scalar_type())};
  }

  // HF's repeat_kv: each KV head serves heads / kv_heads consecutive query heads.
  torch::Tensor repeatKv(const torch::Tensor& x) const {
    if (kv_heads == heads) return x;
    const auto batch = x.size(0), seq = x.size(2);
    return x.unsqueeze(2).expand({batch, kv_heads, heads / kv_heads, seq, head_dim}).reshape({batch, heads, seq, head_dim});
  }

  torch::Tensor attend(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) const {
#if STAGECUT_TORCH_AT_LEAST(2, 0)
    if (use_sdpa) return torch::scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/true);
#endif
    const auto seq = q.size(2);
    auto scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(head_dim));
    const auto future = torch::ones({seq, seq}, torch::TensorOptions(torch::kBool).device(q.device())).triu(1);
    scores = scores.masked_fill(future, -std::numeric_limits<float>::infinity());
    // The softmax in float32 and cast back, as HF's eager attention.
    return torch::matmul(torch::softmax(scores, -1, torch::kFloat).to(q.scalar_type()), v);
  }

  torch::Tensor forward(const torch::Tensor& x) {
    const auto batch = x.size(0), seq = x.size(1);
    auto q = q_proj(x).view({batch, seq, heads, head_dim}).transpose(1, 2);
    auto k = k_proj(x).view({batch, seq, kv_heads, head_dim}).transpose(1, 2);
    const auto v = v_proj(x).view({batch, seq, kv_heads, head_dim}).transpose(1, 2);
    const auto [cos_angles, sin_angles] = rotary(seq, x);
    q = q * cos_angles + rotateHalf(q) * sin_angles;
    k = k * cos_angles + rotateHalf(k) * sin_angles;
    const auto mixed = attend(q, repeatKv(k), repeatKv(v));
    return o_proj(mixed.transpose(1, 2).reshape({batch, seq, heads * head_dim}));
  }

  int64_t heads, kv_heads, head_dim;
  double rope_theta;
  bool use_sdpa;
  torch::nn::Linear q_proj, k_proj, v_proj, o_proj;
};
TORCH_MODULE(LlamaAttention);

struct LlamaMlpImpl : torch::nn::Module {
  LlamaMlpImpl(int hidden, int ffn)
      : gate_proj(register_module("gate_proj", projection(hidden, ffn, false))),
        up_proj(register_module("up_proj", projection(hidden, ffn, false))),
        down_proj(register_module("down_proj", projection(ffn, hidden, false))) {}
  torch::Tensor forward(const torch::Tensor& x) { return down_proj(torch::silu(gate_proj(x)) * up_proj(x)); }
  torch::nn::Linear gate_proj, up_proj, down_proj;
};
TORCH_MODULE(LlamaMlp);

struct LlamaBlockImpl : torch::nn::Module {
  LlamaBlockImpl(const LlamaShape& shape, bool sdpa)
      : input_layernorm(register_module("input_layernorm", RmsNorm(shape.hidden, shape.norm_eps))),
        self_attn(register_module("self_attn", LlamaAttention(shape, sdpa))),
        post_attention_layernorm(register_module("post_attention_layernorm", RmsNorm(shape.hidden, shape.norm_eps))),
        mlp(register_module("mlp", LlamaMlp(shape.hidden, shape.ffn / shape.tensor_parallel))) {}
  torch::Tensor forward(const torch::Tensor& x) {
    const auto h = x + self_attn(input_layernorm(x));
    return h + mlp(post_attention_layernorm(h));
  }
  RmsNorm input_layernorm;
  LlamaAttention self_attn;
  RmsNorm post_attention_layernorm;
  LlamaMlp mlp;
};
TORCH_MODULE(LlamaBlock);

struct LlamaHeadImpl : torch::nn::Module {
  LlamaHeadImpl(int hidden, int vocab, double norm_eps)
      : norm(register_module("norm", RmsNorm(hidden, norm_eps))),
        lm_head(register_module("lm_head", projection(hidden, vocab, false))) {}
  torch::Tensor forward(const torch::Tensor& x) { return lm_head(norm(x)); }
  RmsNorm norm;
  torch::nn::Linear lm_head;
};
TORCH_MODULE(LlamaHead);

// The named parameters of the module behind `layer`, built here as a `Impl`.
template <typename Impl>
std::vector<std::pair<std::string, torch::Tensor>> namedParameters(const ChainLayer& layer, const std::string& prefix) {
  std::vector<std::pair<std::string, torch::Tensor>> named;
  for (const auto& item : std::static_pointer_cast<Impl>(layer.owner)->named_parameters()) {
    named.emplace_back(prefix + item.key(), item.value());
  }
  return named;
}

}  // namespace

bool llamaHasSdpa() { return kHaveSdpa; }

ModelFamily llamaFamily() {
  ModelFamily family;
  family.name = kLlamaName;
  family.presets = llamaPresets();
  family.default_preset = kLlamaDefaultPreset;
  family.settings = {"layers", "hidden", "heads", "kv_heads", "ffn", "seq", "vocab", "rope_theta", "norm_eps", "qkv_bias"};
  family.tensor_parallel = true;
  family.check = checkLlama;
  family.describe = [](const ZooOptions& options) { return describeLlama(options); };
  return family;
}

LayerChain describeLlama(const ZooOptions& options, LlamaAttentionPath attention) {
  const LlamaShape shape = resolveLlamaShape(options);
  const bool sdpa = kHaveSdpa && attention == LlamaAttentionPath::kFastest;
  LayerChain chain;
  chain.model_name = options.preset.empty() ? kLlamaDefaultPreset : options.preset;
  chain.source = zooSource(kLlamaName);
  ZooOptions settings = decoderSettings(shape, options);
  settings.kv_heads = shape.kv_heads;
  settings.rope_theta = shape.rope_theta;
  settings.norm_eps = shape.norm_eps;
  settings.qkv_bias = shape.qkv_bias;
  chain.config = recordZooConfig(settings);
  // Which attention ran: a fact of this build, recorded (and fingerprinted), not read back.
  chain.config["attention"] = sdpa ? "sdpa" : "eager";
  chain.seq_len = shape.seq;

  const std::uint64_t seed = options.seed;
  const int t = shape.tensor_parallel;
  const int vocab = shardVocab(shape.vocab, t);
  addLayer(chain, seed, "embed", "Embedding", [shape, vocab, t] { return LlamaEmbed(vocab, shape.hidden, t > 1); });
  // Every block computes the same thing on the same shapes: timing a few times them all.
  const std::string block_signature = "llama block " + std::to_string(shape.hidden) + "/" + std::to_string(shape.heads) +
                                      "/" + std::to_string(shape.kv_heads) + "/" + std::to_string(shape.ffn) + "/" +
                                      std::to_string(shape.seq) + (shape.qkv_bias ? "/qkv-bias" : "") +
                                      (sdpa ? "/sdpa" : "/eager") + (t > 1 ? "/tp" + std::to_string(t) : "");
  for (int i = 0; i < shape.layers; ++i) {
    addLayer(chain, seed, "block." + std::to_string(i), "TransformerBlock", [shape, sdpa] { return LlamaBlock(shape, sdpa); });
    chain.layers.back().signature = block_signature;
  }
  addLayer(chain, seed, "head", "LMHead", [shape, vocab] { return LlamaHead(shape.hidden, vocab, shape.norm_eps); });
  chain.layers.push_back(tokenCrossEntropyLayer(vocab, t > 1, shape.seq));
  if (t > 1) describeDecoderComm(chain, shape.seq, shape.hidden);
  chain.make_batch = tokenBatches(shape.vocab, shape.seq);
  return chain;
}

std::vector<std::pair<std::string, torch::Tensor>> llamaStateDict(const LayerChain& chain) {
  if (chain.source != zooSource(kLlamaName)) {
    throw Error("llamaStateDict: " + chain.displayName() + " is not a zoo llama model");
  }
  std::vector<std::pair<std::string, torch::Tensor>> state;
  for (const ChainLayer& layer : chain.layers) {
    std::vector<std::pair<std::string, torch::Tensor>> named;
    if (layer.name == "embed") {
      named = namedParameters<LlamaEmbedImpl>(layer, "model.");
    } else if (layer.name == "head") {
      named = namedParameters<LlamaHeadImpl>(layer, "");
      for (auto& item : named) {
        if (item.first.rfind("norm.", 0) == 0) item.first = "model." + item.first;
      }
    } else if (layer.name.rfind("block.", 0) == 0) {
      named = namedParameters<LlamaBlockImpl>(layer, "model.layers." + layer.name.substr(6) + ".");
    }
    state.insert(state.end(), named.begin(), named.end());
  }
  return state;
}

}  // namespace stagecut
