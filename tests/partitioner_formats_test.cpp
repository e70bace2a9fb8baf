#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include <catch2/catch.hpp>

#include "core/error.h"
#include "partitioner/baselines.h"
#include "partitioner/framework_formats.h"
#include "partitioner/megatron_layout.h"
#include "partitioner/partition_summary.h"
#include "partitioner/profile_partitioner.h"
#include "partitioner/split_text.h"
#include "tests/test_support.h"

using stagecut::testing::makeGptChain;
using stagecut::testing::makeProfile;

namespace {


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
  const stagecut::Profile profile = makeGptChain(6);
  stagecut::PartitionOptions options;
  options.placement = stagecut::Placement::loop(3, 1);
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
  const stagecut::Profile profile = makeGptChain(14);  // 17 layers
  const stagecut::MegatronGroups groups = stagecut::megatronGroups(profile);
  CHECK(groups.embedding_layers == 1);
  CHECK(groups.block_layers == 14);
  CHECK(groups.loss_layers == 2);
  CHECK(stagecut::megatronLayout(groups, {4, 5, 5, 3}) == "Ettt|t*5|t*5|tL");
  CHECK(stagecut::expandMegatronLayout("Ettt|t*5|t*5|tL") ==
        std::vector<std::string>{"Ettt", "ttttt", "ttttt", "tL"});
  CHECK(stagecut::megatronFlags(groups, {4, 5, 5, 3}) ==
        "--num-layers 14 --pipeline-model-parallel-size 4 --decoder-first-pipeline-num-layers 3 "
        "--decoder-last-pipeline-num-layers 1");
  CHECK(stagecut::megatronFlags(groups, {4, 4, 5, 4}).empty());
  // The two alternatives, never in one line: Megatron refuses them together.
  CHECK(stagecut::formatSplit(stagecut::FrameworkFormat::kMegatron, profile, {4, 5, 5, 3}) ==
        "--pipeline-model-parallel-layout \"Ettt|t*5|t*5|tL\"\nor\n"
        "--num-layers 14 --pipeline-model-parallel-size 4 --decoder-first-pipeline-num-layers 3 "
        "--decoder-last-pipeline-num-layers 1");
  // A split between the head and the loss cannot be written for Megatron.
  CHECK_THROWS_WITH(stagecut::formatSplit(stagecut::FrameworkFormat::kMegatron, profile, {4, 5, 7, 1}),
                    "--format megatron: stage 3 holds only the loss (layer 16, loss (CrossEntropyLoss)); "
                    "DeepSpeed, torchgpipe, fairscale, PiPPy, torchtitan apply the loss to the last stage's "
                    "output; partition with --format megatron for the best split it can run");
}

TEST_CASE("megatron's flags: the simplest that express the split, by Megatron's rules", "[partitioner][formats]") {
  const auto flags = [](int blocks, const std::vector<int>& counts) {
    return stagecut::megatronFlags(stagecut::megatronGroups(makeGptChain(blocks)), counts);
  };
  const std::string base8 = "--num-layers 8 --pipeline-model-parallel-size 4";
  CHECK(flags(8, {3, 2, 2, 4}) == base8);  // 2 blocks each: no flag
  CHECK(flags(8, {6, 1, 1, 3}) == base8 + " --decoder-first-pipeline-num-layers 5");
  CHECK(flags(8, {2, 1, 1, 7}) == base8 + " --decoder-last-pipeline-num-layers 5");
  CHECK(flags(8, {2, 3, 3, 3}) ==
        base8 + " --decoder-first-pipeline-num-layers 1 --decoder-last-pipeline-num-layers 1");
  // The embedding (loss) counted as a layer of an even split: (7 + 1) / 4 = 2 per stage.
  const std::string base7 = "--num-layers 7 --pipeline-model-parallel-size 4";
  CHECK(flags(7, {2, 2, 2, 4}) == base7 + " --account-for-embedding-in-pipeline-split");
  CHECK(flags(7, {3, 2, 2, 3}) == base7 + " --account-for-loss-in-pipeline-split");
  CHECK(flags(6, {2, 2, 2, 3}) == "--num-layers 6 --pipeline-model-parallel-size 4 "
                                  "--account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split");
  // Only the accounted embedding can leave the first stage without blocks (flags must be >= 1).
  CHECK(flags(3, {1, 1, 1, 3}) == "--num-layers 3 --pipeline-model-parallel-size 4 "
                                  "--account-for-embedding-in-pipeline-split");
  CHECK(flags(8, {1, 3, 3, 5}).empty());
  CHECK(flags(8, {3, 2, 3, 3}).empty());  // uneven middle stages need a layout
  // Megatron's own checks, as its TransformerConfig makes them.
  CHECK(stagecut::megatronBlocksFromFlags(8, 4, true, false, 2, std::nullopt).empty());  // both kinds
  CHECK(stagecut::megatronBlocksFromFlags(8, 4, false, false, 0, std::nullopt).empty());  // "must be > 0"
  CHECK(stagecut::megatronBlocksFromFlags(8, 3, false, false, 4, 4).empty());  // a middle stage without layers
  CHECK(stagecut::megatronBlocksFromFlags(8, 3, false, false, 4, 3) == std::vector<int>{4, 1, 3});
}

namespace {

// Megatron's get_num_layers_to_build with a virtual pipeline, written from its (rank, virtual
// stage) view as the rules read in megatron/core: blocks built by chunk c = k N + r, or empty
// where TransformerConfig refuses the flags.
std::vector<int> megatronVirtualPipelineBuilds(int blocks, int ranks, int v, bool embedding, bool loss,
                                               std::optional<int> first, std::optional<int> last) {
  if ((first || last) && (embedding || loss)) return {};
  std::vector<int> per_rank(static_cast<std::size_t>(ranks));
  if (first || last) {
    if ((first && (*first <= 0 || *first % v != 0)) || (last && (*last <= 0 || *last % v != 0))) return {};
    const int middle = blocks - first.value_or(0) - last.value_or(0);
    const int middle_ranks = ranks - (first ? 1 : 0) - (last ? 1 : 0);
    if (middle < 0 || (middle > 0) != (middle_ranks > 0)) return {};
    if (middle_ranks > 0 && (middle % middle_ranks != 0 || (middle / middle_ranks) % v != 0)) return {};
    for (int r = 0; r < ranks; ++r) {
      per_rank[static_cast<std::size_t>(r)] = r == 0 && first ? *first
                                              : r == ranks - 1 && last ? *last
                                                                       : middle / middle_ranks;
    }
  } else {
    const int counted = blocks + (embedding ? 1 : 0) + (loss ? 1 : 0);
    if (counted % ranks != 0 || (counted / ranks) % v != 0) return {};
    for (int& rank : per_rank) rank = counted / ranks;
  }
  std::vector<int> chunks;
  for (int k = 0; k < v; ++k) {
    for (int r = 0; r < ranks; ++r) {
      int built = per_rank[static_cast<std::size_t>(r)] / v;
      if (embedding && r == 0 && k == 0) --built;
      if (loss && r == ranks - 1 && k == v - 1) --built;
      if (built < 0) return {};
      chunks.push_back(built);
    }
  }
  return chunks;
}

}  // namespace

TEST_CASE("megatron's flags for a virtual pipeline build every chunk as Megatron's rules do, and read back",
          "[partitioner][formats][megatron][chunks]") {
  int expressed = 0;
  for (int blocks = 1; blocks <= 16; ++blocks) {
    const stagecut::Profile profile = makeGptChain(blocks);
    const stagecut::MegatronGroups groups = stagecut::megatronGroups(profile);
    for (int ranks = 2; ranks <= 4; ++ranks) {
      for (int v = 2; v <= 4; ++v) {
        std::vector<std::tuple<bool, bool, std::optional<int>, std::optional<int>>> flag_sets;
        for (int accounted = 0; accounted < 4; ++accounted) {
          flag_sets.emplace_back((accounted & 1) != 0, (accounted & 2) != 0, std::nullopt, std::nullopt);
        }
        for (int a = 0; a <= blocks; ++a) {
          for (int z = 0; z <= blocks; ++z) {
            flag_sets.emplace_back(false, false, a > 0 ? std::optional<int>(a) : std::nullopt,
                                   z > 0 ? std::optional<int>(z) : std::nullopt);
          }
        }
        flag_sets.emplace_back(true, false, 2, std::nullopt);  // both kinds: refused
        for (const auto& [embedding, loss, first, last] : flag_sets) {
          const std::vector<int> built =
              stagecut::megatronBlocksFromFlags(blocks, ranks, embedding, loss, first, last, v);
          INFO(blocks << " blocks, " << ranks << " ranks x " << v << ", flags " << embedding << loss << " "
                      << first.value_or(-1) << " " << last.value_or(-1));
          REQUIRE(built == megatronVirtualPipelineBuilds(blocks, ranks, v, embedding, loss, first, last));
          if (built.empty()) continue;
          std::vector<int> counts = built;
          counts.front() += groups.embedding_layers;
          counts.back() += groups.loss_layers;
          if (std::find(counts.begin(), counts.end(), 0) != counts.end()) continue;  // no empty chunk in a split
          // The simplest flags for that chunking build it too, and --split reads them back.
          const std::string text = stagecut::megatronFlags(groups, counts, v);
          REQUIRE(!text.empty());
          CHECK_THAT(text, Catch::Matchers::Contains("--num-virtual-stages-per-pipeline-rank " + std::to_string(v)));
          stagecut::Placement placement;
          CHECK(stagecut::parseSplitText(text, profile, 0, "--split", &placement) == counts);
          CHECK(placement == stagecut::Placement::loop(ranks, v));
          ++expressed;
        }
      }
    }
  }
  CHECK(expressed > 100);
  // LLaMA-70B's shape: 80 blocks on 8 ranks x 5, the first rank 5 blocks and the last 15.
  CHECK(stagecut::megatronBlocksFromFlags(80, 8, false, false, 5, 15, 5) ==
        std::vector<int>{1, 2, 2, 2, 2, 2, 2, 3, 1, 2, 2, 2, 2, 2, 2, 3, 1, 2, 2, 2, 2, 2, 2, 3,
                         1, 2, 2, 2, 2, 2, 2, 3, 1, 2, 2, 2, 2, 2, 2, 3});
  CHECK(stagecut::megatronBlocksFromFlags(80, 8, false, false, 6, 15, 5).empty());  // 6 not a multiple of 5
  CHECK(stagecut::megatronBlocksFromFlags(4, 1, false, false, std::nullopt, std::nullopt, 2).empty());  // one rank
  // A chunking Megatron's flags cannot build (two chunks of one rank unequal) has none.
  CHECK(stagecut::megatronFlags(stagecut::megatronGroups(makeGptChain(8)), {2, 2, 3, 4}, 2).empty());
}

TEST_CASE("framework formats describe the split in each framework's words", "[partitioner][formats]") {
  const stagecut::Profile profile = makeGptChain(2);  // embed, block.0, block.1, head, loss
  const std::vector<int> split{2, 1, 2};
  CHECK(stagecut::formatSplit(stagecut::FrameworkFormat::kList, profile, split) == "2,1,2");
  // The loss is not a module of the Sequential / PipelineModule / model part: it is a function
  // applied to the last stage's output.
  CHECK(stagecut::formatSplit(stagecut::FrameworkFormat::kTorchgpipe, profile, split) == "balance=[2, 1, 1]");
  CHECK(stagecut::formatSplit(stagecut::FrameworkFormat::kFairscale, profile, split) == "balance=[2, 1, 1]");
  CHECK(stagecut::formatSplit(stagecut::FrameworkFormat::kDeepspeed, profile, split) ==
        "parts=[0, 2, 3, 4]\nstage=0 layers=2\n     0: Embedding\n     1: TransformerBlock\n"
        "stage=1 layers=1\n     2: TransformerBlock\nstage=2 layers=1\n     3: LMHead\n  loss: CrossEntropyLoss");
  CHECK(stagecut::formatSplit(stagecut::FrameworkFormat::kPippy, profile, split) ==
        "split_spec={\"block.1\": SplitPoint.BEGINNING, \"head\": SplitPoint.BEGINNING}");
  CHECK(stagecut::formatSplit(stagecut::FrameworkFormat::kTorchtitan, profile, split) ==
        "module_fqns_per_model_part=[[\"embed\", \"block.0\"], [\"block.1\"], [\"head\"]]");
  CHECK(stagecut::formatSplit(stagecut::FrameworkFormat::kMegatron, profile, split) ==
        "--pipeline-model-parallel-layout \"Et|t|L\"\nor\n"
        "--num-layers 2 --pipeline-model-parallel-size 3 --account-for-loss-in-pipeline-split");
  const auto outputs = stagecut::frameworkOutputs(profile, split);
  CHECK(outputs.size() == 8);
  CHECK(outputs.at("megatron") == "--pipeline-model-parallel-layout \"Et|t|L\"");
  CHECK(outputs.at("megatron-flags") ==
        "--num-layers 2 --pipeline-model-parallel-size 3 --account-for-loss-in-pipeline-split");
  CHECK(outputs.count("json") == 0);
  // A stage of only the loss: only stagecut's own list can express it.
  const auto loss_alone = stagecut::frameworkOutputs(profile, {2, 2, 1});
  CHECK(loss_alone.size() == 1);
  CHECK(loss_alone.count("list") == 1);
}

TEST_CASE("each format has its own name and its own text: none falls through to another's", "[partitioner][formats]") {
  // formatSplit once ended in torchtitan's text, so a format added to the list but not to the
  // chain printed torchtitan's words; each format now says its own, checked by what it says.
  const stagecut::Profile profile = makeGptChain(2);  // embed, block.0, block.1, head, loss
  const std::vector<int> split{2, 1, 2};
  std::set<std::string> names;
  for (stagecut::FrameworkFormat format : stagecut::allFrameworkFormats()) {
    const std::string name = stagecut::frameworkFormatName(format);
    INFO(name);
    CHECK(names.insert(name).second);
    CHECK(stagecut::parseFrameworkFormat(name) == format);
    if (format == stagecut::FrameworkFormat::kJson) {
      CHECK_THROWS_WITH(stagecut::formatSplit(format, profile, split),
                        "--format json: the partition document is written by the command, not formatted here");
      continue;
    }
    const std::string text = stagecut::formatSplit(format, profile, split);
    const std::map<std::string, std::string> starts = {
        {"list", "2,1,2"},           {"megatron", "--pipeline-model-parallel-layout"},
        {"torchgpipe", "balance=["}, {"fairscale", "balance=["},
        {"deepspeed", "parts=["},    {"pippy", "split_spec={"},
        {"torchtitan", "module_fqns_per_model_part=["}};
    REQUIRE(starts.count(name) == 1);
    CHECK_THAT(text, Catch::StartsWith(starts.at(name)));
  }
  CHECK(names.size() == 8);
}

TEST_CASE("megatron is printed only for a chain with an embedding first and the loss last", "[partitioner][formats]") {
  stagecut::Profile profile = makeProfile(6);  // layer0 .. layer5: no embedding, no loss
  CHECK(stagecut::frameworkOutputs(profile, {3, 3}).count("megatron") == 0);
  CHECK_THROWS_WITH(stagecut::formatSplit(stagecut::FrameworkFormat::kMegatron, profile, {3, 3}),
                    Catch::StartsWith("--format megatron: Megatron's layout does not apply to this chain: its "
                                      "first layer, layer.0"));
  profile.layers[0].kind = "Embedding";
  profile.layers[5].kind = "LMHead";  // a head, but no loss
  CHECK(stagecut::frameworkOutputs(profile, {3, 3}).count("megatron") == 0);
  CHECK(stagecut::megatronInapplicability(profile).find("is not the loss") != std::string::npos);
}

TEST_CASE("formats refuse what they cannot express and splits that do not cover the chain", "[partitioner][formats]") {
  stagecut::Profile profile = makeGptChain(2);
  CHECK_THROWS_WITH(stagecut::formatSplit(stagecut::FrameworkFormat::kList, profile, {2, 2}),
                    "--format: the stages hold 4 layers, the chain has 5");
  CHECK_THROWS_WITH(stagecut::formatSplit(stagecut::FrameworkFormat::kList, profile, {5, 0}),
                    "--format: stage 1 has 0 layers; every stage needs at least one");
  CHECK_THROWS_WITH(stagecut::parseFrameworkFormat("yaml"),
                    "--format: unknown format 'yaml'; use one of: list, json, megatron, torchgpipe, "
                    "fairscale, deepspeed, pippy, torchtitan");
  profile.layers[2].name = "block.0";
  CHECK_THROWS_WITH(stagecut::formatSplit(stagecut::FrameworkFormat::kPippy, profile, {2, 3}),
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

TEST_CASE("a tensor-parallel profile's Megatron split names its degree, and --split reads it back",
          "[partitioner][formats][tensor-parallel]") {
  stagecut::Profile profile = makeGptChain(6);
  profile.model.config["tensor_parallel"] = 8;
  profile.model.config["sequence_parallel"] = true;
  const std::string layout = stagecut::formatSplit(stagecut::FrameworkFormat::kMegatron, profile, {4, 5});
  CHECK(layout.find("--pipeline-model-parallel-layout \"Ettt|tttL\" --tensor-model-parallel-size 8 --sequence-parallel") == 0);
  CHECK(stagecut::parseSplitText(layout.substr(0, layout.find('\n')), profile, 0, "--split") == std::vector<int>{4, 5});
  CHECK(stagecut::parseSplitText("--num-layers 6 --pipeline-model-parallel-size 2 --tensor-model-parallel-size 8",
                                 profile, 0, "--split") == std::vector<int>{4, 5});
  CHECK_THROWS_WITH(stagecut::parseSplitText("Ettt|tttL --tensor-model-parallel-size 4", profile, 0, "--split"),
                    Catch::Matchers::Contains("--tensor-model-parallel-size 4 but the profile's layers are shards of "
                                              "tensor parallel 8"));
  // A profile without tensor parallelism says nothing of it.
  CHECK(stagecut::formatSplit(stagecut::FrameworkFormat::kMegatron, makeGptChain(6), {4, 5}).find("tensor-model") == std::string::npos);
}
