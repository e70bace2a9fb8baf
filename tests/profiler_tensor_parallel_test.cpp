#include <catch2/catch.hpp>

#include "core/error.h"
#include "core/parallel_degrees.h"
#include "core/profile.h"
#include "profiler/layer_chain.h"
#include "profiler/profile_request.h"
#include "profiler/zoo.h"
#include "profiler/zoo_checks.h"

namespace {

stagecut::ZooOptions tinyLlama(int tensor_parallel) {
  stagecut::ZooOptions zoo;
  zoo.family = "llama";
  zoo.preset = "llama-tiny";  // 64 wide, 4 heads, 2 KV heads, FFN 176, vocab 512
  zoo.seq = 16;
  zoo.parallel.tensor_parallel = tensor_parallel;
  return zoo;
}

std::int64_t parameterCount(const stagecut::ChainLayer& layer) {
  std::int64_t count = 0;
  for (const auto& parameter : layer.parameters) count += parameter.numel();
  return count;
}

}  // namespace

TEST_CASE("a tensor-parallel shard holds 1/t of a block's matrices and of the vocabulary", "[profiler][tensor-parallel]") {
  const stagecut::LayerChain whole = stagecut::buildZooModel(tinyLlama(1));
  const stagecut::LayerChain shard = stagecut::buildZooModel(tinyLlama(2));
  REQUIRE(whole.layers.size() == shard.layers.size());
  const std::int64_t hidden = 64;
  // A block: its two RMSNorm weights are whole on every rank, the rest is halved.
  CHECK(parameterCount(shard.layers[1]) - 2 * hidden == (parameterCount(whole.layers[1]) - 2 * hidden) / 2);
  // The vocabulary is padded to 128 x t = 256 (512 already is) and split: 256 rows each.
  CHECK(parameterCount(shard.layers[0]) == 256 * hidden);
  CHECK(parameterCount(shard.layers[3]) == 256 * hidden + hidden);  // the head: its norm is whole
  CHECK(stagecut::shardVocab(50257, 8) == 6400);                    // 51200 / 8, as Megatron pads gpt-2's
  CHECK(stagecut::shardVocab(50257, 1) == 50257);
  // The shard computes: a forward on the full model's token ids ends in a finite loss.
  const auto batch = shard.make_batch(2, 3);
  CHECK(std::isfinite(shard.forward(batch).item<double>()));
}

TEST_CASE("a tensor-parallel profile records each shard's collectives",
          "[profiler][tensor-parallel]") {
  stagecut::ProfileRequest request;
  request.zoo = tinyLlama(2);
  request.measure.microbatch_size = 2;
  request.measure.warmup_rounds = 0;
  request.measure.min_repeats = 2;
  request.measure.max_repeats = 2;
  const stagecut::Profile profile = stagecut::runProfile(request);
  REQUIRE(stagecut::readParallelDegrees(profile.model.config, "p.json") == stagecut::ParallelDegrees{2, false});
  const std::uint64_t row_bytes = 2 * 16 * 64 * 4;  // microbatch 2 x seq 16 x hidden 64, float32
  const auto collectives = [&](int index) { return *profile.layers.at(static_cast<std::size_t>(index)).tp_collectives; };
  CHECK(collectives(0) == stagecut::LayerCost::TensorParallelCollectives{1, 0, row_bytes});  // embedding
  CHECK(collectives(1) == stagecut::LayerCost::TensorParallelCollectives{2, 2, row_bytes});  // a block
  CHECK(collectives(3) == stagecut::LayerCost::TensorParallelCollectives{0, 1, row_bytes});  // the head
  CHECK(collectives(4) == stagecut::LayerCost::TensorParallelCollectives{3, 0, 2 * 16 * 4});  // the loss's statistics

}

TEST_CASE("tensor parallelism is refused where it cannot shard", "[profiler][tensor-parallel]") {
  stagecut::ZooOptions three = tinyLlama(3);
  CHECK_THROWS_WITH(stagecut::checkZooOptions(three), Catch::Matchers::StartsWith("--tensor-parallel 3: does not divide --heads 4"));
  stagecut::ZooOptions four = tinyLlama(4);  // 4 heads but 2 KV heads
  CHECK_THROWS_WITH(stagecut::checkZooOptions(four), Catch::Matchers::StartsWith("--tensor-parallel 4: does not divide --kv-heads 2"));
  stagecut::ZooOptions sequence = tinyLlama(1);
  sequence.parallel.sequence_parallel = true;
  CHECK_THROWS_WITH(stagecut::checkZooOptions(sequence), Catch::Matchers::StartsWith("--sequence-parallel"));
  stagecut::ZooOptions mlp;
  mlp.family = "mlp";
  mlp.parallel.tensor_parallel = 2;
  CHECK_THROWS_WITH(stagecut::checkZooOptions(mlp), Catch::Matchers::Contains("has no tensor-parallel shards"));
}
