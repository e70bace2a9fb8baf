#include "runtime/validation_report.h"

#include <algorithm>
#include <cmath>

#include "schedule/chrome_trace.h"
#include "schedule/generators.h"
#include "schedule/profile_costs.h"

namespace stagecut {

namespace {

double medianOf(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0.0 : values[values.size() / 2];
}

// One measured step as the simulator would have written it: op times in ms from the step's start.
SimulationResult measuredStep(const Schedule& schedule, const std::vector<RankOutcome>& outcomes, std::size_t step) {
  std::int64_t start = INT64_MAX, end = INT64_MIN;
  for (const auto& outcome : outcomes) {
    for (const auto& record : outcome.steps[step]) {
      start = std::min(start, record.start_ns);
      end = std::max(end, record.end_ns);
    }
  }
  SimulationResult result;
  result.schedule = "measured " + schedule.name;
  result.stages = schedule.stages;
  result.chunks = schedule.chunks;
  result.microbatches = schedule.microbatches;
  result.step_ms = static_cast<double>(end - start) / 1e6;
  double busy_total = 0.0;
  for (const auto& outcome : outcomes) {
    RankStats stats;
    std::vector<OpTiming> times;
    for (const auto& record : outcome.steps[step]) {
      times.push_back({static_cast<double>(record.start_ns - start) / 1e6, static_cast<double>(record.end_ns - start) / 1e6});
      stats.busy_ms += static_cast<double>(record.end_ns - record.start_ns) / 1e6;
    }
    stats.idle_ms = result.step_ms - stats.busy_ms;
    busy_total += stats.busy_ms;
    result.ranks.push_back(stats);
    result.op_times.push_back(std::move(times));
  }
  result.bubble = result.step_ms > 0 ? 1.0 - busy_total / (result.step_ms * schedule.stages) : 0.0;
  return result;
}

}  // namespace

ValidationReport buildValidationReport(const ValidateRequest& request, const Profile& profile,
                                       const Partition& partition, const std::vector<RankOutcome>& outcomes) {
  ValidationReport report;
  report.schedule = request.schedule;
  report.stages = static_cast<int>(partition.stages.size());
  report.microbatches = request.microbatches;
  report.ops = generateSchedule(request.schedule, report.stages, request.microbatches, 1);

  std::vector<double> latencies, bandwidths;
  for (const auto& outcome : outcomes) {
    if (outcome.link_bandwidth_bytes_per_s > 0) {
      latencies.push_back(outcome.link_latency_ms);
      bandwidths.push_back(outcome.link_bandwidth_bytes_per_s);
    }
  }
  BoundaryLink link;
  report.link_latency_ms = link.latency_ms = medianOf(latencies);
  report.link_bandwidth_bytes_per_s = link.bandwidth_bytes_per_s = medianOf(bandwidths);
  const PartitionCosts costs = costsFromPartition(profile, partition, 1, link, request.partition_path);
  report.predicted = simulate(report.ops, costs.costs);
  report.predicted_step_ms = report.predicted.step_ms;
  report.predicted_bubble = report.predicted.bubble;

  const std::size_t steps = outcomes.front().steps.size();
  std::vector<double> step_ms;
  for (std::size_t k = 0; k < steps; ++k) step_ms.push_back(measuredStep(report.ops, outcomes, k).step_ms);
  report.measured_step_ms = step_ms;
  // The median step stands for the run: its timeline is the one compared op by op.
  std::vector<std::size_t> order(steps);
  for (std::size_t k = 0; k < steps; ++k) order[k] = k;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return step_ms[a] < step_ms[b]; });
  report.measured = measuredStep(report.ops, outcomes, order[steps / 2]);
  report.measured_step_median_ms = report.measured.step_ms;
  report.measured_bubble = report.measured.bubble;
  report.error = report.predicted_step_ms > 0 ? report.measured_step_median_ms / report.predicted_step_ms - 1.0 : 0.0;

  report.grad_tolerance = request.grad_tolerance;
  for (const auto& outcome : outcomes) {
    RankComparison rank;
    rank.rank = outcome.rank;
    rank.first_layer = outcome.first_layer;
    rank.last_layer = outcome.last_layer;
    const RankStats& measured = report.measured.ranks[outcome.rank];
    const RankStats& predicted = report.predicted.ranks[outcome.rank];
    rank.measured_busy_ms = measured.busy_ms;
    rank.predicted_busy_ms = predicted.busy_ms;
    rank.measured_bubble = report.measured.step_ms > 0 ? measured.idle_ms / report.measured.step_ms : 0.0;
    rank.predicted_bubble = report.predicted.step_ms > 0 ? predicted.idle_ms / report.predicted.step_ms : 0.0;
    rank.measured_peak_bytes = outcome.peak_bytes;
    rank.predicted_peak_bytes = predicted.peak_activation_bytes;
    rank.grad_max_rel_diff = outcome.grad_max_rel_diff;
    rank.worst_parameter = outcome.worst_parameter;
    report.grad_max_rel_diff = std::max(report.grad_max_rel_diff, outcome.grad_max_rel_diff);
    if (!std::isnan(outcome.loss_pipeline)) {
      report.loss_pipeline = outcome.loss_pipeline;
      report.loss_reference = outcome.loss_reference;
    }
    report.ranks.push_back(rank);

    const auto& ops = report.ops.ranks[outcome.rank];
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const double predicted_ms = report.predicted.op_times[outcome.rank][i].end_ms - report.predicted.op_times[outcome.rank][i].start_ms;
      const double measured_ms = report.measured.op_times[outcome.rank][i].end_ms - report.measured.op_times[outcome.rank][i].start_ms;
      if (predicted_ms <= 0) continue;
      const double deviation = measured_ms / predicted_ms - 1.0;
      if (std::abs(deviation) >= std::abs(report.worst_op_deviation)) {
        report.worst_op_deviation = deviation;
        report.worst_op = "rank " + std::to_string(outcome.rank) + " " + describeOp(ops[i], 1);
      }
    }
  }
  const double loss_diff = std::abs(report.loss_pipeline - report.loss_reference) / std::max(std::abs(report.loss_reference), 1e-12);
  report.grad_pass = report.grad_max_rel_diff <= report.grad_tolerance && loss_diff <= report.grad_tolerance;
  return report;
}

namespace {

// Per rank, each op as [kind letter, microbatch, start ms, end ms] from the step's start.
nlohmann::json timelineJson(const Schedule& ops, const SimulationResult& result) {
  nlohmann::json ranks = nlohmann::json::array();
  for (std::size_t r = 0; r < ops.ranks.size(); ++r) {
    nlohmann::json rank = nlohmann::json::array();
    for (std::size_t i = 0; i < ops.ranks[r].size(); ++i) {
      rank.push_back({opKindLetter(ops.ranks[r][i].kind), ops.ranks[r][i].microbatch, result.op_times[r][i].start_ms,
                      result.op_times[r][i].end_ms});
    }
    ranks.push_back(std::move(rank));
  }
  return ranks;
}

}  // namespace

nlohmann::json validationToJson(const ValidationReport& report) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& rank : report.ranks) {
    ranks.push_back({{"rank", rank.rank},
                     {"first", rank.first_layer},
                     {"last", rank.last_layer},
                     {"busy_ms", rank.measured_busy_ms},
                     {"predicted_busy_ms", rank.predicted_busy_ms},
                     {"bubble", rank.measured_bubble},
                     {"predicted_bubble", rank.predicted_bubble},
                     {"peak_memory_bytes", rank.measured_peak_bytes},
                     {"predicted_peak_memory_bytes", rank.predicted_peak_bytes},
                     {"grad_max_rel_diff", rank.grad_max_rel_diff},
                     {"worst_parameter", rank.worst_parameter}});
  }
  return {{"format", "stagecut.validation/1"},
          {"schedule", report.schedule},
          {"stages", report.stages},
          {"microbatches", report.microbatches},
          {"measured_step_ms", report.measured_step_median_ms},
          {"measured_steps_ms", report.measured_step_ms},
          {"predicted_step_ms", report.predicted_step_ms},
          {"error", report.error},
          {"measured_bubble", report.measured_bubble},
          {"predicted_bubble", report.predicted_bubble},
          {"grad_max_rel_diff", report.grad_max_rel_diff},
          {"grad_tolerance", report.grad_tolerance},
          {"grad_check", report.grad_pass ? "pass" : "fail"},
          {"loss", report.loss_pipeline},
          {"reference_loss", report.loss_reference},
          {"worst_op", report.worst_op},
          {"worst_op_deviation", report.worst_op_deviation},
          {"link_latency_ms", report.link_latency_ms},
          {"link_bandwidth_bytes_per_s", report.link_bandwidth_bytes_per_s},
          {"ranks", std::move(ranks)},
          {"timeline", {{"predicted", timelineJson(report.ops, report.predicted)},
                        {"measured", timelineJson(report.ops, report.measured)}}}};
}

std::string validationTrace(const ValidationReport& report) {
  // The trace names each process after its schedule: two copies tell predicted from measured.
  Schedule predicted_ops = report.ops;
  predicted_ops.name = "predicted " + report.schedule;
  Schedule measured_ops = report.ops;
  measured_ops.name = "measured " + report.schedule;
  return renderChromeTrace({{&predicted_ops, &report.predicted}, {&measured_ops, &report.measured}});
}

}  // namespace stagecut
