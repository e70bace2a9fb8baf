// How long the chunked partitioner (partition --chunks) takes on a LLaMA-70B-shaped chain at
// N = 8 stages and v = 5 chunks per rank (40 chunks of 83 layers: embedding, 80 blocks, head,
// loss): blocks copied from a sample (as `stagecut profile` times 3 of them) and every block
// timed (each a little apart), without and with links and a memory cap; then the same chain in
// ZB-V's V (v = 2, rank r holding chunks r and 2N - 1 - r). Prints the median time,
// the search's nodes, whether it proved its split optimal, and its gap to the lower bound.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/sample_stats.h"
#include "partitioner/chunked_partition.h"

namespace {

// Relative to one block (forward 1 ms, backward 2 ms); bytes as a TP 8 bf16 shard holds them.
stagecut::Profile llama70bChain(bool every_block_timed) {
  std::mt19937 random(70);
  std::uniform_real_distribution<double> spread(0.97, 1.03);
  stagecut::Profile profile;
  profile.model.name = "llama3-70b-shaped";
  const auto add = [&](const std::string& name, const std::string& kind, double forward_ms, std::uint64_t params,
                       std::uint64_t activation_bytes) {
    stagecut::LayerCost layer;
    layer.index = static_cast<int>(profile.layers.size());
    layer.name = name;
    layer.kind = kind;
    layer.forward_ms = stagecut::TimeStatsMs::exactly(forward_ms);
    layer.backward_ms = stagecut::TimeStatsMs::exactly(2 * forward_ms);
    layer.params = params;
    layer.param_bytes = 2 * params;
    layer.activation_bytes = activation_bytes;
    layer.output_bytes = 8192u * 4096u * 2u;
    profile.layers.push_back(layer);
  };
  add("embed", "embed", 0.02, 131'334'144, 0);
  for (int b = 0; b < 80; ++b) {
    add("block." + std::to_string(b), "block", every_block_timed ? spread(random) : 1.0, 107'000'000, 600u << 20);
  }
  add("head", "head", 1.3, 131'334'144, 1u << 30);
  add("loss", "loss", 0.2, 0, 1u << 30);
  profile.layers.back().output_bytes = 4;
  return profile;
}

struct Row {
  const char* name;
  bool every_block_timed;
  bool link;
  bool cap;  // the uncapped split's heaviest rank less 5%, so that the cap binds
  bool v_shape = false;  // zb-v: 2 chunks per rank in a V instead of 5 in loop order
};

}  // namespace

int main() {
  const Row rows[] = {
      {"blocks copied", false, false, false},
      {"every block timed", true, false, false},
      {"blocks copied, link", false, true, false},
      {"every block timed, link", true, true, false},
      {"blocks copied, binding cap", false, false, true},
      {"every block timed, binding cap", true, false, true},
      {"V: blocks copied", false, false, false, true},
      {"V: every block timed", true, false, false, true},
      {"V: every block timed, link", true, true, false, true},
      {"V: every block timed, binding cap", true, false, true, true},
  };
  std::printf("%-31s %4s %3s %4s %10s %12s %6s %8s\n", "case", "N", "v", "M", "median ms", "nodes", "exact", "gap");
  for (const Row& row : rows) {
    const stagecut::Profile profile = llama70bChain(row.every_block_timed);
    stagecut::PartitionOptions options;
    options.microbatches = 32;
    options.schedule = row.v_shape ? stagecut::ScheduleKind::kZeroBubbleV : stagecut::ScheduleKind::kInterleavedOneFOneB;
    options.placement = stagecut::schedulePlacement(options.schedule, 8, row.v_shape ? std::nullopt : std::optional(5));
    options.rules = stagecut::SplitRuleSet::kAny;
    options.bytes_per_param = 18;
    if (row.link) {
      options.bandwidth_bytes_per_s = 25e9;
      options.latency_ms = 0.01;
    }
    if (row.cap) {
      std::uint64_t heaviest = 0;
      for (const auto& chunk : stagecut::partitionChunked(profile, options, "bench").stages) {
        heaviest = std::max(heaviest, chunk.memory_bytes);
      }
      options.memory_cap_bytes = {heaviest / 100 * 95};
    }
    std::vector<double> samples;
    stagecut::ChunkedSplit search;
    bool failed = false;
    for (int repeat = 0; repeat < 5; ++repeat) {
      const auto start = std::chrono::steady_clock::now();
      try {
        stagecut::partitionChunked(profile, options, "bench", &search);
      } catch (const stagecut::Error& error) {
        std::printf("%-31s %s\n", row.name, error.what());
        failed = true;
        break;
      }
      samples.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    if (failed) continue;
    std::printf("%-31s %4d %3d %4d %10.1f %12lld %6s %7.2f%%\n", row.name, options.placement.ranks, options.placement.chunks_per_rank,
                options.microbatches, stagecut::medianOf(std::move(samples)), static_cast<long long>(search.nodes),
                search.exact ? "yes" : "no", 100.0 * (search.bottleneck_ms / search.lower_bound_ms - 1.0));
  }
  return 0;
}
