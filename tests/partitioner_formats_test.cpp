#include <catch2/catch.hpp>

#include "core/error.h"
#include "partitioner/baselines.h"
#include "partitioner/framework_formats.h"
#include "partitioner/megatron_layout.h"
#include "partitioner/partition_summary.h"
#include "partitioner/profile_partitioner.h"
#include "tests/test_support.h"

using stagecut::testing::makeProfile;

namespace {

stagecut::Profile gptLike(int blocks) {
  stagecut::Profile profile = makeProfile(blocks + 3);
  profile.layers[0].name = "embed";
  profile.layers[0].kind = "Embedding";
  for (int b = 0; b < blocks; ++b) {
    profile.layers[b + 1].name = "block." + std::to_string(b);
    profile.layers[b + 1].kind = "TransformerBlock";
  }
  profile.layers[blocks + 1].name = "head";
  profile.layers[blocks + 1].kind = "LMHead";
  profile.layers[blocks + 2].name = "loss";
  profile.layers[blocks + 2].kind = "CrossEntropyLoss";
  return profile;
}

}  // namespace

TEST_CASE("uniform split gives the remainder to the first stages, as DeepSpeed does", "[partitioner][baselines]") {
  CHECK(stagecut::uniformSplit(22, 4) == std::vector<int>{6, 6, 5, 5});
  CHECK(stagecut::uniformSplit(8, 4) == std::vector<int>{2, 2, 2, 2});
  CHECK(stagecut::boundaryList({3, 5, 5, 3}) == std::vector<int>{0, 3, 8, 13, 16});
}

TEST_CASE("params split reproduces DeepSpeed's partition_balanced", "[partitioner][baselines]") {
  // Hand-run of DeepSpeed's table: spread minimised, ties to the later cut.
  CHECK(stagecut::deepspeedParamsSplit({10, 10, 10, 10}, 2) == std::vector<int>{2, 2});
  CHECK(stagecut::deepspeedParamsSplit({100, 1, 1, 1, 1, 100}, 2) == std::vector<int>{3, 3});
  CHECK(stagecut::deepspeedParamsSplit({5, 5}, 3) == std::vector<int>{1, 1, 0});
}

TEST_CASE("partitionForComparison gives uniform, params and compute in that order", "[partitioner][baselines]") {
  const stagecut::Profile profile = gptLike(6);
  stagecut::PartitionOptions options;
  options.stages = 3;
  options.microbatches = 6;
  const std::vector<stagecut::Partition> splits = stagecut::partitionForComparison(profile, options, "p");
  REQUIRE(splits.size() == 3);
  const stagecut::SplitMethod methods[] = {stagecut::SplitMethod::kUniform, stagecut::SplitMethod::kParams,
                                           stagecut::SplitMethod::kCompute};
  for (std::size_t i = 0; i < splits.size(); ++i) {
    const stagecut::Partition alone = stagecut::partitionProfile(profile, options, "p", methods[i]);
    CHECK(splits[i].method == stagecut::splitMethodName(methods[i]));
    CHECK(splits[i].layersPerStage() == alone.layersPerStage());
    CHECK(splits[i].predicted_step_ms == alone.predicted_step_ms);
  }
}

TEST_CASE("megatron layout marks embedding, blocks and loss and shortens runs", "[partitioner][formats]") {
  const stagecut::Profile profile = gptLike(14);  // 17 layers
  const stagecut::MegatronGroups groups = stagecut::megatronGroups(profile);
  CHECK(groups.embedding_layers == 1);
  CHECK(groups.block_layers == 14);
  CHECK(groups.loss_layers == 2);
  CHECK(stagecut::megatronLayout(groups, {4, 5, 5, 3}) == "Ettt|t*5|t*5|tL");
  CHECK(stagecut::expandMegatronLayout("Ettt|t*5|t*5|tL") ==
        std::vector<std::string>{"Ettt", "ttttt", "ttttt", "tL"});
  CHECK(stagecut::megatronFirstLastFlags(groups, {4, 5, 5, 3}) ==
        "--decoder-first-pipeline-num-layers 3 --decoder-last-pipeline-num-layers 1");
  CHECK(stagecut::megatronFirstLastFlags(groups, {4, 4, 5, 4}).empty());
  CHECK(stagecut::formatSplit("megatron", profile, {4, 5, 5, 3}) ==
        "--pipeline-model-parallel-layout \"Ettt|t*5|t*5|tL\"\n"
        "--decoder-first-pipeline-num-layers 3 --decoder-last-pipeline-num-layers 1");
  // A split between the head and the loss cannot be written for Megatron.
  CHECK_THROWS_WITH(stagecut::formatSplit("megatron", profile, {4, 5, 7, 1}),
                    "--format megatron: the split separates the norm, output and loss layers, which "
                    "Megatron runs as one unit; partition with --format megatron (it keeps them "
                    "together) or use --format list");
}

TEST_CASE("the Megatron view merges the embedding and the loss layers and maps splits back", "[partitioner][formats]") {
  const stagecut::Profile profile = gptLike(6);
  const stagecut::MegatronGroups groups = stagecut::megatronGroups(profile);
  const stagecut::Profile view = stagecut::megatronView(profile, groups);
  REQUIRE(view.layerCount() == 8);
  CHECK(view.layers.back().name == "head+loss");
  CHECK(view.layers.back().forward_ms.median == profile.layers[7].forward_ms.median + profile.layers[8].forward_ms.median);
  CHECK(stagecut::fromMegatronView({3, 3, 2}, groups) == std::vector<int>{3, 3, 3});
}

TEST_CASE("framework formats describe the split in each framework's words", "[partitioner][formats]") {
  const stagecut::Profile profile = gptLike(2);  // embed, block.0, block.1, head, loss
  const std::vector<int> split{2, 1, 2};
  CHECK(stagecut::formatSplit("list", profile, split) == "2,1,2");
  CHECK(stagecut::formatSplit("torchgpipe", profile, split) == "balance=[2, 1, 2]");
  CHECK(stagecut::formatSplit("fairscale", profile, split) == "balance=[2, 1, 2]");
  CHECK(stagecut::formatSplit("deepspeed", profile, split) ==
        "parts=[0, 2, 3, 5]\nstage=0 layers=2\n     0: Embedding\n     1: TransformerBlock\n"
        "stage=1 layers=1\n     2: TransformerBlock\nstage=2 layers=2\n     3: LMHead\n     4: CrossEntropyLoss");
  CHECK(stagecut::formatSplit("pippy", profile, split) ==
        "split_spec={\"block.1\": SplitPoint.BEGINNING, \"head\": SplitPoint.BEGINNING}");
  CHECK(stagecut::formatSplit("torchtitan", profile, split) ==
        "module_fqns_per_model_part=[[\"embed\", \"block.0\"], [\"block.1\"], [\"head\", \"loss\"]]");
  CHECK(stagecut::formatSplit("megatron", profile, split) ==
        "--pipeline-model-parallel-layout \"Et|t|L\"");
  const auto outputs = stagecut::frameworkOutputs(profile, split);
  CHECK(outputs.size() == 7);
  CHECK(outputs.count("json") == 0);
}

TEST_CASE("formats refuse what they cannot express and splits that do not cover the chain", "[partitioner][formats]") {
  stagecut::Profile profile = gptLike(2);
  CHECK_THROWS_WITH(stagecut::formatSplit("list", profile, {2, 2}),
                    "--format: the stages hold 4 layers, the chain has 5");
  CHECK_THROWS_WITH(stagecut::formatSplit("list", profile, {5, 0}),
                    "--format: stage 1 has 0 layers; every stage needs at least one");
  CHECK_THROWS_WITH(stagecut::formatSplit("yaml", profile, {5}),
                    "--format: unknown format 'yaml'; use one of: list, json, megatron, torchgpipe, "
                    "fairscale, deepspeed, pippy, torchtitan");
  profile.layers[2].name = "block.0";
  CHECK_THROWS_WITH(stagecut::formatSplit("pippy", profile, {2, 3}),
                    "--format pippy: layer name \"block.0\" appears twice; pippy names modules by "
                    "name, so give the profile's layers unique names");
  CHECK(stagecut::frameworkOutputs(profile, {2, 3}).count("pippy") == 0);
}

TEST_CASE("predicted step and bubble follow docs/metrics.md", "[partitioner][metrics]") {
  // Equal stages: the closed form (N-1)/(M+N-1).
  CHECK(stagecut::predictedStepMs({2, 2, 2, 2}, 8) == 22.0);
  CHECK(stagecut::predictedBubble({2, 2, 2, 2}, 8) == Approx(3.0 / 11.0));
  CHECK(stagecut::predictedStepMs({1, 3, 2}, 4) == 6.0 + 3 * 3.0);
  CHECK(stagecut::predictedBubble({1, 3, 2}, 4) == Approx(1.0 - 4 * 6.0 / (3 * 15.0)));
}
