#pragma once
// Validation runs for the report tests, built without LibTorch from simulated stage times and
// written by the one stagecut.validation/1 writer (validation/validation_json.h).

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "schedule/generators.h"
#include "schedule/simulator.h"
#include "validation/validation_json.h"

namespace stagecut::testing {

/// A 1F1B validation of a split whose rank r holds layers ranges[r] and takes forward_ms[r] and
/// backward_ms[r] per microbatch; the "measured" step is the prediction stretched by `slowdown`.
/// With `replicas` > 1 every rank ends with a 2 ms all-reduce op and the ranks are listed for
/// each replica (rank = replica x stages + stage), as validate --data-parallel writes them.
inline ValidationReport makeValidationReport(const std::vector<std::pair<int, int>>& ranges,
                                             const std::vector<double>& forward_ms,
                                             const std::vector<double>& backward_ms, int microbatches,
                                             double slowdown, int replicas = 1) {
  const int stages = static_cast<int>(ranges.size());
  ValidationReport report;
  report.ops = generateSchedule("1f1b", stages, microbatches);
  report.predicted = simulate(report.ops, costsFromStageTimes(forward_ms, backward_ms, 0.0));
  if (replicas > 1) {
    for (int r = 0; r < stages; ++r) {
      const double end = report.predicted.op_times[r].back().end_ms;
      report.ops.ranks[r].push_back({OpKind::kAllReduce, 0, 0});
      report.predicted.op_times[r].push_back({end, end + 2.0});
      report.predicted.ranks[r].allreduce_ms = 2.0;
      report.predicted.step_ms = std::max(report.predicted.step_ms, end + 2.0);
    }
    double busy = 0.0;
    for (RankStats& rank : report.predicted.ranks) {
      rank.idle_ms = report.predicted.step_ms - rank.busy_ms;
      busy += rank.busy_ms;
    }
    report.predicted.bubble = 1.0 - busy / (report.predicted.step_ms * stages);
  }
  report.measured = report.predicted;
  report.measured.step_ms *= slowdown;
  for (auto& rank : report.measured.op_times) {
    for (OpTiming& op : rank) op = {op.start_ms * slowdown, op.end_ms * slowdown};
  }
  for (RankStats& rank : report.measured.ranks) {
    rank = {rank.busy_ms * slowdown, rank.idle_ms * slowdown, rank.allreduce_ms * slowdown, 0, 0};
  }
  report.measured_replicas.assign(static_cast<std::size_t>(replicas), report.measured);
  report.schedule = "1f1b";
  report.stages = stages;
  report.microbatches = microbatches;
  report.microbatch_size = 2;
  report.replicas = replicas;
  const double measured = report.predicted.step_ms * slowdown;
  report.measured_step_median_ms = measured;
  report.measured_step_ms = {measured, measured * 1.01, measured * 0.99};
  report.predicted_step_ms = report.predicted.step_ms;
  report.error = slowdown - 1.0;
  report.measured_bubble = report.predicted_bubble = report.predicted.bubble;
  report.grad_max_rel_diff = 3e-7;
  report.grad_tolerance = 1e-4;
  report.grad_pass = true;
  report.loss_pipeline = report.loss_reference = 9.7;
  report.worst_op = "rank 1 B(3)";
  report.worst_op_deviation = 0.2;
  report.link_latency_ms = 0.05;
  report.link_bandwidth_bytes_per_s = 2e9;
  if (replicas > 1) {
    report.replica_link_latency_ms = 0.1;
    report.replica_link_bandwidth_bytes_per_s = 1e9;
  }
  for (int d = 0; d < replicas; ++d) {
    for (int r = 0; r < stages; ++r) {
      const RankStats& stats = report.predicted.ranks[r];
      RankComparison rank;
      rank.rank = d * stages + r;
      rank.stage = r;
      rank.replica = d;
      rank.first_layer = ranges[r].first;
      rank.last_layer = ranges[r].second;
      rank.measured_busy_ms = stats.busy_ms * slowdown;
      rank.predicted_busy_ms = stats.busy_ms;
      rank.measured_bubble = rank.predicted_bubble = stats.idle_ms / report.predicted.step_ms;
      rank.measured_peak_bytes = 50000000 + 1000000 * r;
      rank.predicted_peak_bytes = 48000000 + 1000000 * r;
      rank.grad_max_rel_diff = 3e-7;
      rank.worst_parameter = "head.weight";
      rank.measured_allreduce_ms = replicas > 1 ? 2.0 * slowdown : 0.0;
      rank.predicted_forward_ms = forward_ms[r];
      rank.measured_forward_ms = forward_ms[r] * slowdown;
      rank.predicted_backward_ms = backward_ms[r];
      rank.measured_backward_ms = backward_ms[r] * slowdown;
      report.ranks.push_back(rank);
    }
  }
  return report;
}

/// makeValidationReport as the document `stagecut validate --json` prints.
inline nlohmann::json makeValidationJson(const std::vector<std::pair<int, int>>& ranges,
                                         const std::vector<double>& forward_ms,
                                         const std::vector<double>& backward_ms, int microbatches,
                                         double slowdown, int replicas = 1) {
  return validationToJson(makeValidationReport(ranges, forward_ms, backward_ms, microbatches, slowdown, replicas));
}

/// The example GPT (data/samples/example-gpt.profile.json) validated on 2 ranks, 4 microbatches:
/// its compute split 6,5 (measured 8% slower than predicted) and its params split 5,6 (12%).
inline nlohmann::json exampleComputeValidation(int replicas = 1) {
  return makeValidationJson({{0, 5}, {6, 10}}, {10.3, 12.3}, {21.1, 24.1}, 4, 1.08, replicas);
}
inline nlohmann::json exampleParamsValidation() {
  return makeValidationJson({{0, 4}, {5, 10}}, {8.3, 14.3}, {17.0, 28.2}, 4, 1.12);
}

}  // namespace stagecut::testing
