#include "report/validation_view.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/json_document.h"
#include "core/json_fields.h"
#include "schedule/svg_gantt.h"

namespace stagecut {

namespace {

constexpr const char* kValidationFormat = "stagecut.validation/1";

OpKind opKindFromLetter(const nlohmann::json& letter, const std::string& where) {
  if (letter == "F") return OpKind::kForward;
  if (letter == "B") return OpKind::kBackward;
  if (letter == "W") return OpKind::kWeight;
  if (letter == "A") return OpKind::kAllReduce;
  throw Error(where + ": op kind " + describeJsonValue(letter) + " is not \"F\", \"B\", \"W\" or \"A\"");
}

// One timeline ("predicted" or "measured"): per rank [kind, microbatch, start_ms, end_ms].
void readTimeline(const nlohmann::json& ranks, const std::string& where, Schedule* ops,
                  SimulationResult* result) {
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
      const nlohmann::json& op = ranks[r][i];
      const std::string at = where + "[" + std::to_string(r) + "][" + std::to_string(i) + "]";
      if (!op.is_array() || op.size() != 4 || !op[1].is_number_integer() || !op[2].is_number() ||
          !op[3].is_number()) {
        throw Error(at + ": expected [kind, microbatch, start_ms, end_ms], found " +
                    describeJsonValue(op));
      }
      const double start = op[2].get<double>(), end = op[3].get<double>();
      if (!std::isfinite(start) || !std::isfinite(end) || end < start) {
        throw Error(at + ": start_ms and end_ms must be finite with end >= start");
      }
      PipelineOp pipeline_op;
      pipeline_op.kind = opKindFromLetter(op[0], at);
      pipeline_op.microbatch = op[1].get<int>();
      ops->splits_backward = ops->splits_backward || pipeline_op.kind == OpKind::kWeight;
      ops->ranks[r].push_back(pipeline_op);
      result->op_times[r].push_back({start, end});
      // An all-reduce is communication: the simulator counts it as idle compute, and so does the view.
      (pipeline_op.kind == OpKind::kAllReduce ? result->ranks[r].allreduce_ms : result->ranks[r].busy_ms) +=
          end - start;
      result->step_ms = std::max(result->step_ms, end);
    }
    busy_total += result->ranks[r].busy_ms;
  }
  for (RankStats& rank : result->ranks) rank.idle_ms = result->step_ms - rank.busy_ms;
  const double capacity = result->step_ms * static_cast<double>(ranks.size());
  result->bubble = capacity > 0 ? std::max(0.0, 1.0 - busy_total / capacity) : 0.0;
  result->stages = ops->stages = static_cast<int>(ranks.size());
}

}  // namespace

std::vector<int> ValidationView::layersPerStage() const {
  std::vector<int> counts;
  for (const ValidationRankView& rank : ranks) counts.push_back(rank.last - rank.first + 1);
  return counts;
}

ValidationView readValidationView(const nlohmann::json& document, const std::string& source,
                                  std::size_t layer_count) {
  const std::string format = documentFormat(document, source);
  if (format != kValidationFormat) {
    throw Error(source + ": is a " + format + " document, not " + kValidationFormat +
                "; write one with 'stagecut validate ... --json > FILE'");
  }
  const JsonFields fields(document, source);
  ValidationView view;
  view.source = source;
  view.schedule = fields.string("schedule");
  view.stages = fields.integer("stages", 1, 1 << 20);
  view.microbatches = fields.integer("microbatches", 1, 1 << 20);
  view.measured_step_ms = fields.nonNegative("measured_step_ms");
  view.predicted_step_ms = fields.nonNegative("predicted_step_ms");
  view.error = fields.has("error") ? fields.finite("error") : 0.0;
  view.grad_check = fields.optionalString("grad_check");
  view.grad_max_rel_diff = fields.optionalNonNegative("grad_max_rel_diff").value_or(0.0);

  view.data_parallel = fields.has("data_parallel") ? fields.integer("data_parallel", 1, 1 << 20) : 1;
  const nlohmann::json& ranks = fields.array("ranks");
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const JsonFields rank(ranks[r], source + ": rank " + std::to_string(r), "ranks[].");
    ValidationRankView rank_view;
    rank_view.first = rank.integer("first", 0, 1 << 30);
    rank_view.last = rank.integer("last", rank_view.first, 1 << 30);
    if (static_cast<std::size_t>(rank_view.last) >= layer_count) {
      throw Error(source + ": rank " + std::to_string(r) + " holds layers " +
                  std::to_string(rank_view.first) + "-" + std::to_string(rank_view.last) +
                  " but the profile has " + std::to_string(layer_count) +
                  " layers; was it validated on another profile?");
    }
    if (rank.has("peak_memory_bytes")) {
      rank_view.measured_peak_bytes = static_cast<std::int64_t>(rank.count("peak_memory_bytes"));
    }
    if (rank.has("predicted_peak_memory_bytes")) {
      rank_view.predicted_peak_bytes =
          static_cast<std::int64_t>(rank.count("predicted_peak_memory_bytes"));
    }
    view.ranks.push_back(rank_view);
  }
  // With data parallelism "ranks" holds every replica's (rank = replica x stages + stage); the
  // view keeps replica 0's, whose timeline the document draws.
  const std::size_t expected_ranks = static_cast<std::size_t>(view.stages) * static_cast<std::size_t>(view.data_parallel);
  if (view.ranks.size() != expected_ranks) {
    throw Error(source + ": field \"ranks\" lists " + std::to_string(view.ranks.size()) +
                " ranks but \"stages\" is " + std::to_string(view.stages) +
                (view.data_parallel > 1 ? " with " + std::to_string(view.data_parallel) + " replicas" : std::string()));
  }
  view.ranks.resize(static_cast<std::size_t>(view.stages));

  const JsonFields timeline = fields.object("timeline");
  Schedule ops;
  ops.stages = view.stages;
  ops.microbatches = view.microbatches;
  view.predicted_ops = ops;
  view.measured_ops = ops;
  readTimeline(timeline.array("predicted"), source + ": timeline.predicted", &view.predicted_ops,
               &view.predicted);
  readTimeline(timeline.array("measured"), source + ": timeline.measured", &view.measured_ops,
               &view.measured);
  for (const Schedule* timeline_ops : {&view.predicted_ops, &view.measured_ops}) {
    if (timeline_ops->stages != view.stages) {
      throw Error(source + ": the timeline has " + std::to_string(timeline_ops->stages) +
                  " ranks but \"stages\" is " + std::to_string(view.stages));
    }
  }
  const std::string name = scheduleDisplayName(view.schedule);
  view.predicted_ops.name = "Predicted " + name;
  view.measured_ops.name = "Measured " + name;
  view.predicted.schedule = view.predicted_ops.name;
  view.measured.schedule = view.measured_ops.name;
  view.predicted.microbatches = view.measured.microbatches = view.microbatches;
  return view;
}

}  // namespace stagecut
