#pragma once
// Hand-made `stagecut.validation/1` documents for the report tests: the shape validationToJson
// (runtime/validation_report.cpp) writes, built without LibTorch from simulated stage times.

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "schedule/generators.h"
#include "schedule/simulator.h"

namespace stagecut::testing {

/// A 1F1B validation of a split whose rank r holds layers ranges[r] and takes forward_ms[r] and
/// backward_ms[r] per microbatch; the "measured" step is the prediction stretched by `slowdown`.
inline nlohmann::json makeValidationJson(const std::vector<std::pair<int, int>>& ranges,
                                         const std::vector<double>& forward_ms,
                                         const std::vector<double>& backward_ms, int microbatches,
                                         double slowdown) {
  const int stages = static_cast<int>(ranges.size());
  const Schedule ops = generateSchedule("1f1b", stages, microbatches);
  const SimulationResult predicted = simulate(ops, costsFromStageTimes(forward_ms, backward_ms, 0.0));
  auto timeline = [&](double stretch) {
    nlohmann::json ranks = nlohmann::json::array();
    for (int r = 0; r < stages; ++r) {
      nlohmann::json rank = nlohmann::json::array();
      for (std::size_t i = 0; i < ops.ranks[r].size(); ++i) {
        rank.push_back({opKindLetter(ops.ranks[r][i].kind), ops.ranks[r][i].microbatch,
                        predicted.op_times[r][i].start_ms * stretch, predicted.op_times[r][i].end_ms * stretch});
      }
      ranks.push_back(rank);
    }
    return ranks;
  };
  nlohmann::json ranks = nlohmann::json::array();
  for (int r = 0; r < stages; ++r) {
    ranks.push_back({{"rank", r}, {"first", ranges[r].first}, {"last", ranges[r].second},
                     {"busy_ms", predicted.ranks[r].busy_ms * slowdown},
                     {"predicted_busy_ms", predicted.ranks[r].busy_ms},
                     {"bubble", predicted.ranks[r].idle_ms / predicted.step_ms},
                     {"predicted_bubble", predicted.ranks[r].idle_ms / predicted.step_ms},
                     {"peak_memory_bytes", 50000000 + 1000000 * r},
                     {"predicted_peak_memory_bytes", 48000000 + 1000000 * r},
                     {"grad_max_rel_diff", 3e-7}, {"worst_parameter", "head.weight"}});
  }
  const double measured = predicted.step_ms * slowdown;
  return {{"format", "stagecut.validation/1"},
          {"schedule", "1f1b"},
          {"stages", stages},
          {"microbatches", microbatches},
          {"measured_step_ms", measured},
          {"measured_steps_ms", {measured, measured * 1.01, measured * 0.99}},
          {"predicted_step_ms", predicted.step_ms},
          {"error", slowdown - 1.0},
          {"measured_bubble", predicted.bubble},
          {"predicted_bubble", predicted.bubble},
          {"grad_max_rel_diff", 3e-7},
          {"grad_tolerance", 1e-4},
          {"grad_check", "pass"},
          {"loss", 9.7},
          {"reference_loss", 9.7},
          {"worst_op", "rank 1 B(3)"},
          {"worst_op_deviation", 0.2},
          {"link_latency_ms", 0.05},
          {"link_bandwidth_bytes_per_s", 2e9},
          {"ranks", ranks},
          {"timeline", {{"predicted", timeline(1.0)}, {"measured", timeline(slowdown)}}}};
}

/// The example GPT (data/samples/example-gpt.profile.json) validated on 2 ranks, 4 microbatches:
/// its compute split 6,5 (measured 8% slower than predicted) and its params split 5,6 (12%).
inline nlohmann::json exampleComputeValidation() {
  return makeValidationJson({{0, 5}, {6, 10}}, {10.3, 12.3}, {21.1, 24.1}, 4, 1.08);
}
inline nlohmann::json exampleParamsValidation() {
  return makeValidationJson({{0, 4}, {5, 10}}, {8.3, 14.3}, {17.0, 28.2}, 4, 1.12);
}

}  // namespace stagecut::testing
