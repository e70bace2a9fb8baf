#include "runtime/build_validation_report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "core/rank_layout.h"

#include "core/sample_stats.h"
#include "prediction/pipeline_prediction.h"
#include "schedule/generators.h"

namespace stagecut {

namespace {

const std::vector<std::vector<OpRecord>>& stepsOf(const RankOutcome& outcome, bool recompute) {
  return recompute ? outcome.recompute_steps : outcome.steps;
}

// Measured step `step` of replica `replica` as the simulator would have written it: op times in ms
// from the step's start, the step spanning every rank of every replica.
SimulationResult measuredStep(const Schedule& schedule, const std::vector<RankOutcome>& outcomes, bool recompute,
                              std::size_t step, int replica) {
  std::int64_t start = INT64_MAX, end = INT64_MIN;
  for (const auto& outcome : outcomes) {
    for (const auto& record : stepsOf(outcome, recompute)[step]) {
      start = std::min(start, record.start_ns);
      end = std::max(end, record.end_ns);
    }
  }
  SimulationResult result;
  result.schedule = "measured " + schedule.name;
  result.placement = schedule.placement;
  result.microbatches = schedule.microbatches;
  result.step_ms = static_cast<double>(end - start) / 1e6;
  double busy_total = 0.0;
  for (int stage = 0; stage < schedule.placement.ranks; ++stage) {
    const RankOutcome& outcome = outcomes.at(static_cast<std::size_t>(RankLayout::globalRank(replica, stage, schedule.placement.ranks)));
    RankStats stats;
    std::vector<OpTiming> times;
    for (const auto& record : stepsOf(outcome, recompute)[step]) {
      times.push_back({static_cast<double>(record.start_ns - start) / 1e6, static_cast<double>(record.end_ns - start) / 1e6});
      const double ms = static_cast<double>(record.end_ns - record.start_ns) / 1e6;
      // As the simulator counts them: an all-reduce is communication, not busy compute.
      (record.op.kind == OpKind::kAllReduce ? stats.allreduce_ms : stats.busy_ms) += ms;
    }
    stats.idle_ms = result.step_ms - stats.busy_ms;
    busy_total += stats.busy_ms;
    result.ranks.push_back(stats);
    result.op_times.push_back(std::move(times));
  }
  result.bubble = result.step_ms > 0 ? 1.0 - busy_total / (result.step_ms * schedule.placement.ranks) : 0.0;
  return result;
}

// Every measured step's time, and the index of the median one (it stands for the run).
std::size_t medianStep(const Schedule& schedule, const std::vector<RankOutcome>& outcomes, bool recompute,
                       std::vector<double>& step_ms) {
  const std::size_t steps = stepsOf(outcomes.front(), recompute).size();
  step_ms.clear();
  for (std::size_t k = 0; k < steps; ++k) step_ms.push_back(measuredStep(schedule, outcomes, recompute, k, 0).step_ms);
  std::vector<std::size_t> order(steps);
  for (std::size_t k = 0; k < steps; ++k) order[k] = k;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return step_ms[a] < step_ms[b]; });
  return order[steps / 2];
}

}  // namespace

PredictionOptions validationPredictionOptions(const ValidateRequest& request, const BoundaryLink& link,
                                              const BoundaryLink& replica_link) {
  PredictionOptions prediction;
  prediction.schedule = parseScheduleName(request.schedule);
  prediction.microbatches = request.microbatches;
  prediction.data_parallel = request.data_parallel;
  prediction.link = link;
  prediction.dp_link = replica_link;
  prediction.optimizer = optimizerMemory(request.optimizer);
  return prediction;
}

PipelinePrediction predictValidationSteps(const ValidateRequest& request, const Profile& profile,
                                          const Partition& partition, const PredictionOptions& options) {
  Partition plain = partition;
  for (StageCost& stage : plain.stages) stage.recompute.reset();
  return predictPipeline(profile, plain, options, request.partition_path);
}

namespace {

// The links the ranks measured, as medians over the ranks: between stages, and between replicas.
struct MeasuredLinks {
  BoundaryLink pipeline;
  BoundaryLink replicas;
};

MeasuredLinks measureLinks(const std::vector<RankOutcome>& outcomes, ValidationReport* report) {
  std::vector<double> latencies, bandwidths, replica_latencies, replica_bandwidths;
  for (const auto& outcome : outcomes) {
    if (outcome.has_link) {
      latencies.push_back(outcome.link_latency_ms);
      // An unmeasurable link charges latency only: its bandwidth is above what the clock sees.
      if (outcome.link_bandwidth_measurable) bandwidths.push_back(outcome.link_bandwidth_bytes_per_s);
      else report->link_bandwidth_measurable = false;
    }
    if (outcome.replica_bandwidth_bytes_per_s > 0) {
      replica_latencies.push_back(outcome.replica_latency_ms);
      replica_bandwidths.push_back(outcome.replica_bandwidth_bytes_per_s);
    }
  }
  MeasuredLinks links;
  report->link_latency_ms = links.pipeline.latency_ms = medianOf(latencies);
  report->link_bandwidth_bytes_per_s = links.pipeline.bandwidth_bytes_per_s =
      report->link_bandwidth_measurable ? medianOf(bandwidths) : 0.0;
  report->replica_link_latency_ms = links.replicas.latency_ms = medianOf(replica_latencies);
  report->replica_link_bandwidth_bytes_per_s = links.replicas.bandwidth_bytes_per_s = medianOf(replica_bandwidths);
  return links;
}

// The rank's predicted memory timeline beside the one it measured in the median step.
void compareMemory(const RankOutcome& outcome, const ValidationReport& report, const RankMemory& memory,
                   std::size_t median_step, RankComparison* rank) {
  rank->measured_peak_bytes = outcome.peak_bytes;
  rank->predicted_peak_bytes = static_cast<std::uint64_t>(std::llround(memory.peak_bytes));
  rank->predicted_memory_bytes = memory.op_peak_bytes;
  rank->predicted_memory_bytes.push_back(memory.optimizer_step_bytes);
  rank->predicted_peak_parts = memory.peak_parts;
  const auto& rank_ops = report.ops.ranks[static_cast<std::size_t>(outcome.stage)];
  rank->predicted_peak_at = memory.peak_op < static_cast<int>(rank_ops.size())
                                ? describeOp(rank_ops[static_cast<std::size_t>(memory.peak_op)], report.ops.placement)
                                : "the optimizer step";
  for (const OpRecord& record : outcome.steps.at(median_step)) {
    rank->measured_memory_bytes.push_back(static_cast<double>(record.peak_bytes));
  }
  rank->measured_memory_bytes.push_back(static_cast<double>(outcome.optimizer_step_peak_bytes.at(median_step)));
}

// One pass over the rank's ops: the medians of each kind, measured and predicted, and the op
// furthest from its prediction over every rank so far.
void compareOps(const RankOutcome& outcome, const SimulationResult& measured_replica, ValidationReport* report,
                RankComparison* rank) {
  const auto& ops = report->ops.ranks[static_cast<std::size_t>(outcome.stage)];
  std::map<OpKind, std::pair<std::vector<double>, std::vector<double>>> by_kind;  // measured, predicted
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const OpTiming& predicted_op = report->predicted.op_times[static_cast<std::size_t>(outcome.stage)][i];
    const OpTiming& measured_op = measured_replica.op_times[static_cast<std::size_t>(outcome.stage)][i];
    const double predicted_ms = predicted_op.end_ms - predicted_op.start_ms;
    const double measured_ms = measured_op.end_ms - measured_op.start_ms;
    by_kind[ops[i].kind].first.push_back(measured_ms);
    by_kind[ops[i].kind].second.push_back(predicted_ms);
    if (predicted_ms <= 0) continue;
    const double deviation = measured_ms / predicted_ms - 1.0;
    if (std::abs(deviation) >= std::abs(report->worst_op_deviation)) {
      report->worst_op_deviation = deviation;
      report->worst_op = "rank " + std::to_string(outcome.rank) + " " + describeOp(ops[i], report->ops.placement);
    }
  }
  const auto medians = [&](OpKind kind, double& measured_ms, double& predicted_ms) {
    const auto found = by_kind.find(kind);
    if (found == by_kind.end()) return;
    measured_ms = summarizeSamples(found->second.first).median;
    predicted_ms = summarizeSamples(found->second.second).median;
  };
  medians(OpKind::kForward, rank->measured_forward_ms, rank->predicted_forward_ms);
  medians(OpKind::kBackward, rank->measured_backward_ms, rank->predicted_backward_ms);
  medians(OpKind::kWeight, rank->measured_weight_ms, rank->predicted_weight_ms);
}

// Each rank held to its prediction: busy time, bubble, memory, gradients and op times.
RankComparison compareRank(const RankOutcome& outcome, const PipelinePrediction& prediction, std::size_t median_step,
                           ValidationReport* report) {
  RankComparison rank;
  rank.rank = outcome.rank;
  rank.stage = outcome.stage;
  rank.replica = outcome.replica;
  rank.first_layer = outcome.first_layer;
  rank.last_layer = outcome.last_layer;
  if (outcome.chunk_layers.size() > 1) rank.chunk_layers = outcome.chunk_layers;
  const SimulationResult& measured_replica = report->measured_replicas.at(static_cast<std::size_t>(outcome.replica));
  const RankStats& measured = measured_replica.ranks[static_cast<std::size_t>(outcome.stage)];
  const RankStats& predicted = report->predicted.ranks[static_cast<std::size_t>(outcome.stage)];
  rank.measured_busy_ms = measured.busy_ms;
  rank.measured_allreduce_ms = measured.allreduce_ms;
  rank.predicted_busy_ms = predicted.busy_ms;
  rank.measured_bubble = measured_replica.step_ms > 0 ? measured.idle_ms / measured_replica.step_ms : 0.0;
  rank.predicted_bubble = report->predicted.step_ms > 0 ? predicted.idle_ms / report->predicted.step_ms : 0.0;
  compareMemory(outcome, *report, prediction.memory.ranks.at(static_cast<std::size_t>(outcome.stage)), median_step,
                &rank);
  rank.grad_max_rel_diff = outcome.grad_max_rel_diff;
  rank.worst_parameter = outcome.worst_parameter;
  compareOps(outcome, measured_replica, report, &rank);
  return rank;
}

double relativeLossDifference(double pipelined, double reference) {
  return std::abs(pipelined - reference) / std::max(std::abs(reference), 1e-12);
}

// The same split with every stage checkpointed, predicted as any recomputing split is, beside
// the steps the ranks ran with recomputation.
RecomputeComparison compareRecompute(const ValidateRequest& request, const Profile& profile, const Partition& partition,
                                     const PredictionOptions& prediction, const std::vector<RankOutcome>& outcomes,
                                     const ValidationReport& report, double* loss) {
  RecomputeComparison recompute;
  Partition checkpointed = partition;
  for (StageCost& stage : checkpointed.stages) stage.recompute = "full";
  const PipelinePrediction recomputed = predictPipeline(profile, checkpointed, prediction, request.partition_path);
  recompute.predicted = recomputed.simulated;
  recompute.predicted_step_ms = recompute.predicted.step_ms;
  const std::size_t median = medianStep(report.ops, outcomes, true, recompute.measured_step_ms);
  std::vector<SimulationResult> replicas;
  for (int d = 0; d < report.replicas; ++d) replicas.push_back(measuredStep(report.ops, outcomes, true, median, d));
  recompute.measured = replicas.front();
  recompute.measured_step_median_ms = recompute.measured.step_ms;
  recompute.error = recompute.predicted_step_ms > 0 ? recompute.measured_step_median_ms / recompute.predicted_step_ms - 1.0 : 0.0;
  std::vector<double> losses;
  for (const auto& outcome : outcomes) {
    const std::size_t s = static_cast<std::size_t>(outcome.stage);
    recompute.measured_peak_bytes.push_back(outcome.recompute_peak_bytes);
    recompute.predicted_peak_bytes.push_back(static_cast<std::uint64_t>(std::llround(recomputed.memory.ranks.at(s).peak_bytes)));
    recompute.measured_busy_ms.push_back(replicas.at(static_cast<std::size_t>(outcome.replica)).ranks[s].busy_ms);
    recompute.predicted_busy_ms.push_back(recompute.predicted.ranks[s].busy_ms);
    recompute.grad_max_rel_diff = std::max(recompute.grad_max_rel_diff, outcome.recompute_grad_max_rel_diff);
    if (!std::isnan(outcome.recompute_loss_pipeline)) losses.push_back(outcome.recompute_loss_pipeline);
  }
  *loss = 0.0;
  for (double value : losses) *loss += value / static_cast<double>(losses.size());
  return recompute;
}

}  // namespace

ValidationReport buildValidationReport(const ValidateRequest& request, const Profile& profile,
                                       const Partition& partition, const std::vector<RankOutcome>& outcomes) {
  ValidationReport report;
  report.schedule = request.schedule;
  report.optimizer = request.optimizer;
  report.memory_fields_missing = missingMemoryFields(profile);
  report.stages = partition.rankPlacement().ranks;
  report.microbatches = request.microbatches;
  report.microbatch_size = profile.run.microbatch_size;
  report.replicas = request.data_parallel;
  std::vector<RankEnvironment> environments;
  for (const auto& outcome : outcomes) environments.push_back(outcome.environment);
  report.environment =
      assessEnvironment(profileReferenceKernelMs(profile), profile.device.threads, environments, {}, profile.device.kind);
  const MeasuredLinks links = measureLinks(outcomes, &report);

  const PredictionOptions prediction = validationPredictionOptions(request, links.pipeline, links.replicas);
  const PipelinePrediction plain_prediction = predictValidationSteps(request, profile, partition, prediction);
  report.ops = plain_prediction.schedule;
  report.predicted = plain_prediction.simulated;
  report.predicted_step_ms = report.predicted.step_ms;
  report.predicted_bubble = report.predicted.bubble;
  const std::size_t median_step = medianStep(report.ops, outcomes, false, report.measured_step_ms);
  assessStepSpread(*report.environment, report.measured_step_ms);
  for (int d = 0; d < report.replicas; ++d) {
    report.measured_replicas.push_back(measuredStep(report.ops, outcomes, false, median_step, d));
  }
  report.measured = report.measured_replicas.front();
  report.measured_step_median_ms = report.measured.step_ms;
  report.measured_bubble = report.measured.bubble;
  report.error = report.predicted_step_ms > 0 ? report.measured_step_median_ms / report.predicted_step_ms - 1.0 : 0.0;

  report.grad_tolerance = request.grad_tolerance;
  std::vector<double> losses;
  for (const auto& outcome : outcomes) {
    report.ranks.push_back(compareRank(outcome, plain_prediction, median_step, &report));
    report.grad_max_rel_diff = std::max(report.grad_max_rel_diff, outcome.grad_max_rel_diff);
    if (!std::isnan(outcome.loss_pipeline)) {
      losses.push_back(outcome.loss_pipeline);
      report.loss_reference = outcome.loss_reference;
    }
  }
  // Each replica's loss is the mean over its shard; the full batch's is their mean.
  for (double value : losses) report.loss_pipeline += value / static_cast<double>(losses.size());
  report.grad_pass = report.grad_max_rel_diff <= report.grad_tolerance &&
                     relativeLossDifference(report.loss_pipeline, report.loss_reference) <= report.grad_tolerance;
  if (request.recompute == "full") {
    double recompute_loss = 0.0;
    RecomputeComparison recompute =
        compareRecompute(request, profile, partition, prediction, outcomes, report, &recompute_loss);
    report.grad_pass = report.grad_pass && recompute.grad_max_rel_diff <= report.grad_tolerance &&
                       relativeLossDifference(recompute_loss, report.loss_reference) <= report.grad_tolerance;
    report.recompute = std::move(recompute);
  }
  return report;
}

}  // namespace stagecut
