// --split reads Megatron-LM's spellings as Megatron reads them, and what stagecut prints for
// Megatron passes Megatron's own checks. The oracle is Megatron's rules restated here from its
// source at commit d98e8a64ddf34856e74b24714e3bedb2f5a39553 (NVIDIA/Megatron-LM), not from
// stagecut's code:
// - megatron/core/transformer/pipeline_parallel_layer_layout.py: parse_str_to_list (two regular
//   expressions, then '|' splits stages, then each character must be E, L, t or m) and
//   validate_layer_layout (E the first layer of the whole layout, L the last, each once, as many
//   t as --num-layers, as many m as --mtp-num-layers; nothing about empty stages);
// - megatron/training/arguments.py, validate_args: at most one of --num-layers-per-virtual-
//   pipeline-stage, --num-virtual-stages-per-pipeline-rank and --pipeline-model-parallel-layout;
//   the virtual size from the layout's length / PP, from --num-virtual-stages-per-pipeline-rank,
//   or ((num_layers + accounted embedding + accounted loss) / PP) / --num-layers-per-virtual-
//   pipeline-stage, refused with the first/last flags; a virtual size of 1 is none; with one, PP
//   must be > 1 (> 2 with --no-overlap-p2p-communication, which stagecut neither prints nor reads);
// - megatron/core/transformer/transformer_config.py: a layout with the first/last or account-for
//   flags is refused;
// - argparse (allow_abbrev=False): "--flag=value" is "--flag value".
#include <algorithm>
#include <functional>
#include <optional>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "core/error.h"
#include "partitioner/framework_formats.h"
#include "partitioner/megatron_layout.h"
#include "partitioner/split_text.h"
#include "tests/megatron_oracle.h"
#include "tests/test_support.h"

namespace {

using namespace stagecut::testing::megatron;
using stagecut::Placement;
using stagecut::Profile;
using stagecut::testing::makeGptChain;

// What parseSplitText makes of `text` (chunks may be read): the layers per stage and the chunks
// per rank, or the error.
struct Reading {
  std::vector<int> counts;
  int chunks_per_rank = 0;
  std::string error;
  bool operator==(const Reading& other) const {
    return counts == other.counts && chunks_per_rank == other.chunks_per_rank && error == other.error;
  }
};

Reading readSplit(const std::string& text, const Profile& profile, int stages = 0) {
  Reading reading;
  try {
    Placement placement;
    reading.counts = stagecut::parseSplitText(text, profile, stages, "--split", &placement);
    reading.chunks_per_rank = placement.chunks_per_rank;
  } catch (const stagecut::Error& error) {
    reading.error = error.what();
  }
  return reading;
}

std::string flagsLine(const MegatronArgs& args) {
  std::string line = "--num-layers " + std::to_string(args.num_layers) + " --pipeline-model-parallel-size " +
                     std::to_string(args.pp);
  if (args.layout) line += " --pipeline-model-parallel-layout \"" + *args.layout + "\"";
  if (args.virtual_stages) line += " --num-virtual-stages-per-pipeline-rank " + std::to_string(*args.virtual_stages);
  if (args.layers_per_virtual_stage) {
    line += " --num-layers-per-virtual-pipeline-stage " + std::to_string(*args.layers_per_virtual_stage);
  }
  if (args.first) line += " --decoder-first-pipeline-num-layers " + std::to_string(*args.first);
  if (args.last) line += " --decoder-last-pipeline-num-layers " + std::to_string(*args.last);
  if (args.embedding) line += " --account-for-embedding-in-pipeline-split";
  if (args.loss) line += " --account-for-loss-in-pipeline-split";
  return line;
}

}  // namespace

TEST_CASE("the oracle restates Megatron's parser on its own documented examples", "[partitioner][megatron]") {
  // parse_str_to_list's docstring and the --pipeline-model-parallel-layout help text.
  CHECK(megatronParse("Ettt|(tt|)*29,m|L") ==
        [] {
          std::vector<std::string> stages{"Ettt"};
          for (int k = 0; k < 29; ++k) stages.push_back("tt");
          stages.insert(stages.end(), {"m", "L"});
          return stages;
        }());
  CHECK(megatronParse("E|(t|)*3,m|m||L") == std::vector<std::string>{"E", "t", "t", "t", "m", "m", "", "L"});
  CHECK(megatronParse("E|t(|)*2L") == std::vector<std::string>{"E", "t", "", "L"});
  CHECK_FALSE(megatronParse("Et|x|L"));
}

TEST_CASE("a layout expands as Megatron's parser expands it, or is refused where the parser raises",
          "[partitioner][megatron]") {
  // Random short texts over every character the two expressions and the parser treat apart.
  std::mt19937 random(53);
  const std::string alphabet = "EtLm|()*,0123";
  int agreed_stages = 0, agreed_refusals = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    std::string text;
    const int length = std::uniform_int_distribution<int>(0, 12)(random);
    for (int k = 0; k < length; ++k) text += alphabet[std::uniform_int_distribution<std::size_t>(0, alphabet.size() - 1)(random)];
    INFO("layout '" << text << "'");
    const auto megatron = megatronParse(text);
    std::optional<std::vector<std::string>> ours;
    try {
      ours = stagecut::expandMegatronLayout(text);
      // Symbols are checked by the reader, after the expansion.
      for (const std::string& stage : *ours) {
        if (stage.find_first_not_of("EtLm") != std::string::npos) ours.reset();
      }
    } catch (const stagecut::Error&) {
    }
    CHECK(ours == megatron);
    ++(megatron ? agreed_stages : agreed_refusals);
  }
  CHECK(agreed_stages > 2000);
  CHECK(agreed_refusals > 2000);
}

TEST_CASE("split text reads a layout exactly where Megatron's parser and validate_layer_layout accept it",
          "[partitioner][megatron]") {
  // Layouts of the 6-block chain, near-valid by construction, then mutated: stagecut reads one
  // when Megatron accepts it and it has no empty stage (a stagecut split holds a layer per stage),
  // with Megatron's layers per stage.
  const Profile profile = makeGptChain(6);
  std::mt19937 random(59);
  const auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(random); };
  int read = 0, empty_refused = 0, refused = 0;
  for (int trial = 0; trial < 5000; ++trial) {
    std::vector<std::string> stages(static_cast<std::size_t>(pick(1, 5)));
    const int blocks = 6 + pick(-1, 1);
    for (int b = 0; b < blocks; ++b) stages[static_cast<std::size_t>(pick(0, int(stages.size()) - 1))] += 't';
    stages.front().insert(0, "E");
    stages.back() += "L";
    std::string text;
    for (std::size_t s = 0; s < stages.size(); ++s) text += (s ? "|" : "") + stages[s];
    if (pick(0, 2) == 0) text.insert(static_cast<std::size_t>(pick(0, int(text.size()))), 1, "EtL|,"[pick(0, 4)]);
    if (pick(0, 3) == 0) text = std::regex_replace(text, std::regex("ttt"), "t*3");
    INFO("layout '" << text << "'");
    const Reading reading = readSplit(text, profile);
    const auto megatron = megatronParse(text);
    const bool accepted = megatron && megatronValidates(*megatron, 6);
    const bool empty = megatron && std::find(megatron->begin(), megatron->end(), "") != megatron->end();
    if (!accepted || empty) {
      CHECK_FALSE(reading.error.empty());
      if (accepted) {
        CHECK_THAT(reading.error, Catch::Matchers::Contains("is empty, which Megatron runs"));
        ++empty_refused;
      } else {
        ++refused;
      }
      continue;
    }
    std::vector<int> counts;
    for (const std::string& stage : *megatron) {
      counts.push_back(static_cast<int>(std::count(stage.begin(), stage.end(), 't')) + (stage.front() == 'E' ? 1 : 0) +
                       (stage.back() == 'L' ? 2 : 0));
    }
    CHECK(reading.counts == counts);
    CHECK(reading.chunks_per_rank == 1);
    ++read;
  }
  CHECK(read > 500);
  CHECK(empty_refused > 100);
  CHECK(refused > 500);
}

TEST_CASE("a layout's empty stage, which Megatron runs, is refused by name, not as a misplaced E or L",
          "[partitioner][megatron]") {
  const Profile profile = makeGptChain(6);
  // Megatron's own help example with its m (MTP) layers made blocks: 8 stages, the 7th empty.
  const std::string help = "E|(t|)*3,tt|t||L";
  REQUIRE(megatronParse(help) == std::vector<std::string>{"E", "t", "t", "t", "tt", "t", "", "L"});
  for (int pp : {1, 2, 4, 8}) {
    MegatronArgs args;
    args.num_layers = 6;
    args.pp = pp;
    args.layout = help;
    REQUIRE(megatronVirtualSize(args) == (pp == 1 ? std::nullopt : std::optional<int>(8 / pp)));
  }
  CHECK(readSplit(help, profile).error ==
        "--split " + help + ": stage 6 of the layout's 8 is empty, which Megatron runs (a stage that builds no "
        "layer) but a stagecut split cannot: every stage holds at least one layer; move a layer into it");
  // E is the first layer of the whole layout and L the last, so stages before E or after L may
  // be empty: the refusal names the empty stage, not E or L.
  CHECK_THAT(readSplit("|Ettt|tttL", profile).error, Catch::Matchers::Contains("stage 0 of the layout's 3 is empty"));
  CHECK_THAT(readSplit("Ettt|tttL|", profile).error, Catch::Matchers::Contains("stage 2 of the layout's 3 is empty"));
  CHECK_THAT(readSplit("Ettt|t|*2ttL", profile).error, Catch::Matchers::Contains("stage 2 of the layout's 4 is empty"));
  // And Megatron's own refusals keep theirs.
  CHECK(readSplit("tEtt|tttL", profile).error ==
        "--split tEtt|tttL: the layout's first layer must be the embedding E, as Megatron requires");
  CHECK(readSplit("Ettt|ttLt", profile).error ==
        "--split Ettt|ttLt: the layout's last layer must be the loss L, as Megatron requires");
  CHECK(readSplit("E|(t|)*3,m|m||L", profile).error ==
        "--split E|(t|)*3,m|m||L: the layout holds m, a multi-token-prediction layer, which the profile does not "
        "have (Megatron counts m against --mtp-num-layers)");
}

TEST_CASE("Megatron takes at most one of the layout and the two virtual-stage flags, and --split reads so",
          "[partitioner][megatron]") {
  const Profile profile = makeGptChain(6);
  int accepted = 0, refused = 0;
  for (const std::optional<std::string>& layout : {std::optional<std::string>(), std::optional<std::string>("Et|t|t|t|t|tL")}) {
    for (const std::optional<int>& virtual_stages : {std::optional<int>(), std::optional<int>(1), std::optional<int>(2)}) {
      for (const std::optional<int>& layers_per : {std::optional<int>(), std::optional<int>(1), std::optional<int>(2)}) {
        MegatronArgs args;
        args.num_layers = 6;
        args.pp = 3;
        args.layout = layout;
        args.virtual_stages = virtual_stages;
        args.layers_per_virtual_stage = layers_per;
        const std::string line = flagsLine(args);
        INFO(line);
        const std::optional<int> megatron = megatronVirtualSize(args);
        const Reading reading = readSplit(line, profile);
        if (!megatron) {
          CHECK_FALSE(reading.error.empty());
          ++refused;
          continue;
        }
        CHECK(reading.error.empty());
        CHECK(reading.chunks_per_rank == *megatron);
        ++accepted;
      }
    }
  }
  CHECK(accepted == 6);  // none, or exactly one of the three
  CHECK(refused == 12);
  CHECK(readSplit("--pipeline-model-parallel-layout Et*3|t*3|L --num-virtual-stages-per-pipeline-rank 1", profile).error ==
        "--split --pipeline-model-parallel-layout Et*3|t*3|L --num-virtual-stages-per-pipeline-rank 1: "
        "--pipeline-model-parallel-layout with --num-virtual-stages-per-pipeline-rank: Megatron takes at most one of "
        "--pipeline-model-parallel-layout, --num-virtual-stages-per-pipeline-rank and "
        "--num-layers-per-virtual-pipeline-stage (a layout's length gives its virtual stages); keep one");
}

TEST_CASE("a run spelt with --num-layers-per-virtual-pipeline-stage is read as Megatron converts it to virtual stages",
          "[partitioner][megatron]") {
  int converted = 0, refused = 0;
  for (int blocks = 1; blocks <= 12; ++blocks) {
    const Profile profile = makeGptChain(blocks);
    for (int pp = 1; pp <= 4; ++pp) {
      for (int k = 0; k <= 4; ++k) {
        for (int flags = 0; flags < 6; ++flags) {
          MegatronArgs args;
          args.num_layers = blocks;
          args.pp = pp;
          args.layers_per_virtual_stage = k;
          args.embedding = flags == 1 || flags == 3;
          args.loss = flags == 2 || flags == 3;
          if (flags == 4) args.first = 1;
          if (flags == 5) args.last = 1;
          const std::string line = flagsLine(args);
          INFO(line);
          const Reading reading = readSplit(line, profile);
          const std::optional<int> megatron = megatronVirtualSize(args);
          if (!megatron) {
            CHECK_FALSE(reading.error.empty());
            ++refused;
            continue;
          }
          // The same run spelt with the flag stagecut prints (held to Megatron's builds in
          // partitioner_formats_test) reads the same, or is refused the same.
          MegatronArgs spelt = args;
          spelt.layers_per_virtual_stage.reset();
          if (*megatron > 1) spelt.virtual_stages = *megatron;
          const Reading expected = readSplit(flagsLine(spelt), profile);
          CHECK(reading.counts == expected.counts);
          CHECK(reading.chunks_per_rank == expected.chunks_per_rank);
          CHECK(reading.error.empty() == expected.error.empty());
          if (reading.error.empty()) ++converted;
        }
      }
    }
  }
  CHECK(converted > 40);
  CHECK(refused > 300);
  const Profile profile = makeGptChain(6);
  CHECK(readSplit("--num-layers 6 --pipeline-model-parallel-size 3 --num-layers-per-virtual-pipeline-stage 1 "
                  "--decoder-first-pipeline-num-layers 2",
                  profile)
            .error == "--split --num-layers 6 --pipeline-model-parallel-size 3 --num-layers-per-virtual-pipeline-stage 1 "
                      "--decoder-first-pipeline-num-layers 2: --num-layers-per-virtual-pipeline-stage 1 with "
                      "--decoder-first/last-pipeline-num-layers: Megatron takes the virtual stages of an uneven "
                      "pipeline only as --num-virtual-stages-per-pipeline-rank");
  CHECK(readSplit("--pipeline-model-parallel-size 3 --num-layers-per-virtual-pipeline-stage 4", profile).error ==
        "--split --pipeline-model-parallel-size 3 --num-layers-per-virtual-pipeline-stage 4: "
        "--num-layers-per-virtual-pipeline-stage 4: each of the 3 ranks holds 2 layers, not a multiple of 4");
}

TEST_CASE("a virtual pipeline on one rank, which Megatron refuses, is neither printed nor read for Megatron",
          "[partitioner][megatron][chunks]") {
  const Profile profile = makeGptChain(6);
  MegatronArgs one_rank;
  one_rank.num_layers = 6;
  one_rank.layout = "Ettt|tttL";
  REQUIRE_FALSE(megatronVirtualSize(one_rank));
  const std::string reason = "2 model chunks on 1 pipeline rank: Megatron runs a virtual pipeline only on "
                             "--pipeline-model-parallel-size 2 or more (its arguments.py asserts it for the "
                             "interleaved schedule)";
  CHECK(readSplit("--pipeline-model-parallel-layout Ettt|tttL --pipeline-model-parallel-size 1", profile).error ==
        "--split --pipeline-model-parallel-layout Ettt|tttL --pipeline-model-parallel-size 1: a layout of 2 stages, " +
            reason);
  CHECK(readSplit("Ettt|tttL", profile, 1).error == "--split Ettt|tttL: a layout of 2 stages, " + reason);
  // The flags' spelling names the same reason, not uneven stages or a flag below 1.
  CHECK(readSplit("--num-layers 6 --pipeline-model-parallel-size 1 --num-virtual-stages-per-pipeline-rank 2", profile)
            .error == "--split --num-layers 6 --pipeline-model-parallel-size 1 --num-virtual-stages-per-pipeline-rank 2: " +
                          reason);
  CHECK_THROWS_WITH(stagecut::formatSplit(stagecut::FrameworkFormat::kMegatron, profile, {4, 5}, Placement::loop(1, 2)),
                    "--format megatron: " + reason + "; use --format torchtitan or pippy");
  const stagecut::FrameworkOutputs outputs = stagecut::frameworkOutputs(profile, {4, 5}, Placement::loop(1, 2));
  CHECK(outputs.count("megatron") == 0);
  CHECK(outputs.count("megatron-flags") == 0);
  CHECK(outputs.count("torchtitan") == 1);
}

TEST_CASE("every Megatron line stagecut prints passes Megatron's argument checks with its virtual size",
          "[partitioner][megatron][chunks]") {
  // Every split of a 6-block chain into N x v chunks, N 1-3, v 1-3: the layout line and the flags
  // line, where printed, are accepted by Megatron's checks with the placement's v; where Megatron
  // would refuse the placement (v > 1 on one rank), nothing is printed.
  const Profile profile = makeGptChain(6);
  const int layers = static_cast<int>(profile.layerCount());
  int lines = 0;
  for (int ranks = 1; ranks <= 3; ++ranks) {
    for (int v = 1; v <= 3; ++v) {
      const int chunks = ranks * v;
      // Each chunk count vector with E on chunk 0 and head + loss on the last chunk.
      std::vector<int> counts(static_cast<std::size_t>(chunks), 1);
      const std::function<void(int, int)> fill = [&](int chunk, int left) {
        if (chunk == chunks - 1) {
          counts.back() = left;
          if (left < 2) return;  // L: the head and the loss
          const Placement placement = Placement::loop(ranks, v);
          const stagecut::FrameworkOutputs outputs = stagecut::frameworkOutputs(profile, counts, placement);
          MegatronArgs refused_on;
          refused_on.pp = ranks;
          refused_on.virtual_stages = v;
          const bool megatron_runs = megatronVirtualSize(refused_on).has_value();
          CHECK(outputs.count("megatron") == (megatron_runs ? 1u : 0u));
          for (const char* key : {"megatron", "megatron-flags"}) {
            if (!outputs.count(key)) continue;
            const std::string& line = outputs.at(key);
            INFO(line);
            std::optional<MegatronArgs> args = megatronArgparse(line, 6);
            REQUIRE(args);
            // A one-chunk layout is printed without --pipeline-model-parallel-size: the user's PP.
            if (args->layout && line.find("--pipeline-model-parallel-size") == std::string::npos) args->pp = ranks;
            CHECK(megatronVirtualSize(*args) == v);
            CHECK(readSplit(line, profile, ranks) == Reading{counts, v, ""});
            ++lines;
          }
          return;
        }
        for (int take = 1; take <= left - (chunks - 1 - chunk); ++take) {
          counts[static_cast<std::size_t>(chunk)] = take;
          fill(chunk + 1, left - take);
        }
      };
      fill(0, layers);
    }
  }
  CHECK(lines > 100);
}

TEST_CASE("Megatron's flags read alike as --flag=value and --flag value, --tensor-model-parallel-size too",
          "[partitioner][megatron][tensor-parallel]") {
  Profile profile = makeGptChain(6);
  profile.model.config["tensor_parallel"] = 2;
  for (const std::vector<int>& split : {std::vector<int>{4, 5}, {3, 2, 4}, {2, 2, 2, 3}}) {
    for (const auto& [key, line] : stagecut::frameworkOutputs(profile, split)) {
      if (key.rfind("megatron", 0) != 0) continue;
      REQUIRE(line.find("--tensor-model-parallel-size 2") != std::string::npos);
      // Every "--flag value" as "--flag=value", as argparse also reads it.
      const std::string joined = std::regex_replace(line, std::regex("(--[a-z-]+) ([^-])"), "$1=$2");
      INFO(line << "\n" << joined);
      REQUIRE(joined.find("--tensor-model-parallel-size=2") != std::string::npos);
      CHECK(readSplit(joined, profile) == readSplit(line, profile));
      CHECK(readSplit(joined, profile).counts == split);
    }
  }
  CHECK_THAT(readSplit("Ettt|tttL --tensor-model-parallel-size=4", profile).error,
             Catch::Matchers::Contains("--tensor-model-parallel-size 4 but the profile's layers are shards of tensor "
                                       "parallel 2"));
}
