#include "prediction/simulation_json.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/json_document.h"
#include "core/json_fields.h"

namespace stagecut {

namespace {

using nlohmann::json;

json scheduleToJson(const SimulatedScheduleFigures& figures, bool unit_costs) {
  json entry = {{"schedule", figures.schedule},
                {"chunks", figures.placement.chunks_per_rank},
                {"step_time", figures.step_ms},
                {"bubble", figures.bubble}};
  if (figures.closed_form_bubble) entry["closed_form_bubble"] = *figures.closed_form_bubble;
  json peaks = json::array(), busy = json::array(), idle = json::array(), bytes = json::array();
  for (const RankStats& rank : figures.ranks) {
    peaks.push_back(rank.peak_in_flight);
    busy.push_back(rank.busy_ms);
    idle.push_back(rank.idle_ms);
    bytes.push_back(rank.peak_activation_bytes);
  }
  entry["peak_in_flight"] = peaks;
  entry["busy_time"] = busy;
  entry["idle_time"] = idle;
  if (!unit_costs) entry["peak_activation_bytes"] = bytes;
  if (!unit_costs && !figures.peak_memory_bytes.empty()) {
    entry["peak_memory_bytes"] = figures.peak_memory_bytes;
    json parts = json::array();
    for (const MemoryParts& rank : figures.memory_parts) parts.push_back(memoryPartsToJson(rank));
    entry["memory_parts"] = std::move(parts);
  }
  if (figures.exposed_allreduce_ms) {
    json allreduce = json::array();
    for (const RankStats& rank : figures.ranks) allreduce.push_back(rank.allreduce_ms);
    entry["allreduce_time"] = allreduce;
    entry["exposed_allreduce"] = *figures.exposed_allreduce_ms;
  }
  return entry;
}

// The writer's counts are ints, so any int in range reads back.
constexpr int kMaxCount = std::numeric_limits<int>::max();

// Each per-rank list holds one entry per pipeline stage (ranks of one replica).
std::vector<double> perRankTimes(const JsonFields& fields, const char* key, int stages) {
  fields.requireEntries(key, static_cast<std::size_t>(stages), "one per stage");
  return fields.nonNegativeList(key);
}

// A known schedule's chunks sit as it places them; a name this build does not know, in loop order.
Placement::Style chunkStyleOf(const std::string& schedule) {
  for (ScheduleKind kind : allScheduleKinds()) {
    if (schedule == scheduleName(kind)) return chunkStyle(kind);
  }
  return Placement::Style::kLoop;
}

SimulatedScheduleFigures scheduleFromJson(const json& item, const std::string& where, int stages,
                                          bool unit_costs) {
  const JsonFields fields(item, where);
  SimulatedScheduleFigures figures;
  figures.schedule = fields.string("schedule");
  figures.placement = Placement{stages, fields.integer("chunks", 1, kMaxCount), chunkStyleOf(figures.schedule)};
  figures.step_ms = fields.nonNegative("step_time");
  figures.bubble = fields.fraction("bubble");
  if (fields.has("closed_form_bubble")) figures.closed_form_bubble = fields.fraction("closed_form_bubble");
  fields.requireEntries("peak_in_flight", static_cast<std::size_t>(stages), "one per stage");
  const std::vector<int> peaks = fields.integerList("peak_in_flight", 0, kMaxCount);
  const std::vector<double> busy = perRankTimes(fields, "busy_time", stages);
  const std::vector<double> idle = perRankTimes(fields, "idle_time", stages);
  std::vector<std::uint64_t> bytes(peaks.size(), 0);
  if (!unit_costs) {
    fields.requireEntries("peak_activation_bytes", static_cast<std::size_t>(stages), "one per stage");
    bytes = fields.countList("peak_activation_bytes");
  }
  if (!unit_costs && fields.has("peak_memory_bytes")) {
    fields.requireEntries("peak_memory_bytes", static_cast<std::size_t>(stages), "one per stage");
    figures.peak_memory_bytes = fields.countList("peak_memory_bytes");
    fields.requireEntries("memory_parts", static_cast<std::size_t>(stages), "one per stage");
    for (std::size_t r = 0; r < item["memory_parts"].size(); ++r) {
      figures.memory_parts.push_back(
          memoryPartsFromJson(JsonFields(item["memory_parts"][r], where + ": memory_parts[" + std::to_string(r) + "]")));
    }
  }
  // The writer gives both with data parallelism and neither without.
  std::vector<double> allreduce(peaks.size(), 0.0);
  if (fields.has("exposed_allreduce") || fields.has("allreduce_time")) {
    figures.exposed_allreduce_ms = fields.nonNegative("exposed_allreduce");
    allreduce = perRankTimes(fields, "allreduce_time", stages);
  }
  for (std::size_t r = 0; r < peaks.size(); ++r) {
    RankStats rank;
    rank.busy_ms = busy[r];
    rank.idle_ms = idle[r];
    rank.allreduce_ms = allreduce[r];
    rank.peak_in_flight = peaks[r];
    rank.peak_activation_bytes = bytes[r];
    figures.ranks.push_back(rank);
  }
  return figures;
}

std::vector<std::string> optionalNotes(const JsonFields& top) {
  return top.has("notes") ? top.stringList("notes") : std::vector<std::string>{};
}

SimulationDocument pipelineFromJson(const JsonFields& top) {
  SimulationDocument document;
  const std::string costs = top.string("costs");
  if (costs != "unit" && costs != "profile") {
    top.fail("costs", "is " + json(costs).dump() + "; expected \"unit\" or \"profile\"");
  }
  document.unit_costs = costs == "unit";
  const std::string time_unit = top.string("time_unit");
  if (time_unit != document.timeUnit()) {
    top.fail("time_unit", "is " + json(time_unit).dump() + "; " + costs + " costs are in \"" +
                              document.timeUnit() + "\"");
  }
  document.stages = top.integer("stages", 1, kMaxCount);
  document.microbatches = top.integer("microbatches", 1, kMaxCount);
  if (!document.unit_costs) {
    document.profile_path = top.string("profile");
    document.partition_path = top.string("partition");
    document.comm_text = top.string("communication");
  }
  if (top.has("stage_recompute")) {
    top.requireEntries("stage_recompute", static_cast<std::size_t>(document.stages), "one per stage");
    document.stage_recompute = top.stringList("stage_recompute");
  }
  document.data_parallel = top.optionalInteger("data_parallel", 1, kMaxCount, 1);
  if (document.data_parallel > 1) document.dp_text = top.string("allreduce");
  const json& schedules = top.array("schedules");
  for (std::size_t i = 0; i < schedules.size(); ++i) {
    document.schedules.push_back(scheduleFromJson(schedules[i], top.where() + ": schedule " + std::to_string(i),
                                                  document.stages, document.unit_costs));
  }
  document.notes = optionalNotes(top);
  return document;
}

TradeoffRow tradeoffRowFromJson(const json& item, const std::string& where, int ranks) {
  const JsonFields fields(item, where);
  TradeoffRow row;
  row.schedule = fields.string("schedule");
  row.stages = fields.integer("stages", 1, kMaxCount);
  row.replicas = fields.integer("replicas", 1, kMaxCount);
  if (static_cast<std::int64_t>(row.stages) * row.replicas != ranks) {
    fields.fail("replicas", "is " + std::to_string(row.replicas) + "; \"stages\" x \"replicas\" must be the " +
                                "document's " + std::to_string(ranks) + " ranks, got " + std::to_string(row.stages) +
                                " x " + std::to_string(row.replicas));
  }
  row.microbatches = fields.integer("microbatches", 1, kMaxCount);
  fields.requireEntries("layers_per_stage", static_cast<std::size_t>(row.stages), "one per stage");
  row.layers_per_stage = fields.integerList("layers_per_stage", 1, kMaxCount);
  row.step_ms = fields.nonNegative("step_time");
  row.bubble = fields.fraction("bubble");
  row.allreduce_ms = fields.nonNegative("allreduce_time");
  row.exposed_allreduce_ms = fields.nonNegative("exposed_allreduce");
  row.samples_per_s = fields.nonNegative("samples_per_s");
  row.peak_memory_bytes = fields.count("peak_memory_bytes");
  fields.requireEntries("recompute", static_cast<std::size_t>(row.stages), "one per stage");
  row.recompute = fields.stringList("recompute");
  return row;
}

TradeoffDocument tradeoffFromJson(const JsonFields& top) {
  // The trade-off always splits a profile; the writer says so in the fields both shapes share.
  const std::string costs = top.string("costs");
  if (costs != "profile") top.fail("costs", "is " + json(costs).dump() + "; a \"tradeoff\" is always on \"profile\" costs");
  const std::string time_unit = top.string("time_unit");
  if (time_unit != "ms") top.fail("time_unit", "is " + json(time_unit).dump() + "; a \"tradeoff\" is always in \"ms\"");
  TradeoffDocument document;
  document.profile_path = top.string("profile");
  document.ranks = top.integer("ranks", 1, kMaxCount);
  document.global_batch = top.optionalInteger("global_batch", 1, kMaxCount, 0);
  document.dp_text = top.string("allreduce");
  document.tradeoff.microbatch_size = top.integer("microbatch_size", 0, kMaxCount);
  const json& rows = top.array("tradeoff");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    document.tradeoff.rows.push_back(
        tradeoffRowFromJson(rows[i], top.where() + ": layout " + std::to_string(i), document.ranks));
  }
  document.tradeoff.notes = optionalNotes(top);
  return document;
}

}  // namespace

AnySimulationDocument simulationFromJson(const json& document, const std::string& source) {
  requireDocumentFormat(document, source, kSimulationFormat, "stagecut simulate ... --json > FILE");
  const JsonFields top(document, source);
  if (top.has("tradeoff")) return tradeoffFromJson(top);
  return pipelineFromJson(top);
}

SimulatedScheduleFigures simulatedScheduleFigures(const PipelinePrediction& prediction,
                                                  std::optional<double> closed_form_bubble,
                                                  int data_parallel) {
  SimulatedScheduleFigures figures;
  figures.schedule = prediction.schedule.name;
  figures.placement = prediction.schedule.placement;
  figures.step_ms = prediction.simulated.step_ms;
  figures.bubble = prediction.simulated.bubble;
  figures.closed_form_bubble = closed_form_bubble;
  figures.ranks = prediction.simulated.ranks;
  for (const RankMemory& rank : prediction.memory.ranks) {
    figures.peak_memory_bytes.push_back(static_cast<std::uint64_t>(std::llround(rank.peak_bytes)));
    MemoryParts parts = rank.peak_parts;
    for (double* part : {&parts.weights, &parts.gradients, &parts.optimizer, &parts.activations, &parts.buffers,
                         &parts.transient}) {
      *part = std::round(*part);  // whole bytes, as written
    }
    figures.memory_parts.push_back(parts);
  }
  if (data_parallel > 1) {
    figures.exposed_allreduce_ms = prediction.exposedAllReduceMs();
  }
  return figures;
}

json simulationToJson(const SimulationDocument& document) {
  json out = {{"format", kSimulationFormat},
              {"costs", document.unit_costs ? "unit" : "profile"},
              {"time_unit", document.timeUnit()},
              {"stages", document.stages},
              {"microbatches", document.microbatches}};
  if (!document.unit_costs) {
    out["profile"] = document.profile_path;
    out["partition"] = document.partition_path;
    out["communication"] = document.comm_text;
  }
  if (!document.stage_recompute.empty()) out["stage_recompute"] = document.stage_recompute;
  if (document.data_parallel > 1) {
    out["data_parallel"] = document.data_parallel;
    out["allreduce"] = document.dp_text;
  }
  json schedules = json::array();
  for (const SimulatedScheduleFigures& figures : document.schedules) {
    schedules.push_back(scheduleToJson(figures, document.unit_costs));
  }
  out["schedules"] = schedules;
  if (!document.notes.empty()) out["notes"] = document.notes;
  return out;
}

json tradeoffToJson(const TradeoffDocument& document) {
  json rows = json::array();
  for (const TradeoffRow& row : document.tradeoff.rows) {
    rows.push_back({{"schedule", row.schedule},
                    {"stages", row.stages},
                    {"replicas", row.replicas},
                    {"microbatches", row.microbatches},
                    {"layers_per_stage", row.layers_per_stage},
                    {"step_time", row.step_ms},
                    {"bubble", row.bubble},
                    {"allreduce_time", row.allreduce_ms},
                    {"exposed_allreduce", row.exposed_allreduce_ms},
                    {"samples_per_s", row.samples_per_s},
                    {"peak_memory_bytes", row.peak_memory_bytes},
                    {"recompute", row.recompute}});
  }
  json out = {{"format", kSimulationFormat},
              {"costs", "profile"},
              {"time_unit", "ms"},
              {"profile", document.profile_path},
              {"ranks", document.ranks},
              {"microbatch_size", document.tradeoff.microbatch_size},
              {"allreduce", document.dp_text},
              {"tradeoff", rows}};
  if (document.global_batch > 0) out["global_batch"] = document.global_batch;
  if (!document.tradeoff.notes.empty()) out["notes"] = document.tradeoff.notes;
  return out;
}

}  // namespace stagecut
