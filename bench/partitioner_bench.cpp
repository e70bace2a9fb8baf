// How long the exact partitioner takes on the three sizes issue 3 names, against the plain
// O(N L^2) dynamic program on the same inputs. Prints medians of repeated runs; where the plain
// program would take hours (L = 1,048,576), its time is extrapolated from a measured smaller run
// by its N L^2 / 2 inner steps, and says so.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <utility>
#include <vector>

#include "core/sample_stats.h"
#include "partitioner/exact_solver.h"
#include "partitioner/plain_dp.h"
#include "partitioner/split_score.h"

namespace {

using stagecut::ChainCosts;
using stagecut::CostModel;

ChainCosts randomChain(int layers, int stages, bool comm, bool caps, unsigned seed,
                       bool recompute = false, bool allreduce = false) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<double> compute(0.5, 1.5), bytes(0.9, 1.1), share(0.9, 1.1);
  ChainCosts costs;
  for (int k = 0; k < layers; ++k) {
    costs.compute_ms.push_back(compute(random));
    // With caps, every 37th layer is heavy (an embedding-like table) and fits only some stages.
    const bool heavy = caps && k % 37 == 0;
    costs.state_bytes.push_back((heavy ? 5e7 : 1e6) * bytes(random));
    // With per-stage recompute, activations large enough that early 1F1B stages must recompute.
    costs.activation_bytes.push_back((recompute ? 1e6 : 1e5) * bytes(random));
    costs.input_bytes.push_back(recompute ? 1e5 : 0.0);
  }
  if (recompute) {
    stagecut::RecomputeOption none{"none", std::vector<char>(layers, 0), std::vector<double>(layers, 0.0)};
    stagecut::RecomputeOption full{"full", std::vector<char>(layers, 1), {}};
    // The extra forward: a third of forward + backward.
    for (int k = 0; k < layers; ++k) full.extra_ms.push_back(costs.compute_ms[k] / 3);
    costs.recompute_options = {none, full};
  }
  if (allreduce) {
    // D = 8 over 10 GB/s: an embedding-like layer every 37 all-reduces 50 MB, the rest 1 MB.
    for (int k = 0; k < layers; ++k) {
      costs.gradient_bytes.push_back(k % 37 == 0 ? 5e7 : 1e6);
      costs.backward_ms.push_back(costs.compute_ms[k] * 2 / 3);
    }
    costs.allreduce_ms_per_byte = 2.0 * 7 / 8 / 10e9 * 1e3;
    costs.allreduce_fixed_ms = 14 * 0.01;
    for (int s = 0; s < stages; ++s) costs.allreduce_overlap.push_back(s);
    costs.allreduce_slots = 8 + stages - 1;
  }
  if (comm) {
    // Boundary transfers of 1-20% of a layer's time: enough to move the optimal cuts.
    std::uniform_real_distribution<double> transfer(0.01, 0.2);
    for (int b = 0; b + 1 < layers; ++b) costs.boundary_comm_ms.push_back(transfer(random));
  }
  costs.stage_speed.assign(stages, 1.0);
  // 1F1B with M = 8 microbatches: min(N - s, M) in flight.
  for (int s = 0; s < stages; ++s) costs.in_flight.push_back(std::min(stages - s, 8));
  if (caps) {
    // Every third stage has a small device that cannot hold a heavy layer: stage-dependent
    // feasibility, where the greedy probe is not exact.
    for (int s = 0; s < stages; ++s) costs.memory_cap_bytes.push_back((s % 3 == 1 ? 4.5e7 : 1.2e8) * share(random));
  }
  return costs;
}

template <typename Fn>
double medianMs(int repeats, Fn&& fn) {
  std::vector<double> samples;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    samples.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  return stagecut::medianOf(std::move(samples));
}

struct Row {
  const char* name;
  int layers;
  int stages;
  bool comm;
  bool caps;
  double target_ms;
  bool recompute = false;  // recompute none or full, chosen per stage
  bool allreduce = false;  // data-parallel all-reduce term
};

}  // namespace

int main() {
  const Row rows[] = {
      {"additive", 1048576, 256, false, false, 20.0},
      {"comm both sides", 4096, 64, true, false, 50.0},
      {"stage memory caps", 1024, 64, false, true, 100.0},
      {"recompute auto+caps", 1024, 64, false, true, 100.0, true, false},
      {"dp all-reduce", 1024, 64, true, false, 100.0, false, true},
  };
  std::printf("%-20s %8s %4s %11s %9s %14s %9s  %s\n", "case", "L", "N", "exact ms", "target", "plain DP ms",
              "ratio", "probe");
  for (const Row& row : rows) {
    const CostModel model(randomChain(row.layers, row.stages, row.comm, row.caps, 42, row.recompute, row.allreduce));
    std::vector<int> split;
    const double exact_ms = medianMs(row.layers > 100000 ? 11 : 21, [&] { split = stagecut::solveExactSplit(model); });
    const double exact_bottleneck = stagecut::scoreSplit(model, split).bottleneck_ms;
    double plain_ms = 0.0;
    bool extrapolated = false;
    if (row.layers <= 4096) {
      std::vector<int> plain;
      plain_ms = medianMs(row.layers > 2048 ? 3 : 5, [&] { plain = stagecut::solvePlainDp(model); });
      const double plain_bottleneck = stagecut::scoreSplit(model, plain).bottleneck_ms;
      if (!stagecut::nearlyEqual(plain_bottleneck, exact_bottleneck)) {
        std::printf("MISMATCH: plain DP bottleneck %.9f, exact %.9f\n", plain_bottleneck, exact_bottleneck);
        return 1;
      }
    } else {
      // Measured on a smaller chain with the same N, scaled by the N L^2 / 2 inner steps.
      const int sample_layers = 2048;
      const CostModel sample(randomChain(sample_layers, row.stages, row.comm, row.caps, 42));
      const double sample_ms = medianMs(3, [&] { stagecut::plainDpBottleneckMs(sample); });
      const double scale = static_cast<double>(row.layers) / sample_layers;
      plain_ms = sample_ms * scale * scale;
      extrapolated = true;
    }
    std::printf("%-20s %8d %4d %11.2f %9.0f %14.0f%s %8.0fx  %s\n", row.name, row.layers, row.stages, exact_ms,
                row.target_ms, plain_ms, extrapolated ? "*" : " ", plain_ms / exact_ms,
                stagecut::greedyProbeIsExact(model) ? "greedy" : "reachable");
  }
  std::printf("* extrapolated from the plain DP's min-max table on L = 2048 with the same N\n");
  return 0;
}
