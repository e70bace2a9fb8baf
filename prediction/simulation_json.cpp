#include "prediction/simulation_json.h"

#include <algorithm>

namespace stagecut {

namespace {

using nlohmann::json;

json scheduleToJson(const SimulatedScheduleFigures& figures, bool unit_costs) {
  json entry = {{"schedule", figures.schedule},
                {"chunks", figures.chunks},
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
  if (figures.exposed_allreduce_ms) {
    json allreduce = json::array();
    for (const RankStats& rank : figures.ranks) allreduce.push_back(rank.allreduce_ms);
    entry["allreduce_time"] = allreduce;
    entry["exposed_allreduce"] = *figures.exposed_allreduce_ms;
  }
  return entry;
}

}  // namespace

SimulatedScheduleFigures simulatedScheduleFigures(const PipelinePrediction& prediction,
                                                  std::optional<double> closed_form_bubble,
                                                  int data_parallel) {
  SimulatedScheduleFigures figures;
  figures.schedule = prediction.schedule.name;
  figures.chunks = prediction.schedule.chunks;
  figures.step_ms = prediction.simulated.step_ms;
  figures.bubble = prediction.simulated.bubble;
  figures.closed_form_bubble = closed_form_bubble;
  figures.ranks = prediction.simulated.ranks;
  if (data_parallel > 1) {
    figures.exposed_allreduce_ms = std::max(0.0, prediction.simulated.step_ms - prediction.pipeline_step_ms);
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
