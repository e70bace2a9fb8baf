#include "validation/validation_json.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "core/error.h"
#include "core/json_document.h"
#include "core/json_fields.h"
#include "core/rank_layout.h"
#include "core/units.h"
#include "schedule/schedule_kind.h"

namespace stagecut {

namespace {

using nlohmann::json;

constexpr int kMaxCount = 1 << 20;

// Per rank, each op as [kind letter, microbatch, start ms, end ms] from the step's start.
json timelineJson(const Schedule& ops, const SimulationResult& result) {
  json ranks = json::array();
  for (std::size_t r = 0; r < ops.ranks.size(); ++r) {
    json rank = json::array();
    for (std::size_t i = 0; i < ops.ranks[r].size(); ++i) {
      rank.push_back({opKindLetter(ops.ranks[r][i].kind), ops.ranks[r][i].microbatch, result.op_times[r][i].start_ms,
                      result.op_times[r][i].end_ms});
      // The op's local chunk, where a rank runs several (documents of one leave it out).
      if (ops.placement.chunked()) rank.back().push_back(ops.ranks[r][i].chunk);
    }
    ranks.push_back(std::move(rank));
  }
  return ranks;
}

// NaN (no loss reported) is written as null, and null read back as NaN.
json lossJson(double loss) { return std::isnan(loss) ? json(nullptr) : json(loss); }

double lossField(const JsonFields& fields, const char* key) {
  if (fields.has(key) && fields.json()[key].is_null()) return std::numeric_limits<double>::quiet_NaN();
  return fields.finite(key);
}

OpKind opKindFromLetter(const json& letter, const std::string& where) {
  if (letter == "F") return OpKind::kForward;
  if (letter == "B") return OpKind::kBackward;
  if (letter == "W") return OpKind::kWeight;
  if (letter == "A") return OpKind::kAllReduce;
  throw Error(where + ": op kind " + describeJsonValue(letter) + " is not \"F\", \"B\", \"W\" or \"A\"");
}

// One timeline: its op lists and what a simulation result says of them (busy, idle and
// all-reduce time per rank, step, bubble), rebuilt from the op times alone.
void readTimeline(const json& ranks, const std::string& where, Schedule* ops, SimulationResult* result) {
  if (!ranks.is_array() || ranks.empty()) {
    throw Error(where + ": must be a non-empty list with one list of ops per rank");
  }
  ops->ranks.assign(ranks.size(), {});
  result->op_times.assign(ranks.size(), {});
  result->ranks.assign(ranks.size(), {});
  result->step_ms = 0.0;
  double busy_total = 0.0;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    if (!ranks[r].is_array()) throw Error(where + "[" + std::to_string(r) + "]: must be a list of ops");
    for (std::size_t i = 0; i < ranks[r].size(); ++i) {
      const json& op = ranks[r][i];
      const std::string at = where + "[" + std::to_string(r) + "][" + std::to_string(i) + "]";
      const std::size_t entries = ops->placement.chunked() ? 5 : 4;
      if (!op.is_array() || op.size() != entries || !op[1].is_number_integer() || !op[2].is_number() ||
          !op[3].is_number() || (entries == 5 && !op[4].is_number_integer())) {
        throw Error(at + ": expected [kind, microbatch, start_ms, end_ms" + (entries == 5 ? ", chunk" : "") +
                    "], found " + describeJsonValue(op));
      }
      const double start = op[2].get<double>(), end = op[3].get<double>();
      if (!std::isfinite(start) || !std::isfinite(end) || end < start) {
        throw Error(at + ": start_ms and end_ms must be finite with end >= start");
      }
      const auto microbatch = op[1].get<std::int64_t>();
      if (microbatch < 0 || microbatch >= kMaxCount) {
        throw Error(at + ": microbatch " + std::to_string(microbatch) + " is out of range");
      }
      PipelineOp pipeline_op;
      pipeline_op.kind = opKindFromLetter(op[0], at);
      pipeline_op.microbatch = static_cast<int>(microbatch);
      if (entries == 5) {
        const auto chunk = op[4].get<std::int64_t>();
        if (chunk < 0 || chunk >= ops->placement.chunks_per_rank) {
          throw Error(at + ": chunk " + std::to_string(chunk) + " is out of range (the run has " +
                      std::to_string(ops->placement.chunks_per_rank) + " chunks per rank)");
        }
        pipeline_op.chunk = static_cast<int>(chunk);
      }
      ops->splits_backward = ops->splits_backward || pipeline_op.kind == OpKind::kWeight;
      ops->ranks[r].push_back(pipeline_op);
      result->op_times[r].push_back({start, end});
      // An all-reduce is communication: the simulator counts it as idle compute, and so does this.
      (pipeline_op.kind == OpKind::kAllReduce ? result->ranks[r].allreduce_ms : result->ranks[r].busy_ms) +=
          end - start;
      result->step_ms = std::max(result->step_ms, end);
    }
    busy_total += result->ranks[r].busy_ms;
  }
  for (RankStats& rank : result->ranks) rank.idle_ms = result->step_ms - rank.busy_ms;
  const double capacity = result->step_ms * static_cast<double>(ranks.size());
  result->bubble = capacity > 0 ? std::max(0.0, 1.0 - busy_total / capacity) : 0.0;
  ops->placement.ranks = static_cast<int>(ranks.size());
  result->placement = ops->placement;
}

// A timeline of the same run as `ops` (the predicted one): the same ops in the same order.
SimulationResult readTimelineOf(const Schedule& ops, const json& ranks, const std::string& where) {
  Schedule own = ops;
  SimulationResult result;
  readTimeline(ranks, where, &own, &result);
  if (own.ranks.size() != ops.ranks.size()) {
    throw Error(where + ": has " + std::to_string(own.ranks.size()) + " ranks but the predicted timeline has " +
                std::to_string(ops.ranks.size()));
  }
  for (std::size_t r = 0; r < ops.ranks.size(); ++r) {
    if (own.ranks[r] != ops.ranks[r]) {
      throw Error(where + "[" + std::to_string(r) + "]: the ops differ from the predicted timeline's; both runs follow "
                  "the same op lists");
    }
  }
  result.schedule = ops.name;
  result.microbatches = ops.microbatches;
  return result;
}

json opMediansJson(const RankComparison& rank) {
  return {{"F", {{"measured", rank.measured_forward_ms}, {"predicted", rank.predicted_forward_ms}}},
          {"B", {{"measured", rank.measured_backward_ms}, {"predicted", rank.predicted_backward_ms}}},
          {"W", {{"measured", rank.measured_weight_ms}, {"predicted", rank.predicted_weight_ms}}}};
}

void readOpMedians(const JsonFields& rank_fields, RankComparison* rank) {
  if (!rank_fields.has("op_median_ms")) return;
  const JsonFields medians = rank_fields.object("op_median_ms");
  const auto pair = [&](const char* kind, double* measured, double* predicted) {
    const JsonFields op = medians.object(kind);
    *measured = op.nonNegative("measured");
    *predicted = op.nonNegative("predicted");
  };
  pair("F", &rank->measured_forward_ms, &rank->predicted_forward_ms);
  pair("B", &rank->measured_backward_ms, &rank->predicted_backward_ms);
  pair("W", &rank->measured_weight_ms, &rank->predicted_weight_ms);
}

std::vector<double> readSteps(const JsonFields& fields, const char* key, const char* what = "step times in ms") {
  const json& steps = fields.array(key);
  std::vector<double> values;
  for (const json& step : steps) {
    if (!step.is_number() || !std::isfinite(step.get<double>()) || step.get<double>() < 0) {
      fields.fail(key, std::string("must list ") + what + " (finite, >= 0), found " + describeJsonValue(step));
    }
    values.push_back(step.get<double>());
  }
  return values;
}

// A rank's "chunks": `chunks` [first, last] layer ranges, the first one its "first" and "last".
std::vector<std::pair<int, int>> readChunkLayers(const JsonFields& fields, int chunks, const RankComparison& rank) {
  const json& list = fields.array("chunks");
  std::vector<std::pair<int, int>> layers;
  for (const json& range : list) {
    if (!range.is_array() || range.size() != 2 || !range[0].is_number_integer() || !range[1].is_number_integer() ||
        range[0].get<std::int64_t>() < 0 || range[1].get<std::int64_t>() < range[0].get<std::int64_t>() ||
        range[1].get<std::int64_t>() >= (1 << 30)) {
      fields.fail("chunks", "must list [first, last] layer ranges, found " + describeJsonValue(range));
    }
    layers.emplace_back(range[0].get<int>(), range[1].get<int>());
  }
  if (layers.size() != static_cast<std::size_t>(chunks) || layers.front() != std::make_pair(rank.first_layer, rank.last_layer)) {
    fields.fail("chunks", "must list the rank's " + std::to_string(chunks) + " chunks, the first of them \"first\"-\"last\"");
  }
  return layers;
}

RankComparison readRank(const json& item, const std::string& where, int index, int stages, int replicas, int chunks) {
  const JsonFields fields(item, where, "ranks[].");
  RankComparison rank;
  rank.rank = fields.integer("rank", 0, kMaxCount);
  if (rank.rank != index) fields.fail("rank", "must be " + std::to_string(index) + " (ranks are listed in order)");
  rank.first_layer = fields.integer("first", 0, 1 << 30);
  rank.last_layer = fields.integer("last", rank.first_layer, 1 << 30);
  if (chunks > 1) rank.chunk_layers = readChunkLayers(fields, chunks, rank);
  rank.measured_busy_ms = fields.nonNegative("busy_ms");
  rank.predicted_busy_ms = fields.nonNegative("predicted_busy_ms");
  rank.measured_bubble = fields.nonNegative("bubble");
  rank.predicted_bubble = fields.nonNegative("predicted_bubble");
  rank.measured_peak_bytes = static_cast<std::int64_t>(fields.count("peak_memory_bytes"));
  rank.predicted_peak_bytes = fields.count("predicted_peak_memory_bytes");
  rank.grad_max_rel_diff = fields.nonNegative("grad_max_rel_diff");
  rank.worst_parameter = fields.string("worst_parameter");
  readOpMedians(fields, &rank);
  if (fields.has("memory")) {
    const JsonFields memory = fields.object("memory");
    rank.measured_memory_bytes = readSteps(memory, "measured", "bytes");
    rank.predicted_memory_bytes = readSteps(memory, "predicted", "bytes");
    if (rank.measured_memory_bytes.size() != rank.predicted_memory_bytes.size()) {
      memory.fail("measured", "lists " + std::to_string(rank.measured_memory_bytes.size()) + " points and \"predicted\" " +
                                  std::to_string(rank.predicted_memory_bytes.size()) +
                                  "; both list one per op and one for the optimizer step");
    }
    if (memory.has("predicted_parts")) rank.predicted_peak_parts = memoryPartsFromJson(memory.object("predicted_parts"));
    rank.predicted_peak_at = memory.optionalString("predicted_peak_at");
  }
  const RankLayout layout{index, stages * replicas, replicas};
  rank.stage = layout.pipelineRank();
  rank.replica = layout.replica();
  if (replicas > 1) {
    if (fields.integer("stage", 0, stages - 1) != rank.stage || fields.integer("replica", 0, replicas - 1) != rank.replica) {
      fields.fail("stage", "and \"replica\" must place rank " + std::to_string(index) + " at stage " +
                               std::to_string(rank.stage) + " of replica " + std::to_string(rank.replica) +
                               " (rank = replica x stages + stage)");
    }
    rank.measured_allreduce_ms = fields.nonNegative("allreduce_ms");
  }
  return rank;
}

RecomputeComparison readRecompute(const JsonFields& fields, const Schedule& ops, std::size_t rank_count,
                                  const std::string& source) {
  RecomputeComparison recompute;
  const std::string mode = fields.string("mode");
  if (mode != "full") fields.fail("mode", "must be \"full\" (the one mode validate runs), got \"" + mode + "\"");
  recompute.measured_step_median_ms = fields.nonNegative("measured_step_ms");
  recompute.measured_step_ms = readSteps(fields, "measured_steps_ms");
  recompute.predicted_step_ms = fields.nonNegative("predicted_step_ms");
  recompute.error = fields.finite("error");
  recompute.grad_max_rel_diff = fields.nonNegative("grad_max_rel_diff");
  const json& ranks = fields.array("ranks");
  if (ranks.size() != rank_count) {
    fields.fail("ranks", "lists " + std::to_string(ranks.size()) + " ranks, the run has " + std::to_string(rank_count));
  }
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const JsonFields rank(ranks[r], source + ": recompute rank " + std::to_string(r), "recompute.ranks[].");
    if (rank.integer("rank", 0, kMaxCount) != static_cast<int>(r)) {
      rank.fail("rank", "must be " + std::to_string(r) + " (ranks are listed in order)");
    }
    recompute.measured_busy_ms.push_back(rank.nonNegative("busy_ms"));
    recompute.predicted_busy_ms.push_back(rank.nonNegative("predicted_busy_ms"));
    recompute.measured_peak_bytes.push_back(static_cast<std::int64_t>(rank.count("peak_memory_bytes")));
    recompute.predicted_peak_bytes.push_back(rank.count("predicted_peak_memory_bytes"));
  }
  const JsonFields timeline = fields.object("timeline");
  recompute.predicted = readTimelineOf(ops, timeline.array("predicted"), source + ": recompute.timeline.predicted");
  recompute.measured = readTimelineOf(ops, timeline.array("measured"), source + ": recompute.timeline.measured");
  return recompute;
}

// validate stops a run at its longest --timeout, a day, so no step it measured is longer.
constexpr double kLongestStepMs = 86400.0 * 1000.0;

// validate writes the median step, the error and the measured timeline from one measurement; a
// document where they disagree, or with a step no run could take, was not written by it.
void checkMeasuredStep(const ValidationReport& report, const std::string& source) {
  const auto fail = [&](const std::string& why) {
    throw Error(source + ": " + why + "; write the document again with 'stagecut validate ... --json'");
  };
  const double median = report.measured_step_median_ms;
  for (double step : report.measured_step_ms) {
    if (step > kLongestStepMs) {
      fail("field \"measured_steps_ms\" holds a step of " + formatMs(step) +
           " ms, longer than validate's longest --timeout (a day)");
    }
  }
  if (median > kLongestStepMs) {
    fail("field \"measured_step_ms\" is " + formatMs(median) + " ms, longer than validate's longest --timeout (a day)");
  }
  if (!report.measured_step_ms.empty()) {
    const auto [low, high] = std::minmax_element(report.measured_step_ms.begin(), report.measured_step_ms.end());
    if (median < *low || median > *high) {
      fail("field \"measured_step_ms\" is " + formatMs(median) + " ms, outside its \"measured_steps_ms\" (" +
           formatMs(*low) + " to " + formatMs(*high) + " ms)");
    }
  }
  const double error = report.predicted_step_ms > 0 ? median / report.predicted_step_ms - 1.0 : 0.0;
  if (std::fabs(report.error - error) > 1e-6 * std::max(1.0, std::fabs(error))) {
    fail("field \"error\" is " + formatSignedPercent(report.error) +
         ", but measured_step_ms / predicted_step_ms - 1 is " + formatSignedPercent(error));
  }
  // No op ends after the step it was measured in (with replicas the step also waits on the
  // others' all-reduce, so the first replica's ops may end before it).
  if (report.measured.step_ms > median + 1e-6 * std::max(1.0, median)) {
    fail("the measured timeline ends at " + formatMs(report.measured.step_ms) + " ms, after its \"measured_step_ms\" of " +
         formatMs(median) + " ms");
  }
}

}  // namespace

namespace {

json rankToJson(const RankComparison& rank, int replicas) {
  json item = {{"rank", rank.rank},
               {"first", rank.first_layer},
               {"last", rank.last_layer},
               {"busy_ms", rank.measured_busy_ms},
               {"predicted_busy_ms", rank.predicted_busy_ms},
               {"bubble", rank.measured_bubble},
               {"predicted_bubble", rank.predicted_bubble},
               {"peak_memory_bytes", rank.measured_peak_bytes},
               {"predicted_peak_memory_bytes", rank.predicted_peak_bytes},
               {"grad_max_rel_diff", rank.grad_max_rel_diff},
               {"worst_parameter", rank.worst_parameter},
               {"op_median_ms", opMediansJson(rank)}};
  if (!rank.chunk_layers.empty()) item["chunks"] = rank.chunk_layers;
  if (!rank.measured_memory_bytes.empty() || !rank.predicted_memory_bytes.empty()) {
    json memory = {{"measured", rank.measured_memory_bytes}, {"predicted", rank.predicted_memory_bytes}};
    if (rank.predicted_peak_parts) memory["predicted_parts"] = memoryPartsToJson(*rank.predicted_peak_parts);
    if (!rank.predicted_peak_at.empty()) memory["predicted_peak_at"] = rank.predicted_peak_at;
    item["memory"] = std::move(memory);
  }
  if (replicas > 1) {
    item["stage"] = rank.stage;
    item["replica"] = rank.replica;
    item["allreduce_ms"] = rank.measured_allreduce_ms;
  }
  return item;
}

json recomputeToJson(const ValidationReport& report) {
  const RecomputeComparison& recompute = *report.recompute;
  json ranks = json::array();
  for (std::size_t i = 0; i < report.ranks.size(); ++i) {
    ranks.push_back({{"rank", report.ranks[i].rank},
                     {"busy_ms", recompute.measured_busy_ms[i]},
                     {"predicted_busy_ms", recompute.predicted_busy_ms[i]},
                     {"peak_memory_bytes", recompute.measured_peak_bytes[i]},
                     {"predicted_peak_memory_bytes", recompute.predicted_peak_bytes[i]}});
  }
  return {{"mode", "full"},
          {"measured_step_ms", recompute.measured_step_median_ms},
          {"measured_steps_ms", recompute.measured_step_ms},
          {"predicted_step_ms", recompute.predicted_step_ms},
          {"error", recompute.error},
          {"grad_max_rel_diff", recompute.grad_max_rel_diff},
          {"ranks", std::move(ranks)},
          {"timeline",
           {{"predicted", timelineJson(report.ops, recompute.predicted)}, {"measured", timelineJson(report.ops, recompute.measured)}}}};
}

// Optional fields (stagecut.validation/1 readers ignore what they do not know).
void addOptionalFields(const ValidationReport& report, json* document) {
  if (report.ops.placement.chunked()) (*document)["chunks_per_rank"] = report.ops.placement.chunks_per_rank;
  if (!report.profile_fingerprint.empty()) (*document)["profile_fingerprint"] = report.profile_fingerprint;
  if (!report.optimizer.empty()) (*document)["optimizer"] = report.optimizer;
  if (!report.memory_fields_missing.empty()) (*document)["memory_fields_missing"] = report.memory_fields_missing;
  if (report.replicas > 1) {
    (*document)["data_parallel"] = report.replicas;
    (*document)["replica_link_latency_ms"] = report.replica_link_latency_ms;
    (*document)["replica_link_bandwidth_bytes_per_s"] = report.replica_link_bandwidth_bytes_per_s;
    json replicas = json::array();
    for (const auto& replica : report.measured_replicas) replicas.push_back(timelineJson(report.ops, replica));
    (*document)["timeline"]["measured_replicas"] = std::move(replicas);
  }
  if (report.environment) (*document)["environment"] = runEnvironmentToJson(*report.environment);
  if (report.recompute) (*document)["recompute"] = recomputeToJson(report);
}

// The run's figures: steps, bubble, gradients, loss, worst op and links.
void readRunFigures(const JsonFields& fields, ValidationReport* report) {
  report->measured_step_median_ms = fields.nonNegative("measured_step_ms");
  report->measured_step_ms = readSteps(fields, "measured_steps_ms");
  report->predicted_step_ms = fields.nonNegative("predicted_step_ms");
  report->error = fields.finite("error");
  report->measured_bubble = fields.nonNegative("measured_bubble");
  report->predicted_bubble = fields.nonNegative("predicted_bubble");
  report->grad_max_rel_diff = fields.nonNegative("grad_max_rel_diff");
  report->grad_tolerance = fields.nonNegative("grad_tolerance");
  const std::string grad_check = fields.string("grad_check");
  if (grad_check != "pass" && grad_check != "fail") {
    fields.fail("grad_check", "must be \"pass\" or \"fail\", got \"" + grad_check + "\"");
  }
  report->grad_pass = grad_check == "pass";
  report->loss_pipeline = lossField(fields, "loss");
  report->loss_reference = lossField(fields, "reference_loss");
  report->worst_op = fields.string("worst_op");
  report->worst_op_deviation = fields.finite("worst_op_deviation");
  report->link_latency_ms = fields.nonNegative("link_latency_ms");
  report->link_bandwidth_bytes_per_s = fields.nonNegative("link_bandwidth_bytes_per_s");
  if (fields.has("link_bandwidth_measurable")) report->link_bandwidth_measurable = fields.boolean("link_bandwidth_measurable");
  report->replicas = fields.optionalInteger("data_parallel", 1, kMaxCount, 1);
  if (report->replicas > 1) {
    report->replica_link_latency_ms = fields.nonNegative("replica_link_latency_ms");
    report->replica_link_bandwidth_bytes_per_s = fields.nonNegative("replica_link_bandwidth_bytes_per_s");
  }
}

// The placement (interleaved 1F1B and the V runs: v chunks per rank, placed as the schedule
// places them) and every rank's figures; with data parallelism "ranks" holds every replica's.
void readPlacementAndRanks(const JsonFields& fields, const std::string& source, ValidationReport* report) {
  const int chunks = fields.optionalInteger("chunks_per_rank", 1, kMaxCount, 1);
  report->ops.placement = Placement::loop(report->stages, chunks);
  if (chunks > 1) {
    const ScheduleKind kind = parseScheduleName(report->schedule);
    report->ops.placement.style = chunkStyle(kind);
    if (!runsPlacement(kind, report->ops.placement)) {
      fields.fail("chunks_per_rank", "is " + std::to_string(chunks) + ", which schedule " + report->schedule + " does not run");
    }
  }
  const json& ranks = fields.array("ranks");
  const std::size_t expected = static_cast<std::size_t>(report->stages) * static_cast<std::size_t>(report->replicas);
  if (ranks.size() != expected) {
    throw Error(source + ": field \"ranks\" lists " + std::to_string(ranks.size()) + " ranks but \"stages\" is " +
                std::to_string(report->stages) +
                (report->replicas > 1 ? " with " + std::to_string(report->replicas) + " replicas" : std::string()));
  }
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    report->ranks.push_back(readRank(ranks[r], source + ": rank " + std::to_string(r), static_cast<int>(r), report->stages,
                                     report->replicas, chunks));
  }
}

// The predicted timeline, which fixes the op lists, then every measured one held to them.
void readTimelines(const JsonFields& fields, const std::string& source, ValidationReport* report) {
  const JsonFields timeline = fields.object("timeline");
  report->ops.name = report->schedule;
  report->ops.microbatches = report->microbatches;
  readTimeline(timeline.array("predicted"), source + ": timeline.predicted", &report->ops, &report->predicted);
  if (report->ops.placement.ranks != report->stages) {
    throw Error(source + ": the timeline has " + std::to_string(report->ops.placement.ranks) + " ranks but \"stages\" is " +
                std::to_string(report->stages));
  }
  report->predicted.schedule = report->schedule;
  report->predicted.microbatches = report->microbatches;
  report->measured = readTimelineOf(report->ops, timeline.array("measured"), source + ": timeline.measured");
  if (report->replicas <= 1) {
    report->measured_replicas = {report->measured};
    return;
  }
  const json& replicas = timeline.array("measured_replicas");
  if (replicas.size() != static_cast<std::size_t>(report->replicas)) {
    timeline.fail("measured_replicas", "lists " + std::to_string(replicas.size()) + " timelines, one per replica (" +
                                           std::to_string(report->replicas) + ") expected");
  }
  for (std::size_t d = 0; d < replicas.size(); ++d) {
    report->measured_replicas.push_back(
        readTimelineOf(report->ops, replicas[d], source + ": timeline.measured_replicas[" + std::to_string(d) + "]"));
  }
}

}  // namespace

json validationToJson(const ValidationReport& report) {
  json ranks = json::array();
  for (const auto& rank : report.ranks) ranks.push_back(rankToJson(rank, report.replicas));
  json document = {{"format", kValidationFormat},
                   {"schedule", report.schedule},
                   {"stages", report.stages},
                   {"microbatches", report.microbatches},
                   {"microbatch_size", report.microbatch_size},
                   {"measured_step_ms", report.measured_step_median_ms},
                   {"measured_steps_ms", report.measured_step_ms},
                   {"predicted_step_ms", report.predicted_step_ms},
                   {"error", report.error},
                   {"measured_bubble", report.measured_bubble},
                   {"predicted_bubble", report.predicted_bubble},
                   {"grad_max_rel_diff", report.grad_max_rel_diff},
                   {"grad_tolerance", report.grad_tolerance},
                   {"grad_check", report.grad_pass ? "pass" : "fail"},
                   {"loss", lossJson(report.loss_pipeline)},
                   {"reference_loss", lossJson(report.loss_reference)},
                   {"worst_op", report.worst_op},
                   {"worst_op_deviation", report.worst_op_deviation},
                   {"link_latency_ms", report.link_latency_ms},
                   {"link_bandwidth_bytes_per_s", report.link_bandwidth_bytes_per_s},
                   {"link_bandwidth_measurable", report.link_bandwidth_measurable},
                   {"ranks", std::move(ranks)},
                   {"timeline", {{"predicted", timelineJson(report.ops, report.predicted)},
                                 {"measured", timelineJson(report.ops, report.measured)}}}};
  addOptionalFields(report, &document);
  return document;
}

ValidationReport validationFromJson(const json& document, const std::string& source) {
  requireDocumentFormat(document, source, kValidationFormat, "stagecut validate ... --json > FILE");
  const JsonFields fields(document, source);
  ValidationReport report;
  report.profile_fingerprint = fields.optionalString("profile_fingerprint");
  report.schedule = fields.string("schedule");
  report.optimizer = fields.optionalString("optimizer");
  if (fields.has("memory_fields_missing")) {
    for (const json& name : fields.array("memory_fields_missing")) {
      if (!name.is_string()) fields.fail("memory_fields_missing", "must list field names, found " + describeJsonValue(name));
      report.memory_fields_missing.push_back(name.get<std::string>());
    }
  }
  report.stages = fields.integer("stages", 1, kMaxCount);
  report.microbatches = fields.integer("microbatches", 1, kMaxCount);
  report.microbatch_size = fields.optionalInteger("microbatch_size", 0, kMaxCount, 0);
  readRunFigures(fields, &report);
  readPlacementAndRanks(fields, source, &report);
  readTimelines(fields, source, &report);
  checkMeasuredStep(report, source);
  if (fields.has("environment")) report.environment = runEnvironmentFromJson(document.at("environment"), source);
  if (fields.has("recompute")) {
    report.recompute = readRecompute(fields.object("recompute"), report.ops, report.ranks.size(), source);
  }
  return report;
}

}  // namespace stagecut
