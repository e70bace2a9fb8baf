// The zoo's llama family: names and kinds, parameters against closed forms and the published
// models' counts, grouped-query attention, the forward against a reference written here from the
// Hugging Face formulas (in another form: complex rotations, one head at a time) and against
// Hugging Face's own LlamaForCausalLM with the same weights, and the one-line refusals.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>

#include "core/error.h"
#include "core/profile_json.h"
#include "profiler/layer_chain.h"
#include "profiler/torch_runtime.h"
#include "profiler/zoo.h"
#include "profiler/zoo_builders.h"
#include "profiler/zoo_checks.h"
#include "tests/test_support.h"

using stagecut::buildZooModel;
using stagecut::LayerChain;
using stagecut::LlamaShape;
using stagecut::ZooOptions;
using stagecut::testing::CommandResult;
using stagecut::testing::runStagecut;
using stagecut::testing::TempDir;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using Catch::Matchers::EndsWith;

namespace {

ZooOptions llamaTiny() {
  ZooOptions options;
  options.family = "llama";
  options.preset = "llama-tiny";
  options.seed = 11;
  return options;
}

// llama-tiny with Qwen2's biases on q, k and v.
ZooOptions qwenTiny() {
  ZooOptions options = llamaTiny();
  options.qkv_bias = true;
  return options;
}

using Weights = std::map<std::string, torch::Tensor>;

Weights weightsOf(const LayerChain& chain) {
  Weights weights;
  for (const auto& [name, tensor] : stagecut::llamaStateDict(chain)) weights[name] = tensor.detach();
  return weights;
}

bool endsWith(const std::string& text, const std::string& tail) {
  return text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

// Norm weights start at one, which would hide a norm that forgets its weight: give them others.
void perturbNorms(const LayerChain& chain, std::uint64_t seed) {
  torch::NoGradGuard no_grad;
  auto generator = stagecut::seededGenerator(seed);
  for (const auto& [name, tensor] : stagecut::llamaStateDict(chain)) {
    if (endsWith(name, "norm.weight")) tensor.uniform_(0.5, 1.5, generator);
  }
}

// --- The reference: HF's formulas written again with plain tensor ops, in other forms. ---

torch::Tensor referenceNorm(const torch::Tensor& x, const torch::Tensor& weight, double eps) {
  return weight * x / torch::sqrt(x.square().mean(-1, true) + eps);
}

torch::Tensor referenceLinear(const Weights& w, const std::string& name, const torch::Tensor& x) {
  auto y = torch::matmul(x, w.at(name + ".weight").t());
  if (w.count(name + ".bias")) y = y + w.at(name + ".bias");
  return y;
}

// HF's rotate_half convention as a complex rotation: feature j pairs with j + d/2, and position p
// turns the pair by p / theta^(2j/d) radians (angles in double precision).
torch::Tensor referenceRotate(const torch::Tensor& x, double theta) {  // x: [batch, seq, heads, d]
  const int64_t seq = x.size(1), d = x.size(3), half = d / 2;
  auto angles = torch::empty({seq, half}, torch::kDouble);
  auto cell = angles.accessor<double, 2>();
  for (int64_t p = 0; p < seq; ++p) {
    for (int64_t j = 0; j < half; ++j) cell[p][j] = static_cast<double>(p) / std::pow(theta, 2.0 * j / d);
  }
  const auto turn = torch::polar(torch::ones_like(angles), angles).to(torch::kComplexFloat).view({1, seq, 1, half});
  const auto pairs = torch::view_as_complex(torch::stack({x.narrow(3, 0, half), x.narrow(3, half, half)}, -1).contiguous());
  const auto turned = torch::view_as_real(pairs * turn);
  return torch::cat({turned.select(-1, 0), turned.select(-1, 1)}, -1);
}

torch::Tensor referenceBlock(const torch::Tensor& x, const Weights& w, const std::string& prefix, const LlamaShape& shape) {
  const int64_t batch = x.size(0), seq = x.size(1), head_dim = shape.hidden / shape.heads;
  const auto normed = referenceNorm(x, w.at(prefix + "input_layernorm.weight"), shape.norm_eps);
  const auto q = referenceRotate(referenceLinear(w, prefix + "self_attn.q_proj", normed).view({batch, seq, shape.heads, head_dim}),
                                 shape.rope_theta);
  const auto k = referenceRotate(referenceLinear(w, prefix + "self_attn.k_proj", normed).view({batch, seq, shape.kv_heads, head_dim}),
                                 shape.rope_theta);
  const auto v = referenceLinear(w, prefix + "self_attn.v_proj", normed).view({batch, seq, shape.kv_heads, head_dim});
  const auto future = torch::full({seq, seq}, -std::numeric_limits<float>::infinity()).triu(1);
  std::vector<torch::Tensor> per_head;
  for (int64_t h = 0; h < shape.heads; ++h) {
    const int64_t kv = h / (shape.heads / shape.kv_heads);  // the KV head that serves query head h
    const auto scores = torch::matmul(q.select(2, h), k.select(2, kv).transpose(1, 2)) / std::sqrt(head_dim);
    per_head.push_back(torch::matmul(torch::softmax(scores + future, -1), v.select(2, kv)));
  }
  const auto h = x + referenceLinear(w, prefix + "self_attn.o_proj", torch::cat(per_head, -1));
  const auto m = referenceNorm(h, w.at(prefix + "post_attention_layernorm.weight"), shape.norm_eps);
  const auto gate = referenceLinear(w, prefix + "mlp.gate_proj", m);
  return h + referenceLinear(w, prefix + "mlp.down_proj", gate * torch::sigmoid(gate) * referenceLinear(w, prefix + "mlp.up_proj", m));
}

torch::Tensor referenceLogits(const torch::Tensor& tokens, const Weights& w, const LlamaShape& shape) {
  auto x = w.at("model.embed_tokens.weight").index_select(0, tokens.flatten()).view({tokens.size(0), tokens.size(1), shape.hidden});
  for (int i = 0; i < shape.layers; ++i) x = referenceBlock(x, w, "model.layers." + std::to_string(i) + ".", shape);
  return referenceLinear(w, "lm_head", referenceNorm(x, w.at("model.norm.weight"), shape.norm_eps));
}

// The chain up to its head: the logits.
torch::Tensor chainLogits(const LayerChain& chain, const torch::Tensor& tokens) {
  torch::NoGradGuard no_grad;
  auto x = tokens;
  for (std::size_t i = 0; i + 1 < chain.layers.size(); ++i) x = chain.layers[i].forward(x, torch::Tensor());
  return x;
}

double maxAbsDiff(const torch::Tensor& a, const torch::Tensor& b) { return (a - b).abs().max().item<double>(); }

// A Python that has Hugging Face transformers: $STAGECUT_EXPORT_PYTHON (make test sets it), the
// export venv, or Debian's python3; "" when none has it.
std::string pythonWithTransformers() {
  std::vector<std::string> candidates;
  if (const char* python = std::getenv("STAGECUT_EXPORT_PYTHON")) candidates.push_back(python);
  candidates.push_back(STAGECUT_SOURCE_DIR "/.deps/export-venv/bin/python");
  candidates.push_back("/usr/bin/python3");
  for (const auto& python : candidates) {
    if (stagecut::testing::runProgram(python, "-c 'import transformers'").exit_code == 0) return python;
  }
  return "";
}

}  // namespace

TEST_CASE("a llama chain has embed, blocks, head and loss, named and kinded as the gpt zoo's", "[profiler][zoo][llama]") {
  stagecut::pinThreads(1);
  const LayerChain chain = buildZooModel(llamaTiny());
  std::vector<std::string> layers;
  for (const auto& layer : chain.layers) layers.push_back(layer.name + ":" + layer.kind);
  CHECK(layers == std::vector<std::string>{"embed:Embedding", "block.0:TransformerBlock", "block.1:TransformerBlock",
                                           "head:LMHead", "loss:CrossEntropyLoss"});
  CHECK(chain.model_name == "llama-tiny");
  CHECK(chain.source == "zoo:llama");
  CHECK(chain.config["kv_heads"] == 2);
  CHECK(chain.config["rope_theta"] == 1e4);
  CHECK(chain.config["norm_eps"] == 1e-5);
  CHECK(chain.config["qkv_bias"] == false);
  CHECK(chain.config["attention"] == (stagecut::llamaHasSdpa() ? "sdpa" : "eager"));
  const auto batch = chain.make_batch(3, 1);
  CHECK(batch.input.sizes().vec() == std::vector<int64_t>{3, 32});
  const auto loss = chain.forward(batch);
  // An untrained model over 512 tokens is close to uniform: cross-entropy near ln(512).
  CHECK(loss.item<double>() == Approx(std::log(512.0)).epsilon(0.1));
  loss.backward();
  for (const auto& parameter : chain.parameters()) CHECK(parameter.grad().defined());
}

TEST_CASE("each llama layer holds the parameters of its closed form", "[profiler][zoo][llama]") {
  for (const bool qkv_bias : {false, true}) {
    INFO("qkv_bias " << qkv_bias);
    ZooOptions options = llamaTiny();
    options.qkv_bias = qkv_bias;
    const LayerChain chain = buildZooModel(options);
    // llama-tiny: 2 blocks, 64 wide, 4 heads of 16, 2 KV heads, FFN 176, vocabulary 512.
    const int64_t hidden = 64, heads = 4, kv = 2, head_dim = 16, ffn = 176, vocab = 512;
    const int64_t block = 2 * hidden + hidden * heads * head_dim + 2 * hidden * kv * head_dim +
                          heads * head_dim * hidden + 3 * hidden * ffn +
                          (qkv_bias ? heads * head_dim + 2 * kv * head_dim : 0);
    const std::vector<int64_t> expected = {vocab * hidden, block, block, hidden + hidden * vocab, 0};
    std::vector<int64_t> counted;
    for (const auto& layer : chain.layers) {
      int64_t count = 0;
      for (const auto& parameter : layer.parameters) count += parameter.numel();
      counted.push_back(count);
    }
    CHECK(counted == expected);
    CHECK(stagecut::llamaParameterCount(stagecut::resolveLlamaShape(options)) ==
          static_cast<double>(expected[0] + 2 * block + expected[3]));
  }
}

TEST_CASE("the llama presets have the published models' shapes and parameter counts", "[profiler][zoo][llama]") {
  // Parameter counts of the published checkpoints (their safetensors' totals); none is allocated.
  const std::pair<const char*, double> published[] = {
      {"llama2-7b", 6738415616.0},     {"llama3-8b", 8030261248.0},   {"llama3-70b", 70553706496.0},
      {"llama3.1-405b", 405853388800.0}, {"mistral-7b", 7241732096.0}, {"qwen2.5-7b", 7615616512.0},
      {"tinyllama-1.1b", 1100048384.0}};
  for (const auto& [preset, parameters] : published) {
    INFO(preset);
    ZooOptions options;
    options.family = "llama";
    options.preset = preset;
    CHECK(stagecut::llamaParameterCount(stagecut::resolveLlamaShape(options)) == parameters);
  }
  ZooOptions options;
  options.family = "llama";
  options.preset = "llama3-70b";
  const LlamaShape shape = stagecut::resolveLlamaShape(options);
  CHECK(shape.layers == 80);
  CHECK(shape.hidden == 8192);
  CHECK(shape.heads == 64);
  CHECK(shape.kv_heads == 8);
  CHECK(shape.ffn == 28672);
  CHECK(shape.vocab == 128256);
  CHECK(shape.rope_theta == 500000.0);
  options.preset = "";  // the family's default, as gpt's is gpt2-small
  CHECK(stagecut::resolveLlamaShape(options).vocab == 128256);
  options.preset = "qwen2.5-7b";
  CHECK(stagecut::resolveLlamaShape(options).qkv_bias);
  CHECK(stagecut::resolveLlamaShape(options).norm_eps == 1e-6);
  options.preset = "mistral-7b";  // v0.1's rotary base
  CHECK(stagecut::resolveLlamaShape(options).rope_theta == 1e4);
}

TEST_CASE("every llama field can be overridden; a width alone scales the FFN, heads alone keep the group",
          "[profiler][zoo][llama]") {
  ZooOptions options;
  options.family = "llama";
  options.preset = "llama3-8b";
  options.layers = 3;
  options.seq = 128;
  options.vocab = 1000;
  options.rope_theta = 2e5;
  options.norm_eps = 1e-6;
  options.hidden = 1024;
  LlamaShape shape = stagecut::resolveLlamaShape(options);
  CHECK(shape.layers == 3);
  CHECK(shape.seq == 128);
  CHECK(shape.vocab == 1000);
  CHECK(shape.rope_theta == 2e5);
  CHECK(shape.norm_eps == 1e-6);
  CHECK(shape.ffn == 3584);      // 14336 / 4096 x 1024
  options.heads = 16;
  CHECK(stagecut::resolveLlamaShape(options).kv_heads == 4);  // 4 query heads per KV head, as llama3-8b
  options.kv_heads = 16;
  options.ffn = 1000;
  shape = stagecut::resolveLlamaShape(options);
  CHECK(shape.kv_heads == 16);
  CHECK(shape.ffn == 1000);
}

TEST_CASE("with as many KV heads as heads a llama block is plain multi-head attention", "[profiler][zoo][llama]") {
  stagecut::pinThreads(1);
  ZooOptions options = llamaTiny();
  options.kv_heads = 4;
  const LayerChain chain = buildZooModel(options);
  perturbNorms(chain, 3);
  const LlamaShape shape = stagecut::resolveLlamaShape(options);
  const auto x = torch::randn({2, 32, 64}, stagecut::seededGenerator(5));
  torch::NoGradGuard no_grad;
  const auto got = chain.layers[1].forward(x, torch::Tensor());
  CHECK(maxAbsDiff(got, referenceBlock(x, weightsOf(chain), "model.layers.0.", shape)) < 1e-5);
}

TEST_CASE("grouped-query attention equals multi-head attention with each KV head's weights repeated for its group",
          "[profiler][zoo][llama]") {
  stagecut::pinThreads(1);
  const LayerChain grouped = buildZooModel(llamaTiny());  // 4 heads, 2 KV heads
  perturbNorms(grouped, 3);
  ZooOptions options = llamaTiny();
  options.kv_heads = 4;
  const LayerChain plain = buildZooModel(options);
  const Weights from = weightsOf(grouped);
  {
    torch::NoGradGuard no_grad;
    for (const auto& [name, tensor] : stagecut::llamaStateDict(plain)) {
      const bool kv = name.find("k_proj") != std::string::npos || name.find("v_proj") != std::string::npos;
      // KV head g (rows 16g..16g+15) serves query heads 2g and 2g+1.
      tensor.copy_(kv ? from.at(name).view({2, 16, -1}).repeat_interleave(2, 0).reshape(tensor.sizes()) : from.at(name));
    }
  }
  const auto x = torch::randn({2, 32, 64}, stagecut::seededGenerator(5));
  torch::NoGradGuard no_grad;
  CHECK(maxAbsDiff(grouped.layers[1].forward(x, torch::Tensor()), plain.layers[1].forward(x, torch::Tensor())) < 1e-6);
}

TEST_CASE("the llama chain's logits and loss equal a reference written from the Hugging Face formulas",
          "[profiler][zoo][llama]") {
  stagecut::pinThreads(1);
  for (const ZooOptions& options : {llamaTiny(), qwenTiny()}) {
    INFO("qkv_bias " << options.qkv_bias.value_or(false));
    const LayerChain chain = buildZooModel(options);
    perturbNorms(chain, 3);
    const LlamaShape shape = stagecut::resolveLlamaShape(options);
    const auto batch = chain.make_batch(2, 9);
    const auto logits = chainLogits(chain, batch.input);
    const auto want = referenceLogits(batch.input, weightsOf(chain), shape);
    REQUIRE(logits.sizes() == want.sizes());
    CHECK(maxAbsDiff(logits, want) < 1e-5);
    // Cross-entropy as log-sum-exp minus the target's logit, averaged over the tokens.
    const auto flat = want.reshape({-1, shape.vocab});
    const auto expected = (flat.logsumexp(-1) - flat.gather(1, batch.target.reshape({-1, 1})).squeeze(1)).mean();
    torch::NoGradGuard no_grad;
    CHECK(chain.forward(batch).item<double>() == Approx(expected.item<double>()).epsilon(1e-5));
  }
}

TEST_CASE("the llama loss takes 16-bit logits upcast to float32", "[profiler][zoo][llama]") {
  const LayerChain chain = buildZooModel(llamaTiny());
  const auto logits = torch::randn({2, 4, 512}, stagecut::seededGenerator(2)).to(torch::kBFloat16);
  const auto target = torch::randint(0, 512, {2, 4}, stagecut::seededGenerator(3), torch::kLong);
  const auto loss = chain.layers.back().forward(logits, target);
  CHECK(loss.scalar_type() == torch::kFloat);
  const auto expected = torch::nn::functional::cross_entropy(logits.to(torch::kFloat).reshape({-1, 512}), target.reshape({-1}));
  CHECK(loss.item<double>() == expected.item<double>());
}

TEST_CASE("a bfloat16 llama chain computes in bfloat16 and stays near its float32 twin", "[profiler][zoo][llama]") {
  stagecut::pinThreads(1);
  const LayerChain single = buildZooModel(llamaTiny());
  LayerChain half = buildZooModel(llamaTiny());
  stagecut::placeChain(half, torch::kCPU, torch::kBFloat16);
  const auto batch = single.make_batch(2, 9);
  const auto wide = chainLogits(single, batch.input);
  const auto narrow = chainLogits(half, half.make_batch(2, 9).input);
  CHECK(narrow.scalar_type() == torch::kBFloat16);
  // bfloat16 keeps 8 bits of mantissa: about 0.6% of the largest logit after 2 blocks here.
  CHECK(maxAbsDiff(narrow.to(torch::kFloat), wide) < 0.02 * wide.abs().max().item<double>());
  torch::NoGradGuard no_grad;
  const auto loss = half.forward(half.make_batch(2, 9));
  CHECK(loss.scalar_type() == torch::kFloat);
  CHECK(loss.item<double>() == Approx(single.forward(batch).item<double>()).epsilon(1e-3));
}

TEST_CASE("llama attention through scaled_dot_product_attention equals the explicit softmax", "[profiler][zoo][llama]") {
  stagecut::pinThreads(1);
  LayerChain eager = stagecut::describeLlama(llamaTiny(), stagecut::LlamaAttentionPath::kEager);
  stagecut::buildAllLayers(eager);
  CHECK(eager.config["attention"] == "eager");
  if (!stagecut::llamaHasSdpa()) {
    WARN("this LibTorch (" TORCH_VERSION ") has no scaled_dot_product_attention: only the explicit softmax is built");
    return;
  }
  LayerChain fused = stagecut::describeLlama(llamaTiny());
  stagecut::buildAllLayers(fused);
  CHECK(fused.config["attention"] == "sdpa");
  const auto batch = eager.make_batch(2, 4);
  CHECK(maxAbsDiff(chainLogits(fused, batch.input), chainLogits(eager, batch.input)) < 1e-5);
}

TEST_CASE("the llama chain equals Hugging Face's LlamaForCausalLM with the same weights", "[profiler][zoo][llama][hf]") {
  const std::string python = pythonWithTransformers();
  if (python.empty()) {
    WARN("no Python with transformers ($STAGECUT_EXPORT_PYTHON, .deps/export-venv or /usr/bin/python3; make "
         "export-venv installs it): the llama chain is not compared with Hugging Face's model");
    return;
  }
  stagecut::pinThreads(1);
  // llama-tiny as LlamaForCausalLM; with q, k and v biases as Qwen2ForCausalLM.
  for (const ZooOptions& options : {llamaTiny(), qwenTiny()}) {
    INFO("qkv_bias " << options.qkv_bias.value_or(false));
    const LayerChain chain = buildZooModel(options);
    perturbNorms(chain, 3);
    c10::Dict<std::string, torch::Tensor> tensors;
    for (const auto& [name, tensor] : stagecut::llamaStateDict(chain)) tensors.insert(name, tensor.detach());
    const auto batch = chain.make_batch(2, 9);
    tensors.insert("input_ids", batch.input);
    tensors.insert("logits", chainLogits(chain, batch.input));
    const TempDir dir;
    const std::vector<char> bytes = torch::pickle_save(tensors);
    std::ofstream(dir.file("llama.pt"), std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    dir.write("config.json", chain.config.dump());
    const CommandResult result = stagecut::testing::runProgram(
        python, STAGECUT_SOURCE_DIR "/tests/exporter/llama_reference.py " + dir.file("llama.pt") + " " + dir.file("config.json"));
    INFO(result.out << result.err);
    CHECK(result.exit_code == 0);
    CHECK_THAT(result.out, StartsWith(options.qkv_bias.value_or(false) ? "Qwen2ForCausalLM" : "LlamaForCausalLM"));
  }
}

TEST_CASE("the same seed builds the same llama weights; another seed does not", "[profiler][zoo][llama]") {
  const Weights first = weightsOf(buildZooModel(llamaTiny()));
  const Weights second = weightsOf(buildZooModel(llamaTiny()));
  ZooOptions other_seed = llamaTiny();
  other_seed.seed = 12;
  const Weights other = weightsOf(buildZooModel(other_seed));
  for (const auto& [name, tensor] : first) {
    INFO(name);
    CHECK(torch::equal(tensor, second.at(name)));
    if (!endsWith(name, "norm.weight")) CHECK_FALSE(torch::equal(tensor, other.at(name)));
  }
}

TEST_CASE("impossible llama settings are refused naming the flag and the fix", "[profiler][zoo][llama][errors]") {
  const auto refusal = [](const std::function<void(ZooOptions&)>& change) {
    ZooOptions options = llamaTiny();
    change(options);
    return stagecut::testing::inputErrorOf([&] { buildZooModel(options); });
  };
  CHECK(refusal([](ZooOptions& o) { o.kv_heads = 3; }) ==
        "--heads 4 is not divisible by --kv-heads 3; pick a KV head count that divides the heads");
  CHECK(refusal([](ZooOptions& o) { o.heads = 6; }) ==
        "--hidden 64 is not divisible by --heads 6; pick a head count that divides the width");
  CHECK(refusal([](ZooOptions& o) { o.heads = 12; o.hidden = 36; }) ==
        "--hidden 36 over --heads 12 gives heads 3 wide; rotary embeddings rotate pairs of features: pick a head "
        "count that leaves an even head width");
  // llama3-8b's 4 heads per KV head cannot group 2 heads: its 8 KV heads stay, and do not divide them.
  CHECK(refusal([](ZooOptions& o) { o.preset = "llama3-8b"; o.heads = 2; o.kv_heads = 0; }) ==
        "--heads 2 is not divisible by the preset's --kv-heads 8; pick a KV head count that divides the heads");
  CHECK(refusal([](ZooOptions& o) { o.hidden = 2000000000; }) ==  // its FFN, scaled with it, overflows no int
        "--hidden 2000000000: at most 65536 for a zoo model; choose a smaller size");
  CHECK(refusal([](ZooOptions& o) { o.kv_heads = 5000; }) == "--kv-heads 5000: at most 4096 for a zoo model; choose a smaller size");
  CHECK(refusal([](ZooOptions& o) { o.rope_theta = -1; }) == "--rope-theta -1: must be a number above 0 and at most 1e+12");
  CHECK(refusal([](ZooOptions& o) { o.norm_eps = NAN; }) == "--norm-eps nan: must be a number above 0 and at most 1");
  CHECK(refusal([](ZooOptions& o) { o.preset = "llama3-8"; }) == "--preset llama3-8: not a llama preset, did you mean 'llama3-8b'?");
  CHECK(refusal([](ZooOptions& o) { o.preset = "gpt2-small"; }) ==
        "--preset gpt2-small: not a llama preset; use one of: llama2-7b, llama3-8b, llama3-70b, llama3.1-405b, "
        "mistral-7b, qwen2.5-7b, tinyllama-1.1b, llama-tiny");
  // Weights and gradients of 405 billion parameters fit no machine this runs on.
  CHECK_THAT(refusal([](ZooOptions& o) { o = ZooOptions{}; o.family = "llama"; o.preset = "llama3.1-405b"; }),
             StartsWith("--model llama --preset llama3.1-405b: its weights and their gradients alone would take ") &&
                 EndsWith("; choose smaller sizes (fewer --layers, a smaller --hidden)"));
}

TEST_CASE("stagecut profile --model llama profiles the tiny preset, and validate rebuilds it from the profile",
          "[profiler][cli][llama]") {
  const TempDir dir;
  // Qwen2's layout (q, k and v biases) at llama-tiny's sizes: every llama field goes through model.config.
  const std::string sizes = " --layers 2 --hidden 64 --heads 4 --kv-heads 2 --ffn 176 --vocab 512 --seq 16"
                            " --rope-theta 20000 --norm-eps 1e-6";
  CommandResult result = runStagecut("profile --model llama --preset qwen2.5-7b" + sizes + " --microbatch 2" +
                                     stagecut::testing::kQuickProfileFlags + " -o " + dir.file("p.json"));
  REQUIRE(result.exit_code == 0);
  const stagecut::Profile profile = stagecut::readProfileFile(dir.file("p.json"));
  std::vector<std::string> layers;
  for (const auto& layer : profile.layers) layers.push_back(layer.name + ":" + layer.kind);
  CHECK(layers == std::vector<std::string>{"embed:Embedding", "block.0:TransformerBlock", "block.1:TransformerBlock",
                                           "head:LMHead", "loss:CrossEntropyLoss"});
  CHECK(profile.model.name == "qwen2.5-7b");
  CHECK(profile.model.source == "zoo:llama");
  CHECK(profile.model.config["qkv_bias"] == true);
  CHECK(profile.model.config["rope_theta"] == 20000.0);
  CHECK(profile.model.config["norm_eps"] == 1e-6);
  CHECK(profile.run.seq_len == 16);
  // 64 x 64 q and o, 2 x 64 x 32 k and v, their 128 biases, 3 x 64 x 176 MLP, 2 x 64 norm weights.
  CHECK(profile.layers[1].params == 4096 * 2 + 4096 + 128 + 3 * 64 * 176 + 128);
  REQUIRE(runStagecut("partition " + dir.file("p.json") + " --stages 2 --microbatches 2 -o " + dir.file("s.json")).exit_code == 0);
  result = runStagecut("validate " + dir.file("p.json") + " --partition " + dir.file("s.json") +
                       " --microbatches 2 --steps 1 --json");
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  const auto report = nlohmann::json::parse(result.out);
  CHECK(report["grad_check"] == "pass");
}

TEST_CASE("stagecut profile refuses llama flags that are no request, in one line", "[profiler][cli][llama][errors]") {
  const std::pair<std::string, std::string> cases[] = {
      {"--model llama --kv-heads 0", "--kv-heads 0: must be 1 or more; leave it out for the preset's"},
      {"--model llama --rope-theta 0", "--rope-theta 0: must be above 0; leave it out for the preset's"},
      {"--model llama --norm-eps -1e-5", "--norm-eps -1e-5: must be above 0; leave it out for the preset's"},
      {"--model gpt --kv-heads 2", "--kv-heads: is a setting of --model llama, not of --model gpt"},
      {"--torchscript m.pt --input 4x8:float32 --rope-theta 1e4",
       "--rope-theta: is a setting of --model llama, not of a --torchscript module"},
      {"--model llama --preset llama-tiny --kv-heads 3",
       "--heads 4 is not divisible by --kv-heads 3; pick a KV head count that divides the heads"},
      {"--model llama --preset llama-tiny --norm-eps 2", "--norm-eps 2: must be a number above 0 and at most 1"},
      {"--model llama --preset llama3-8", "--preset llama3-8: not a llama preset, did you mean 'llama3-8b'?"},
  };
  for (const auto& [args, message] : cases) {
    INFO(args);
    const CommandResult result = runStagecut("profile " + args);
    CHECK(result.exit_code == 2);
    CHECK(result.out.empty());
    CHECK(result.err == "stagecut: " + message + "\n");
  }
}
