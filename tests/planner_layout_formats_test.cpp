// Every layout plan --gpus can print, in Megatron's and torchtitan's words, held to what those
// frameworks accept: Megatron's argument checks and layout parser (tests/megatron_oracle.h, from
// megatron/training/arguments.py at d98e8a64) and torchtitan's config fields (ParallelismConfig
// and TrainingConfig in torchtitan/config/configs.py at b5bcd76), the TOML read by Python's own
// parser.

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <variant>

#include <catch2/catch.hpp>

#include "planner/layout_formats.h"
#include "planner/layout_search.h"
#include "schedule/data_parallel.h"
#include "tests/megatron_oracle.h"
#include "tests/test_support.h"

using namespace stagecut::testing::megatron;
using stagecut::LayoutFigures;
using stagecut::ParallelLayout;
using stagecut::PlanInputs;
using stagecut::Profile;

namespace {

constexpr int kBlocks = 8;
constexpr int kSeq = 1024;

// embed, 8 blocks, head, loss (Megatron's E, t and L) at TP 1, 2 and 4: each shard's compute and
// weights divided by t, its blocks running 2 collectives each way.
Profile gptShards() {
  Profile chain = stagecut::testing::makeGptChain(kBlocks);
  chain.run.microbatch_size = 1;
  chain.run.seq_len = kSeq;
  chain.run.extra[stagecut::kWeightGradientTimingKey] = stagecut::kWeightGradientTimedAfterInput;
  for (int t : {1, 2, 4}) {
    stagecut::ShardCosts shard;
    shard.degrees.tensor_parallel = t;
    shard.degrees.sequence_parallel = t > 1;
    shard.layers = chain.layers;
    for (stagecut::LayerCost& layer : shard.layers) {
      layer.forward_ms = stagecut::TimeStatsMs::exactly(layer.forward_ms.median / t);
      layer.backward_ms = stagecut::TimeStatsMs::exactly(layer.backward_ms.median / t);
      layer.backward_input_ms = stagecut::TimeStatsMs::exactly(layer.backward_ms.median / 2);
      layer.backward_weight_ms = stagecut::TimeStatsMs::exactly(layer.backward_ms.median / 2);
      layer.params /= static_cast<std::uint64_t>(t);
      layer.param_bytes /= static_cast<std::uint64_t>(t);
      if (t > 1) layer.tp_collectives = stagecut::LayerCost::TensorParallelCollectives{2, 2, 4096};
    }
    chain.shards.push_back(shard);
  }
  chain.layers = chain.shards.front().layers;
  return chain;
}

// Every candidate that runs at `gpus`, for `framework`, with the shard profile the plan prints it
// from (its model.config naming the degree, as plan --gpus passes it).
struct Runnable {
  LayoutFigures figures;
  Profile shard;
};

std::vector<Runnable> runnableLayouts(int gpus, int global_batch, stagecut::Framework framework) {
  stagecut::PlanTarget target;
  target.global_batch = global_batch;
  target.framework = framework;
  const PlanInputs inputs(gptShards(), "gpt.json", stagecut::clusterPreset("dgx-h100", gpus), target);
  std::vector<Runnable> runnable;
  for (const ParallelLayout& layout : stagecut::candidateLayouts(inputs, stagecut::LayoutSearchOptions{})) {
    const auto outcome = stagecut::tryLayout(inputs, layout, false);
    if (!std::holds_alternative<LayoutFigures>(outcome)) continue;
    runnable.push_back({std::get<LayoutFigures>(outcome), inputs.shardAt(layout.degrees, layout.microbatch_size)});
  }
  return runnable;
}

// How often `word` stands in `text` as a word of its own.
int occurrences(const std::string& text, const std::string& word) {
  int count = 0;
  std::istringstream words(text);
  for (std::string each; words >> each;) count += each == word ? 1 : 0;
  return count;
}

// The t's of each stage of a parsed Megatron layout.
std::vector<int> blocksPerStage(const std::vector<std::string>& stages) {
  std::vector<int> counts;
  for (const std::string& stage : stages) counts.push_back(static_cast<int>(std::count(stage.begin(), stage.end(), 't')));
  return counts;
}

std::vector<int> blocksPerChunk(const stagecut::Partition& split) {
  std::vector<int> counts;
  for (const auto& stage : split.stages) {
    int blocks = 0;
    for (int i = stage.first; i <= stage.last; ++i) blocks += (i >= 1 && i <= kBlocks) ? 1 : 0;
    counts.push_back(blocks);
  }
  return counts;
}

// key = value lines under [section], keys only.
std::set<std::string> tomlKeys(const std::string& toml, const std::string& section) {
  std::set<std::string> keys;
  std::istringstream lines(toml);
  std::string current;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    if (line[0] == '[') {
      current = line.substr(1, line.find(']') - 1);
    } else if (current == section) {
      keys.insert(line.substr(0, line.find(' ')));
    }
  }
  return keys;
}

}  // namespace

TEST_CASE("every layout plan --gpus prints as Megatron flags passes Megatron's argument and layout checks",
          "[planner][layouts][megatron]") {
  for (int gpus : {4, 8, 16}) {
    const int global_batch = 32;
    const std::vector<Runnable> layouts = runnableLayouts(gpus, global_batch, stagecut::Framework::kMegatron);
    REQUIRE(layouts.size() > 10);
    for (const Runnable& each : layouts) {
      const LayoutFigures& figures = each.figures;
      const ParallelLayout& layout = figures.layout;
      const std::string flags = stagecut::megatronLayoutFlags(figures, each.shard, global_batch);
      INFO(gpus << " GPUs: " << flags);
      // Each flag once: argparse would take the last of two and hide the first.
      for (const char* flag : {"--tensor-model-parallel-size", "--pipeline-model-parallel-size",
                               "--sequence-parallel", "--micro-batch-size", "--global-batch-size"}) {
        CHECK(occurrences(flags, flag) <= 1);
      }
      const std::optional<MegatronArgs> args = megatronArgparse(flags, kBlocks);
      REQUIRE(args.has_value());  // every flag printed is one Megatron's parser knows
      CHECK(megatronTrainingRefusal(*args, gpus, kSeq) == std::nullopt);
      CHECK(args->tp == layout.degrees.tensor_parallel);
      CHECK(args->cp == layout.degrees.context_parallel);
      CHECK(args->pp == layout.placement.ranks);
      CHECK(args->micro_batch_size == layout.microbatch_size);
      CHECK(args->global_batch_size == global_batch);
      CHECK(args->distributed_optimizer == layout.sharded_data_parallel);
      CHECK(args->sequence_parallel == (layout.degrees.tensor_parallel > 1));
      if (layout.placement.ranks > 1) {
        REQUIRE(args->layout.has_value());
        const auto stages = megatronParse(*args->layout);
        REQUIRE(stages.has_value());
        CHECK(static_cast<int>(stages->size()) == layout.placement.chunkCount());
        CHECK(blocksPerStage(*stages) == blocksPerChunk(figures.split));
      }
    }
  }
}

TEST_CASE("every layout plan --gpus prints for torchtitan names its real config fields and parses as TOML",
          "[planner][layouts][torchtitan]") {
  // ParallelismConfig and TrainingConfig fields at torchtitan b5bcd76 (torchtitan/config/configs.py).
  const std::set<std::string> parallelism = {"data_parallel_replicate_degree", "data_parallel_shard_degree",
      "fsdp_reshard_after_forward", "enable_fsdp_symm_mem", "tensor_parallel_degree", "enable_sequence_parallel",
      "spmd_backend", "pipeline_parallel_degree", "module_fqns_per_model_part",
      "pipeline_parallel_first_stage_less_layers", "pipeline_parallel_last_stage_less_layers",
      "pipeline_parallel_layers_per_stage", "pipeline_parallel_schedule", "pipeline_parallel_schedule_csv",
      "num_pp_microbatches", "context_parallel_degree", "context_parallel_load_balancer",
      "context_parallel_ptrr_mask_key", "expert_parallel_degree"};
  const std::set<std::string> training = {"num_tokens_per_microbatch_per_dp_rank", "num_tokens_per_train_step",
      "max_context_length", "max_norm", "steps", "enable_cpu_offload", "disable_cuda_graphs", "dtype",
      "mixed_precision_param", "mixed_precision_reduce", "gc_freq", "gc_debug"};
  const std::set<std::string> schedules = {"GPipe", "1F1B", "Interleaved1F1B", "ZBVZeroBubble", "DualPipeV",
                                           "InterleavedZeroBubble"};
  const stagecut::testing::TempDir dir;
  std::ofstream all(dir.file("all.txt"));
  int written = 0;
  for (int gpus : {4, 8}) {
    const std::vector<Runnable> layouts = runnableLayouts(gpus, 16, stagecut::Framework::kTorchtitan);
    REQUIRE_FALSE(layouts.empty());
    for (const Runnable& each : layouts) {
      const LayoutFigures& figures = each.figures;
      const std::string toml = stagecut::torchtitanLayoutToml(figures, each.shard, 16, kSeq);
      INFO(toml);
      for (const std::string& key : tomlKeys(toml, "parallelism")) CHECK(parallelism.count(key) == 1);
      for (const std::string& key : tomlKeys(toml, "training")) CHECK(training.count(key) == 1);
      const auto at = toml.find("pipeline_parallel_schedule = \"");
      if (figures.layout.placement.ranks > 1) {
        REQUIRE(at != std::string::npos);
        const std::size_t from = at + std::string("pipeline_parallel_schedule = \"").size();
        CHECK(schedules.count(toml.substr(from, toml.find('"', from) - from)) == 1);
      }
      const std::string path = dir.file("layout" + std::to_string(written++) + ".toml");
      std::ofstream(path) << toml;
      all << path << "\n";
    }
  }
  all.close();
  // Python's tomllib (3.11) reads every file, and the degrees multiply to the GPUs.
  const std::string script =
      "import sys, tomllib\n"
      "for path in open(sys.argv[1]).read().split():\n"
      "    p = tomllib.load(open(path, 'rb'))['parallelism']\n"
      "    g = p['data_parallel_shard_degree'] * p['data_parallel_replicate_degree'] * p['tensor_parallel_degree']"
      " * p['context_parallel_degree'] * p['pipeline_parallel_degree']\n"
      "    if g not in (4, 8): sys.exit(path + ': ' + str(g))\n"
      "    parts = p.get('module_fqns_per_model_part')\n"
      "    if p['pipeline_parallel_degree'] > 1 and (not parts or len(parts) % p['pipeline_parallel_degree']):\n"
      "        sys.exit(path + ': parts')\n";
  std::ofstream(dir.file("check.py")) << script;
  const std::string command = "python3 " + dir.file("check.py") + " " + dir.file("all.txt");
  CHECK(std::system(command.c_str()) == 0);
}
