// Every framework output read back the way its framework reads it, by parsers written here
// from the frameworks' documentation and source (not stagecut's own): every layer once, in
// order, on the stage stagecut says; no stage of only the loss; no Megatron layout without E
// first and L last; the layout and Megatron's flags never in one text. And each restricted
// search against a brute force over the splits its rules admit.
#include <algorithm>
#include <functional>
#include <numeric>
#include <optional>
#include <random>
#include <regex>
#include <sstream>

#include <catch2/catch.hpp>

#include "core/error.h"
#include "core/units.h"
#include "partitioner/framework_formats.h"
#include "partitioner/megatron_layout.h"
#include "partitioner/partition_options.h"
#include "partitioner/profile_partitioner.h"
#include "partitioner/split_rules.h"
#include "partitioner/split_score.h"
#include "partitioner/split_text.h"
#include "tests/test_support.h"

namespace {

using stagecut::Profile;

// A chain and what its author knows about it: how many leading layers are the embedding,
// how many trailing ones Megatron runs as L (norm, head, loss), how many are the loss.
struct Chain {
  Profile profile;
  int embedding = 0;
  int output_group = 0;  // Megatron's L
  int loss = 0;
  int modules() const { return static_cast<int>(profile.layerCount()) - loss; }
  bool megatron() const { return embedding > 0 && loss > 0; }
};

enum class Shape { kGpt, kGptWithNorm, kTwoEmbeddings, kCnnWithLoss, kPlain };

Chain makeChain(std::mt19937& random, Shape shape, int middle) {
  auto integer = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(random); };
  std::vector<std::pair<std::string, std::string>> layers;  // name, kind
  Chain chain;
  if (shape == Shape::kGpt || shape == Shape::kGptWithNorm || shape == Shape::kTwoEmbeddings) {
    layers.push_back({"embed", "Embedding"});
    chain.embedding = 1;
    if (shape == Shape::kTwoEmbeddings) {
      layers.push_back({"embed_pos", "PositionalEmbedding"});
      chain.embedding = 2;
    }
    for (int b = 0; b < middle; ++b) layers.push_back({"block." + std::to_string(b), "TransformerBlock"});
    if (shape == Shape::kGptWithNorm) layers.push_back({"final_norm", "LayerNorm"});
    layers.push_back({"head", "LMHead"});
    layers.push_back({"loss", "CrossEntropyLoss"});
    chain.output_group = shape == Shape::kGptWithNorm ? 3 : 2;
    chain.loss = 1;
  } else if (shape == Shape::kCnnWithLoss) {
    for (int b = 0; b < middle; ++b) layers.push_back({"features." + std::to_string(b), "Conv2d"});
    layers.push_back({"fc", "Linear"});
    layers.push_back({"criterion", "CrossEntropyLoss"});
    chain.loss = 1;
  } else {
    for (int b = 0; b < middle + 1; ++b) layers.push_back({"stage_layer." + std::to_string(b), "Linear"});
  }
  chain.profile = stagecut::testing::makeProfile(static_cast<int>(layers.size()));
  for (std::size_t k = 0; k < layers.size(); ++k) {
    stagecut::LayerCost& layer = chain.profile.layers[k];
    layer.name = layers[k].first;
    layer.kind = layers[k].second;
    // Integer times keep every sum exact, so the tie-breaks must agree to the layer.
    layer.forward_ms = stagecut::TimeStatsMs::exactly(integer(0, 6));
    layer.backward_ms = stagecut::TimeStatsMs::exactly(integer(1, 9));
    layer.backward_input_ms.reset();
    layer.backward_weight_ms.reset();
  }
  return chain;
}

// ---- the frameworks' readers ----------------------------------------------------------

std::vector<int> integersIn(const std::string& text) {
  std::vector<int> values;
  std::regex number("[0-9]+");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), number); it != std::sregex_iterator(); ++it) {
    values.push_back(std::stoi(it->str()));
  }
  return values;
}

// The loss-as-function frameworks describe modules; the loss joins the last stage's output.
std::vector<int> withLoss(std::vector<int> module_counts, const Chain& chain) {
  if (!module_counts.empty()) module_counts.back() += chain.loss;
  return module_counts;
}

// torchgpipe/fairscale: GPipe(nn.Sequential, balance) needs sum(balance) == len(Sequential),
// every entry positive.
std::vector<int> readBalance(const std::string& text, const Chain& chain) {
  REQUIRE(text.rfind("balance=[", 0) == 0);
  const std::vector<int> balance = integersIn(text);
  CHECK(std::accumulate(balance.begin(), balance.end(), 0) == chain.modules());
  for (int count : balance) CHECK(count > 0);
  return withLoss(balance, chain);
}

// DeepSpeed: parts = [0, ..., len(layers)] over PipelineModule's layers; the rank-0 listing
// names each stage's layers and then the loss_fn.
std::vector<int> readDeepSpeed(const std::string& text, const Chain& chain) {
  std::istringstream lines(text);
  std::string first_line;
  std::getline(lines, first_line);
  REQUIRE(first_line.rfind("parts=[", 0) == 0);
  const std::vector<int> parts = integersIn(first_line);
  REQUIRE(parts.size() >= 2);
  CHECK(parts.front() == 0);
  CHECK(parts.back() == chain.modules());
  std::vector<int> counts;
  for (std::size_t s = 0; s + 1 < parts.size(); ++s) counts.push_back(parts[s + 1] - parts[s]);
  std::vector<int> listed;
  std::vector<int> indices;
  bool loss_line = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("stage=", 0) == 0) {
      listed.push_back(integersIn(line).at(1));
    } else if (line.rfind("  loss: ", 0) == 0) {
      loss_line = true;
    } else {
      indices.push_back(integersIn(line).at(0));
    }
  }
  CHECK(listed == counts);
  std::vector<int> expected(static_cast<std::size_t>(chain.modules()));
  std::iota(expected.begin(), expected.end(), 0);
  CHECK(indices == expected);
  CHECK(loss_line == (chain.loss > 0));
  for (int count : counts) CHECK(count > 0);
  return withLoss(counts, chain);
}

// torch.distributed.pipelining: each split point begins a stage at a module of the model.
std::vector<int> readPippy(const std::string& text, const Chain& chain) {
  REQUIRE(text.rfind("split_spec={", 0) == 0);
  std::regex point("\"([^\"]+)\": SplitPoint.BEGINNING");
  std::vector<int> starts{0};
  for (auto it = std::sregex_iterator(text.begin(), text.end(), point); it != std::sregex_iterator(); ++it) {
    const std::string name = (*it)[1];
    int index = -1;
    for (int k = 0; k < chain.modules(); ++k) {
      if (chain.profile.layers[k].name == name) index = k;
    }
    REQUIRE(index > 0);  // a module of the model, not the loss, not the first
    starts.push_back(index);
  }
  starts.push_back(chain.modules());
  std::vector<int> counts;
  for (std::size_t s = 0; s + 1 < starts.size(); ++s) counts.push_back(starts[s + 1] - starts[s]);
  for (int count : counts) CHECK(count > 0);
  return withLoss(counts, chain);
}

// torchtitan: module_fqns_per_model_part lists the modules each part keeps, in order.
std::vector<int> readTorchtitan(const std::string& text, const Chain& chain) {
  REQUIRE(text.rfind("module_fqns_per_model_part=[", 0) == 0);
  std::vector<int> counts;
  std::vector<std::string> names;
  std::regex part("\\[((\"[^\"]*\"(, )?)+)\\]");
  const std::string body = text.substr(std::string("module_fqns_per_model_part=[").size());
  std::regex name("\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(body.begin(), body.end(), part); it != std::sregex_iterator(); ++it) {
    const std::string inside = (*it)[1];
    int count = 0;
    for (auto n = std::sregex_iterator(inside.begin(), inside.end(), name); n != std::sregex_iterator(); ++n) {
      names.push_back((*n)[1]);
      ++count;
    }
    counts.push_back(count);
  }
  std::vector<std::string> modules;
  for (int k = 0; k < chain.modules(); ++k) modules.push_back(chain.profile.layers[k].name);
  CHECK(names == modules);
  return withLoss(counts, chain);
}

// Megatron's layout: stages split by '|', x*N repeats, E only as the first layer of the first
// stage ("The first layer must be embedding"), L only as the last of the last ("The last
// layer must be loss").
std::vector<int> readMegatronLayout(const std::string& text, const Chain& chain) {
  const std::string flag = "--pipeline-model-parallel-layout \"";
  REQUIRE(text.rfind(flag, 0) == 0);
  REQUIRE(text.back() == '"');
  CHECK(text.find("--decoder") == std::string::npos);
  CHECK(text.find("--account-for") == std::string::npos);
  const std::string layout = text.substr(flag.size(), text.size() - flag.size() - 1);
  std::vector<std::string> stages{""};
  for (std::size_t i = 0; i < layout.size(); ++i) {
    if (layout[i] == '|') {
      stages.emplace_back();
    } else if (layout[i] == '*') {
      std::size_t end = i + 1;
      while (end < layout.size() && std::isdigit(static_cast<unsigned char>(layout[end]))) ++end;
      stages.back().append(static_cast<std::size_t>(std::stoi(layout.substr(i + 1, end - i - 1)) - 1), stages.back().back());
      i = end - 1;
    } else {
      stages.back() += layout[i];
    }
  }
  CHECK(stages.front().front() == 'E');
  CHECK(stages.back().back() == 'L');
  std::vector<int> counts;
  for (std::size_t s = 0; s < stages.size(); ++s) {
    int layers = 0;
    for (std::size_t i = 0; i < stages[s].size(); ++i) {
      const char symbol = stages[s][i];
      if (symbol == 'E') CHECK((s == 0 && i == 0));
      if (symbol == 'L') CHECK((s + 1 == stages.size() && i + 1 == stages[s].size()));
      layers += symbol == 'E' ? chain.embedding : symbol == 'L' ? chain.output_group : 1;
    }
    counts.push_back(layers);
  }
  return counts;
}

// Transformer layers per pipeline rank that Megatron builds from its flags, as its
// TransformerConfig checks them and get_num_layers_to_build places them; empty where it refuses.
std::vector<int> megatronBuilds(int num_layers, int pp, bool embedding, bool loss, std::optional<int> first,
                                std::optional<int> last) {
  if ((first || last) && (embedding || loss)) return {};  // "cannot be set at the same time"
  std::vector<int> blocks;
  if (first || last) {
    if ((first && *first <= 0) || (last && *last <= 0)) return {};
    const int middle_stages = pp - (first ? 1 : 0) - (last ? 1 : 0);
    const int middle = num_layers - first.value_or(0) - last.value_or(0);
    if (middle < 0 || (middle > 0) != (middle_stages > 0)) return {};  // "Mismatch"
    if (middle_stages > 0 && middle % middle_stages != 0) return {};
    for (int rank = 0; rank < pp; ++rank) {
      if (rank == 0 && first) blocks.push_back(*first);
      else if (rank == pp - 1 && last) blocks.push_back(*last);
      else blocks.push_back(middle / middle_stages);
    }
    return blocks;
  }
  const int counted = num_layers + (embedding ? 1 : 0) + (loss ? 1 : 0);
  if (counted % pp != 0) return {};
  for (int rank = 0; rank < pp; ++rank) {
    int build = counted / pp;
    if (rank == 0 && embedding) --build;
    if (rank == pp - 1 && loss) --build;
    if (build < 0) return {};
    blocks.push_back(build);
  }
  return blocks;
}

// Megatron's flags, as its TransformerConfig checks them and get_num_layers_to_build and
// get_transformer_layer_offset place the layers.
std::vector<int> readMegatronFlags(const std::string& text, const Chain& chain) {
  CHECK(text.find("--pipeline-model-parallel-layout") == std::string::npos);
  std::istringstream words(text);
  std::optional<int> first, last, num_layers, size;
  bool embedding = false, loss = false;
  for (std::string word; words >> word;) {
    if (word == "--account-for-embedding-in-pipeline-split") { embedding = true; continue; }
    if (word == "--account-for-loss-in-pipeline-split") { loss = true; continue; }
    int value = 0;
    REQUIRE(words >> value);
    if (word == "--decoder-first-pipeline-num-layers") first = value;
    else if (word == "--decoder-last-pipeline-num-layers") last = value;
    else if (word == "--num-layers") num_layers = value;
    else if (word == "--pipeline-model-parallel-size") size = value;
    else FAIL("unknown flag " << word);
  }
  REQUIRE(num_layers);
  REQUIRE(size);
  const int pp = *size;
  CHECK(*num_layers == static_cast<int>(chain.profile.layerCount()) - chain.embedding - chain.output_group);
  std::vector<int> blocks = megatronBuilds(*num_layers, pp, embedding, loss, first, last);
  REQUIRE(!blocks.empty());
  blocks.front() += chain.embedding;
  blocks.back() += chain.output_group;
  return blocks;
}

// What the frameworks can run, from the rules as their documentation states them.
bool lossAlone(const Chain& chain, const std::vector<int>& counts) {
  return chain.loss > 0 && counts.back() <= chain.loss;
}
bool megatronCanRun(const Chain& chain, const std::vector<int>& counts) {
  return chain.megatron() && counts.front() >= chain.embedding && counts.back() >= chain.output_group &&
         !lossAlone(chain, counts);
}

void forEachSplit(int layers, int stages, const std::function<void(const std::vector<int>&)>& visit) {
  std::vector<int> counts(static_cast<std::size_t>(stages));
  std::function<void(int, int)> place = [&](int stage, int remaining) {
    if (stage == stages - 1) {
      counts[stage] = remaining;
      visit(counts);
      return;
    }
    for (int count = 1; count <= remaining - (stages - 1 - stage); ++count) {
      counts[stage] = count;
      place(stage + 1, remaining - count);
    }
  };
  place(0, layers);
}

// Whether some flags (no layout) give Megatron this split.
bool megatronFlagsCanRun(const Chain& chain, const std::vector<int>& counts) {
  if (!megatronCanRun(chain, counts)) return false;
  std::vector<int> blocks = counts;
  blocks.front() -= chain.embedding;
  blocks.back() -= chain.output_group;
  const int stages = static_cast<int>(counts.size());
  if (stages == 1) return true;
  const int total = std::accumulate(blocks.begin(), blocks.end(), 0);
  for (int kind = 0; kind < 4; ++kind) {
    if (megatronBuilds(total, stages, kind & 1, kind & 2, std::nullopt, std::nullopt) == blocks) return true;
  }
  return megatronBuilds(total, stages, false, false, blocks.front(), std::nullopt) == blocks ||
         megatronBuilds(total, stages, false, false, std::nullopt, blocks.back()) == blocks ||
         megatronBuilds(total, stages, false, false, blocks.front(), blocks.back()) == blocks;
}

const Shape kShapes[] = {Shape::kGpt, Shape::kGptWithNorm, Shape::kTwoEmbeddings, Shape::kCnnWithLoss, Shape::kPlain};

}  // namespace

TEST_CASE("every framework output reads back, by the framework's own rules, as the split", "[partitioner][rules]") {
  std::mt19937 random(31);
  int outputs_read = 0, loss_alone_refused = 0, flags_read = 0;
  for (Shape shape : kShapes) {
    for (int middle = 1; middle <= 5; ++middle) {
      const Chain chain = makeChain(random, shape, middle);
      const int layers = static_cast<int>(chain.profile.layerCount());
      for (int stages = 1; stages <= std::min(layers, 5); ++stages) {
        forEachSplit(layers, stages, [&](const std::vector<int>& split) {
          INFO("chain of " << layers << " layers, split " << stagecut::joinNumbers(split, ","));
          const stagecut::FrameworkOutputs outputs = stagecut::frameworkOutputs(chain.profile, split);
          CHECK(integersIn(outputs.at("list")) == split);
          const bool loss_framework_can = !lossAlone(chain, split);
          for (const char* format : {"torchgpipe", "fairscale", "deepspeed", "pippy", "torchtitan"}) {
            INFO(format);
            CHECK(outputs.count(format) == (loss_framework_can ? 1u : 0u));
          }
          if (!loss_framework_can) ++loss_alone_refused;
          CHECK(outputs.count("megatron") == (megatronCanRun(chain, split) ? 1u : 0u));
          for (const auto& [format, text] : outputs) {
            INFO(format << ": " << text);
            if (format == "list") continue;
            std::vector<int> read;
            if (format == "torchgpipe" || format == "fairscale") read = readBalance(text, chain);
            else if (format == "deepspeed") read = readDeepSpeed(text, chain);
            else if (format == "pippy") read = readPippy(text, chain);
            else if (format == "torchtitan") read = readTorchtitan(text, chain);
            else if (format == "megatron") read = readMegatronLayout(text, chain);
            else if (format == "megatron-flags") read = readMegatronFlags(text, chain), ++flags_read;
            else FAIL("an output no test reads: " << format);
            CHECK(read == split);
            // And stagecut reads its own texts back the same way (--split).
            CHECK(stagecut::parseSplitText(text, chain.profile, stages, "--split") == split);
            ++outputs_read;
          }
        });
      }
    }
  }
  CHECK(outputs_read > 2000);
  CHECK(loss_alone_refused > 50);
  CHECK(flags_read > 100);
}

TEST_CASE("the best split under each rule set matches a brute force over the splits it admits",
          "[partitioner][rules][exact]") {
  std::mt19937 random(37);
  int compared = 0;
  for (int trial = 0; trial < 6; ++trial) {
    for (Shape shape : kShapes) {
      const Chain chain = makeChain(random, shape, 2 + trial % 5);
      const int layers = static_cast<int>(chain.profile.layerCount());
      for (int stages = 1; stages <= std::min(layers, 5); ++stages) {
        stagecut::PartitionOptions options;
        options.placement = stagecut::Placement::loop(stages, 1);
        options.microbatches = 2 * stages;
        for (auto set : {stagecut::SplitRuleSet::kAny, stagecut::SplitRuleSet::kLossWithLast,
                         stagecut::SplitRuleSet::kMegatron}) {
          if (set == stagecut::SplitRuleSet::kMegatron && !chain.megatron()) continue;
          const auto admits = [&](const std::vector<int>& split) {
            if (set == stagecut::SplitRuleSet::kLossWithLast) return !lossAlone(chain, split);
            if (set == stagecut::SplitRuleSet::kMegatron) {
              return split.front() >= chain.embedding && split.back() >= chain.output_group;
            }
            return true;
          };
          options.rules = set;
          const stagecut::CostModel model = stagecut::buildCostModel(chain.profile, options, "p");
          std::optional<std::vector<int>> best;
          stagecut::SplitScore best_score;
          forEachSplit(layers, stages, [&](const std::vector<int>& split) {
            if (!admits(split)) return;
            const stagecut::SplitScore score = stagecut::scoreSplit(model, split);
            if (!best || stagecut::scoreBetter(score, best_score)) {
              best = split;
              best_score = score;
            }
          });
          INFO("rules " << stagecut::ruleSetName(set) << ", " << layers << " layers, " << stages << " stages");
          if (!best) {
            CHECK_THROWS_AS(stagecut::partitionProfile(chain.profile, options, "p", stagecut::SplitMethod::kCompute),
                            stagecut::Error);
            continue;
          }
          const stagecut::Partition found =
              stagecut::partitionProfile(chain.profile, options, "p", stagecut::SplitMethod::kCompute);
          CHECK(found.layersPerStage() == *best);
          ++compared;
        }
      }
    }
  }
  CHECK(compared > 200);
}

TEST_CASE("partition --megatron-first-last finds the best split Megatron's flags can express, against brute force",
          "[partitioner][rules][exact]") {
  std::mt19937 random(47);
  int compared = 0;
  for (int trial = 0; trial < 8; ++trial) {
    for (Shape shape : {Shape::kGpt, Shape::kGptWithNorm, Shape::kTwoEmbeddings}) {
      const Chain chain = makeChain(random, shape, 2 + trial);
      const int layers = static_cast<int>(chain.profile.layerCount());
      for (int stages = 1; stages <= std::min(layers - chain.embedding - chain.output_group + 1, 5); ++stages) {
        stagecut::PartitionOptions options;
        options.placement = stagecut::Placement::loop(stages, 1);
        options.microbatches = 2 * stages;
        options.rules = stagecut::SplitRuleSet::kMegatron;
        const stagecut::CostModel model = stagecut::buildCostModel(chain.profile, options, "p");
        std::optional<std::vector<int>> best;
        stagecut::SplitScore best_score;
        forEachSplit(layers, stages, [&](const std::vector<int>& split) {
          if (!megatronFlagsCanRun(chain, split)) return;
          const stagecut::SplitScore score = stagecut::scoreSplit(model, split);
          if (!best || stagecut::scoreBetter(score, best_score)) {
            best = split;
            best_score = score;
          }
        });
        INFO(layers << " layers, " << stages << " stages");
        if (!best) {
          CHECK_THROWS_AS(stagecut::partitionForMegatron(chain.profile, options, "p", true), stagecut::Error);
          continue;
        }
        const stagecut::MegatronPartition found = stagecut::partitionForMegatron(chain.profile, options, "p", true);
        CHECK(found.chosen.layersPerStage() == *best);
        CHECK(found.chosen.bottleneck_ms >= found.free_optimum.bottleneck_ms);
        ++compared;
      }
    }
  }
  CHECK(compared > 60);
}

TEST_CASE("the default compute split runs in every framework printed, the free one may not", "[partitioner][rules]") {
  std::mt19937 random(41);
  const Chain chain = makeChain(random, Shape::kGpt, 4);
  Profile profile = chain.profile;
  // A heavy block before a light head and a heavy loss: the free optimum isolates the loss.
  profile.layers[5].forward_ms = stagecut::TimeStatsMs::exactly(1);
  profile.layers[5].backward_ms = stagecut::TimeStatsMs::exactly(1);
  profile.layers[6].forward_ms = stagecut::TimeStatsMs::exactly(30);
  profile.layers[6].backward_ms = stagecut::TimeStatsMs::exactly(30);
  stagecut::PartitionOptions options;
  options.placement = stagecut::Placement::loop(3, 1);
  options.microbatches = 6;
  const stagecut::Partition compute = stagecut::partitionProfile(profile, options, "p", stagecut::SplitMethod::kCompute);
  CHECK(compute.method == "compute");
  CHECK(compute.layersPerStage().back() >= 2);
  const stagecut::FrameworkOutputs outputs = stagecut::frameworkOutputs(profile, compute.layersPerStage());
  for (const char* format : {"megatron", "torchgpipe", "fairscale", "deepspeed", "pippy", "torchtitan"}) {
    CHECK(outputs.count(format) == 1);
  }
  options.rules = stagecut::SplitRuleSet::kAny;
  const stagecut::Partition free = stagecut::partitionProfile(profile, options, "p", stagecut::SplitMethod::kCompute);
  CHECK(free.method == "free");
  CHECK(free.layersPerStage().back() == 1);
  CHECK(free.bottleneck_ms < compute.bottleneck_ms);
  // compare shows both: uniform, params, compute, then free.
  options.rules.reset();
  const std::vector<stagecut::Partition> splits = stagecut::partitionForComparison(profile, options, "p");
  REQUIRE(splits.size() == 4);
  CHECK(splits[3].method == "free");
  CHECK(&stagecut::chosenSplit(splits) == &splits[2]);
  // The baselines split what DeepSpeed partitions: the loss joins the last stage.
  CHECK(splits[0].layersPerStage() == std::vector<int>{2, 2, 3});
}

TEST_CASE("parsing --split reads every printed form back and says what does not fit", "[partitioner][rules]") {
  std::mt19937 random(43);
  const Chain chain = makeChain(random, Shape::kGpt, 6);  // embed, block.0-5, head, loss: 9 layers
  const Profile& profile = chain.profile;
  using stagecut::parseSplitText;
  CHECK(parseSplitText("4,3,2", profile, 0, "--split") == std::vector<int>{4, 3, 2});
  CHECK(parseSplitText(" 4, 3, 2 ", profile, 3, "--split") == std::vector<int>{4, 3, 2});
  CHECK(parseSplitText("balance=[4, 3, 1]", profile, 0, "--split") == std::vector<int>{4, 3, 2});
  CHECK(parseSplitText("balance=[4, 3, 2]", profile, 0, "--split") == std::vector<int>{4, 3, 2});
  CHECK(parseSplitText("parts=[0, 4, 7, 8]", profile, 0, "--split") == std::vector<int>{4, 3, 2});
  CHECK(parseSplitText("Ettt|ttt|L", profile, 0, "--split") == std::vector<int>{4, 3, 2});
  CHECK(parseSplitText("--pipeline-model-parallel-layout \"Et*3|t*3|L\"", profile, 0, "--split") ==
        std::vector<int>{4, 3, 2});
  CHECK(parseSplitText("--pipeline-model-parallel-size 3 --decoder-first-pipeline-num-layers 2", profile, 0,
                       "--split") == std::vector<int>{3, 2, 4});
  CHECK(parseSplitText("--decoder-first-pipeline-num-layers 4", profile, 2, "--split") == std::vector<int>{5, 4});
  const auto error = [&](const std::string& text, int stages) {
    return stagecut::testing::inputErrorOf([&] { parseSplitText(text, profile, stages, "--split"); });
  };
  CHECK(error("4,4,4", 0) == "--split 4,4,4: 12 layers, the profile has 9");
  CHECK(parseSplitText("balance=[4, 4]", profile, 0, "--split") == std::vector<int>{4, 5});
  CHECK(error("balance=[5, 5]", 0) == "--split balance=[5, 5]: 10 layers, the profile has 9 (8 before the loss)");
  CHECK(error("balance=[4, 3]", 0) == "--split balance=[4, 3]: 7 layers, the profile has 9 (8 before the loss)");
  CHECK(error("4,0,5", 0) == "--split 4,0,5: stage 1 has no layers; every stage needs at least one");
  CHECK(error("4,5", 3) == "--split 4,5: 2 stages, --stages is 3");
  CHECK(error("tEt|L", 0) == "--split tEt|L: the layout's first layer must be the embedding E, as Megatron requires");
  CHECK(error("--decoder-first-pipeline-num-layers 4", 0) ==
        "--split --decoder-first-pipeline-num-layers 4: add --pipeline-model-parallel-size N (or --stages N)");
  CHECK(error("--num-layers 7 --pipeline-model-parallel-size 2", 0) ==
        "--split --num-layers 7 --pipeline-model-parallel-size 2: --num-layers 7, the profile has 6 transformer layers");
  CHECK(error("four", 0).rfind("--split four: not a split stagecut reads; give layers per stage", 0) == 0);
  CHECK(error("*3|t", 0) == "--split *3|t: a repeat x*N needs a symbol before the '*'");
  CHECK(error("Et*|L", 0) == "--split Et*|L: a repeat x*N needs a whole number N after the '*'");
  CHECK(error("Et*40|L", 0) == "--split Et*40|L: 43 layers, the profile has 9");
  CHECK(error("split_spec={\"block.9\": SplitPoint.BEGINNING}", 0) ==
        "--split split_spec={\"block.9\": SplitPoint.BEGINNING}: the profile has no layer named \"block.9\"");
  CHECK(error("module_fqns_per_model_part=[[\"embed\"], [\"block.1\"]]", 0) ==
        "--split module_fqns_per_model_part=[[\"embed\"], [\"block.1\"]]: \"block.1\" is not the next layer "
        "of the chain (block.0)");
  CHECK(error("--pipeline-model-parallel-size 40", 0) ==
        "--split --pipeline-model-parallel-size 40: 40 stages for the profile's 9 layers");
}

TEST_CASE("split text: every spelling of a layout that Megatron's parser reads is read, a virtual pipeline refused",
          "[partitioner][rules][megatron]") {
  std::mt19937 random(43);
  const Chain chain = makeChain(random, Shape::kGpt, 6);  // embed, block.0-5, head, loss: 9 layers
  const Profile& profile = chain.profile;
  const std::vector<int> split{4, 3, 2};  // Ettt|ttt|L
  // Megatron's parse_str_to_list: commas are cosmetic, (group)*N, then x*N; '=' or a space after
  // the flag; the size flags before or after it.
  for (const char* text : {"--pipeline-model-parallel-layout=Et*3|t*3|L",
                           "--pipeline-model-parallel-layout='Et*3|t*3|L'",
                           "--pipeline-model-parallel-layout \"Et,tt|t,t,t|L\"",
                           "--pipeline-model-parallel-layout E(t)*3|(t)*3|L",
                           "--pipeline-model-parallel-layout \"Et*3|(tt)*1,t|L\"",
                           "--pipeline-model-parallel-layout Et*3|t*3|L --pipeline-model-parallel-size 3",
                           "--pipeline-model-parallel-size=3 --pipeline-model-parallel-layout Et*3|t*3|L",
                           "--pipeline-model-parallel-size 3 --pipeline-model-parallel-layout Et*3|t*3|L --num-layers 6",
                           "Et,tt|(t)*3|L"}) {
    INFO(text);
    CHECK(stagecut::parseSplitText(text, profile, 0, "--split") == split);
  }
  // (t|)*2 unrolls to "t|t|": the group's '|' makes stages.
  CHECK(stagecut::parseSplitText("--pipeline-model-parallel-layout Ett|(t|)*2,ttL", profile, 0, "--split") ==
        std::vector<int>{3, 1, 1, 4});
  const auto error = [&](const std::string& text, int stages) {
    return stagecut::testing::inputErrorOf([&] { stagecut::parseSplitText(text, profile, stages, "--split"); });
  };
  // Megatron's virtual pipeline: 6 stages on 3 ranks is 2 chunks a rank, never read as a 6-stage
  // pipeline: its chunks and their placement where the caller takes chunks, refused where not.
  const std::string vpp = "--pipeline-model-parallel-layout Et|t|t|t|t|tL --pipeline-model-parallel-size 3";
  CHECK(error(vpp, 0) == "--split " + vpp + ": a virtual-pipeline layout, 6 stages on 3 ranks (2 model chunks "
                                            "each): this command takes one chunk per rank; give a "
                                            "layout of 3 stages");
  for (const auto& [text, stages] : {std::pair<std::string, int>{vpp, 0}, {"Et|t|t|t|t|tL", 3},
                                     {"--pipeline-model-parallel-layout=\"Et|(t|)*4,tL\" --pipeline-model-parallel-size=3", 3}}) {
    INFO(text);
    stagecut::Placement placement;
    CHECK(stagecut::parseSplitText(text, profile, stages, "--split", &placement) == std::vector<int>{2, 1, 1, 1, 1, 3});
    CHECK(placement == stagecut::Placement::loop(3, 2));
  }
  stagecut::Placement one_chunk;
  CHECK(stagecut::parseSplitText("4,3,2", profile, 0, "--split", &one_chunk) == split);
  CHECK(one_chunk == stagecut::Placement::loop(3, 1));
  CHECK(error("Et|t|t|t|t|tL", 3).find("a virtual-pipeline layout, 6 stages on 3 ranks") != std::string::npos);
  CHECK(error("--num-virtual-stages-per-pipeline-rank 2 --pipeline-model-parallel-layout Et*3|t*3|L", 0).find(
            "--pipeline-model-parallel-layout with --num-virtual-stages-per-pipeline-rank: Megatron takes at most "
            "one of") != std::string::npos);
  CHECK(error("--pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 2", 0) ==
        "--split --pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 2: "
        "--num-virtual-stages-per-pipeline-rank 2: a virtual pipeline, several model chunks per rank; this "
        "command takes one chunk per rank");
  {
    // The flags of a virtual pipeline where the caller takes chunks: 6 blocks on 3 ranks x 2.
    stagecut::Placement placement;
    CHECK(stagecut::parseSplitText("--num-layers 6 --pipeline-model-parallel-size 3 "
                                   "--num-virtual-stages-per-pipeline-rank 2",
                                   profile, 0, "--split", &placement) == std::vector<int>{2, 1, 1, 1, 1, 3});
    CHECK(placement == stagecut::Placement::loop(3, 2));
    CHECK(stagecut::testing::inputErrorOf([&] {
            stagecut::parseSplitText("--pipeline-model-parallel-size 3 --num-virtual-stages-per-pipeline-rank 2 "
                                     "--decoder-first-pipeline-num-layers 3",
                                     profile, 0, "--split", &placement);
          }) == "--split --pipeline-model-parallel-size 3 --num-virtual-stages-per-pipeline-rank 2 "
                "--decoder-first-pipeline-num-layers 3: Megatron refuses these flags for 6 transformer layers on 3 "
                "stages of 2 chunks each (uneven middle stages, a flag below 1, or both kinds of flag, or a rank's "
                "layers not a multiple of its chunks)");
  }
  CHECK(error("--pipeline-model-parallel-layout Et*3|t*3|L --pipeline-model-parallel-size 2", 0) ==
        "--split --pipeline-model-parallel-layout Et*3|t*3|L --pipeline-model-parallel-size 2: the layout has 3 "
        "stages, which Megatron puts on 2 ranks only as equal numbers of chunks; give 2 x v stages");
  CHECK(error("--pipeline-model-parallel-layout Et*3|t*3|L --decoder-first-pipeline-num-layers 2", 0) ==
        "--split --pipeline-model-parallel-layout Et*3|t*3|L --decoder-first-pipeline-num-layers 2: "
        "'--decoder-first-pipeline-num-layers' beside a layout; Megatron takes the layout with "
        "--pipeline-model-parallel-size and --num-layers only");
  CHECK(error("--pipeline-model-parallel-layout", 0) ==
        "--split --pipeline-model-parallel-layout: --pipeline-model-parallel-layout needs its layout");
  CHECK(error("E((t)*2)*2|L", 0) == "--split E((t)*2)*2|L: groups (...) do not nest in a layout");
  CHECK(error("E(tt|L", 0) == "--split E(tt|L: a '(' without its ')'");
  CHECK(error("Ett)|L", 0) == "--split Ett)|L: a ')' without its '('");
  CHECK(error("E(tt)|L", 0) == "--split E(tt)|L: a group (...) needs a repeat *N after it");
  CHECK(error("E(t)*|L", 0) == "--split E(t)*|L: a repeat (...)*N needs a whole number N after the '*'");
  // N = 0 repeats nothing, as Python's "t" * 0 is "".
  CHECK(stagecut::expandMegatronLayout("E(t)*0|t*0L") == std::vector<std::string>{"E", "L"});
  CHECK(error("E(t|)*9999999|L", 0) == "--split E(t|)*9999999|L: the layout expands to more than 1000000 symbols");
  // The bound is on the whole expansion: 44032 stages of 144032 layers each (6.3G symbols) were
  // each under it, and took memory until killed (found by fuzz_split_text).
  CHECK(error("(t*144032|)*44032", 0) == "--split (t*144032|)*44032: the layout expands to more than 1000000 symbols");
  CHECK(error("Et*999999|L", 0) == "--split Et*999999|L: the layout expands to more than 1000000 symbols");
}
