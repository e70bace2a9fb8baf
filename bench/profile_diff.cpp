// Compares two profiles of the same model layer by layer: how far apart their medians are.
// Used by bench/profiler_repeatability.sh to check that two runs of one command agree.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/units.h"
#include "core/profile_json.h"
#include "partitioner/profile_partitioner.h"
#include "partitioner/split_score.h"

namespace {

using stagecut::Profile;

// Every layer's forward and backward medians side by side, and how many figures longer than
// 1 ms agree within 5%.
void printLayerTable(const Profile& first, const Profile& second) {
  std::printf("%-12s %10s %10s %8s %10s %10s %8s\n", "layer", "fwd 1", "fwd 2", "diff", "bwd 1", "bwd 2", "diff");
  double worst = 0;
  int compared = 0;
  int within = 0;
  for (std::size_t i = 0; i < first.layers.size(); ++i) {
    const auto& a = first.layers[i];
    const auto& b = second.layers[i];
    const double forward_diff = std::abs(a.forward_ms.median - b.forward_ms.median) / a.forward_ms.median;
    const double backward_diff =
        a.backward_ms.median > 0 ? std::abs(a.backward_ms.median - b.backward_ms.median) / a.backward_ms.median : 0;
    std::printf("%-12s %10.3f %10.3f %7.1f%% %10.3f %10.3f %7.1f%%\n", a.name.c_str(), a.forward_ms.median,
                b.forward_ms.median, 100 * forward_diff, a.backward_ms.median, b.backward_ms.median,
                100 * backward_diff);
    // The repeatability target is for layers longer than 1 ms; shorter ones are shown only.
    for (const auto& [median, diff] : {std::pair{a.forward_ms.median, forward_diff},
                                       std::pair{a.backward_ms.median, backward_diff}}) {
      if (median <= 1.0) continue;
      worst = std::max(worst, diff);
      ++compared;
      if (diff <= 0.05) ++within;
    }
  }
  std::printf("figures longer than 1 ms within 5%%: %d of %d; largest difference %.1f%%\n", within, compared,
              100 * worst);
}

// The repeatability target: within 5% on every layer that holds at least 1% of the chain's
// time, forward and backward (and B and W where both runs timed them).
void printRepeatabilityTarget(const Profile& first, const Profile& second) {
  double chain_ms = 0;
  for (const auto& layer : first.layers) chain_ms += layer.forward_ms.median + layer.backward_ms.median;
  int held = 0, held_within = 0;
  double held_worst = 0;
  std::string held_worst_name;
  for (std::size_t i = 0; i < first.layers.size(); ++i) {
    const auto& a = first.layers[i];
    const auto& b = second.layers[i];
    if (a.forward_ms.median + a.backward_ms.median < 0.01 * chain_ms) continue;
    std::vector<std::pair<const char*, std::pair<double, double>>> figures = {
        {"forward", {a.forward_ms.median, b.forward_ms.median}}, {"backward", {a.backward_ms.median, b.backward_ms.median}}};
    if (a.backward_input_ms && b.backward_input_ms) figures.push_back({"B", {a.backward_input_ms->median, b.backward_input_ms->median}});
    if (a.backward_weight_ms && b.backward_weight_ms) figures.push_back({"W", {a.backward_weight_ms->median, b.backward_weight_ms->median}});
    for (const auto& [what, pair] : figures) {
      if (pair.first <= 0) continue;
      const double diff = std::abs(pair.second - pair.first) / pair.first;
      ++held;
      if (diff <= 0.05) ++held_within;
      if (diff > held_worst) held_worst = diff, held_worst_name = a.name + " " + what;
    }
  }
  std::printf("layers holding >= 1%% of the chain: %d of %d figures within 5%%, largest %.1f%% (%s): %s\n",
              held_within, held, 100 * held_worst, held_worst_name.c_str(),
              held_within == held ? "meets the target" : "misses the target");
}

// The split depends only on each layer's share of the chain: a drift of the whole machine
// between the runs moves every time alike and no boundary. Shares of fwd + bwd, per layer.
void printChainShares(const Profile& first, const Profile& second) {
  double total_first = 0, total_second = 0;
  for (std::size_t i = 0; i < first.layers.size(); ++i) {
    total_first += first.layers[i].forward_ms.median + first.layers[i].backward_ms.median;
    total_second += second.layers[i].forward_ms.median + second.layers[i].backward_ms.median;
  }
  double worst_share = 0;
  std::string worst_layer;
  for (std::size_t i = 0; i < first.layers.size(); ++i) {
    const double share_first = (first.layers[i].forward_ms.median + first.layers[i].backward_ms.median) / total_first;
    const double share_second =
        (second.layers[i].forward_ms.median + second.layers[i].backward_ms.median) / total_second;
    if (share_first * total_first <= 1.0) continue;
    const double diff = std::abs(share_second - share_first) / share_first;
    if (diff > worst_share) worst_share = diff, worst_layer = first.layers[i].name;
  }
  std::printf("whole chain (sum of fwd + bwd): %.1f ms and %.1f ms (%+.1f%%)\n", total_first, total_second,
              100 * (total_second / total_first - 1));
  std::printf("largest difference of a layer's share of the chain: %.1f%% (%s)\n", 100 * worst_share,
              worst_layer.c_str());
}

// The machine's own pace in each run (the reference kernel profile times before and after
// its layers): a chain that moved with it moved with the machine, not with the profiler.
void printMachinePace(const Profile& first, const Profile& second) {
  const auto reference = [](const Profile& profile, const char* key) {
    const auto found = profile.device.extra.find(key);
    return found != profile.device.extra.end() && found->is_number() ? found->get<double>() : 0.0;
  };
  const double kernel_first = reference(first, "reference_kernel_ms");
  const double kernel_second = reference(second, "reference_kernel_ms");
  if (kernel_first > 0 && kernel_second > 0) {
    std::printf("reference kernel: %.3f ms and %.3f ms (%+.1f%%; %+.1f%% and %+.1f%% from start to end of each run)\n",
                kernel_first, kernel_second, 100 * (kernel_second / kernel_first - 1),
                100 * reference(first, "reference_kernel_change"), 100 * reference(second, "reference_kernel_change"));
  }
  if (first.whole_model && second.whole_model) {
    std::printf("layers' sum vs whole model: %+.1f%% and %+.1f%%\n", 100 * first.whole_model->sum_of_layers_vs_whole,
                100 * second.whole_model->sum_of_layers_vs_whole);
  }
}

// What a user acts on: the split. Each run's equal-compute split for 2, 4 and 8 stages
// (1F1B, M = 8, no caps), and, where they differ, how much slower the second run's split
// is than the first's on the first run's costs.
void printSplits(const Profile& first, const char* first_path, const Profile& second, const char* second_path) {
  for (int stages : {2, 4, 8}) {
    if (static_cast<std::size_t>(stages) > first.layerCount()) break;
    stagecut::PartitionOptions options;
    options.placement = stagecut::Placement::loop(stages, 1);
    options.microbatches = 8;
    const auto split = [&](const Profile& profile, const char* source) {
      return stagecut::partitionProfile(profile, options, source, stagecut::SplitMethod::kCompute).layersPerStage();
    };
    const std::vector<int> split_first = split(first, first_path);
    const std::vector<int> split_second = split(second, second_path);
    if (split_first == split_second) {
      std::printf("%d stages: the same split from both runs, %s\n", stages, stagecut::joinNumbers(split_first).c_str());
      continue;
    }
    const stagecut::CostModel model = stagecut::buildCostModel(first, options, first_path);
    const double own = stagecut::scoreSplit(model, split_first).bottleneck_ms;
    const double other = stagecut::scoreSplit(model, split_second).bottleneck_ms;
    std::printf("%d stages: splits %s and %s; on the first run's costs the second's bottleneck is %+.2f%% off\n",
                stages, stagecut::joinNumbers(split_first).c_str(), stagecut::joinNumbers(split_second).c_str(),
                100 * (other / own - 1));
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: profile_diff FIRST.json SECOND.json\n");
    return 2;
  }
  try {
    const auto first = stagecut::readProfileFile(argv[1]);
    const auto second = stagecut::readProfileFile(argv[2]);
    if (first.layers.size() != second.layers.size()) {
      std::fprintf(stderr, "profile_diff: the profiles have %zu and %zu layers\n", first.layers.size(),
                   second.layers.size());
      return 2;
    }
    printLayerTable(first, second);
    printRepeatabilityTarget(first, second);
    printChainShares(first, second);
    printMachinePace(first, second);
    printSplits(first, argv[1], second, argv[2]);
  } catch (const stagecut::Error& e) {
    std::fprintf(stderr, "profile_diff: %s\n", e.what());
    return 2;
  }
  return 0;
}
