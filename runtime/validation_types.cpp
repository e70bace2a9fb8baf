#include "runtime/validation_types.h"

#include <cmath>

namespace stagecut {

namespace {

// JSON has no NaN; "not measured" travels as null.
nlohmann::json numberOrNull(double value) { return std::isnan(value) ? nlohmann::json() : nlohmann::json(value); }
double numberOrNaN(const nlohmann::json& value) {
  return value.is_number() ? value.get<double>() : std::numeric_limits<double>::quiet_NaN();
}

nlohmann::json stepsToJson(const std::vector<std::vector<OpRecord>>& all_steps) {
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& step : all_steps) {
    nlohmann::json ops = nlohmann::json::array();
    for (const auto& record : step) {
      ops.push_back({static_cast<int>(record.op.kind), record.op.microbatch, record.op.chunk, record.start_ns,
                     record.end_ns, record.peak_bytes});
    }
    steps.push_back(std::move(ops));
  }
  return steps;
}

std::vector<std::vector<OpRecord>> stepsFromJson(const nlohmann::json& document) {
  std::vector<std::vector<OpRecord>> steps;
  for (const auto& step : document) {
    std::vector<OpRecord> records;
    for (const auto& op : step) {
      OpRecord record;
      record.op.kind = static_cast<OpKind>(op[0].get<int>());
      record.op.microbatch = op[1].get<int>();
      record.op.chunk = op[2].get<int>();
      record.start_ns = op[3].get<std::int64_t>();
      record.end_ns = op[4].get<std::int64_t>();
      record.peak_bytes = op[5].get<std::int64_t>();
      records.push_back(record);
    }
    steps.push_back(std::move(records));
  }
  return steps;
}

}  // namespace

double defaultGradTolerance(const std::string& precision) {
  if (precision == "bfloat16") return 3e-2;
  if (precision == "float16") return 1e-2;
  return 1e-4;
}

nlohmann::json rankOutcomeToJson(const RankOutcome& outcome) {
  return {{"rank", outcome.rank},
          {"stage", outcome.stage},
          {"replica", outcome.replica},
          {"replica_latency_ms", outcome.replica_latency_ms},
          {"replica_bandwidth_bytes_per_s", outcome.replica_bandwidth_bytes_per_s},
          {"recompute_steps", stepsToJson(outcome.recompute_steps)},
          {"recompute_peak_bytes", outcome.recompute_peak_bytes},
          {"recompute_optimizer_step_peak_bytes", outcome.recompute_optimizer_step_peak_bytes},
          {"optimizer_step_peak_bytes", outcome.optimizer_step_peak_bytes},
          {"recompute_grad_max_rel_diff", outcome.recompute_grad_max_rel_diff},
          {"recompute_loss_pipeline", numberOrNull(outcome.recompute_loss_pipeline)},
          {"first_layer", outcome.first_layer},
          {"last_layer", outcome.last_layer},
          {"chunk_layers", outcome.chunk_layers},
          {"steps", stepsToJson(outcome.steps)},
          {"peak_bytes", outcome.peak_bytes},
          {"grad_max_rel_diff", outcome.grad_max_rel_diff},
          {"worst_parameter", outcome.worst_parameter},
          {"loss_pipeline", numberOrNull(outcome.loss_pipeline)},
          {"loss_reference", numberOrNull(outcome.loss_reference)},
          {"link_latency_ms", outcome.link_latency_ms},
          {"link_bandwidth_bytes_per_s", outcome.link_bandwidth_bytes_per_s},
          {"has_link", outcome.has_link},
          {"link_bandwidth_measurable", outcome.link_bandwidth_measurable},
          {"environment", rankEnvironmentToJson(outcome.environment)}};
}

RankOutcome rankOutcomeFromJson(const nlohmann::json& document) {
  RankOutcome outcome;
  outcome.rank = document.at("rank").get<int>();
  outcome.first_layer = document.at("first_layer").get<int>();
  outcome.last_layer = document.at("last_layer").get<int>();
  outcome.chunk_layers = document.at("chunk_layers").get<std::vector<std::pair<int, int>>>();
  outcome.steps = stepsFromJson(document.at("steps"));
  outcome.stage = document.at("stage").get<int>();
  outcome.replica = document.at("replica").get<int>();
  outcome.replica_latency_ms = document.at("replica_latency_ms").get<double>();
  outcome.replica_bandwidth_bytes_per_s = document.at("replica_bandwidth_bytes_per_s").get<double>();
  outcome.recompute_steps = stepsFromJson(document.at("recompute_steps"));
  outcome.recompute_peak_bytes = document.at("recompute_peak_bytes").get<std::int64_t>();
  outcome.recompute_grad_max_rel_diff = document.at("recompute_grad_max_rel_diff").get<double>();
  outcome.recompute_loss_pipeline = numberOrNaN(document.at("recompute_loss_pipeline"));
  outcome.peak_bytes = document.at("peak_bytes").get<std::int64_t>();
  outcome.optimizer_step_peak_bytes = document.at("optimizer_step_peak_bytes").get<std::vector<std::int64_t>>();
  outcome.recompute_optimizer_step_peak_bytes =
      document.at("recompute_optimizer_step_peak_bytes").get<std::vector<std::int64_t>>();
  outcome.grad_max_rel_diff = document.at("grad_max_rel_diff").get<double>();
  outcome.worst_parameter = document.at("worst_parameter").get<std::string>();
  outcome.loss_pipeline = numberOrNaN(document.at("loss_pipeline"));
  outcome.loss_reference = numberOrNaN(document.at("loss_reference"));
  outcome.link_latency_ms = document.at("link_latency_ms").get<double>();
  outcome.link_bandwidth_bytes_per_s = document.at("link_bandwidth_bytes_per_s").get<double>();
  outcome.has_link = document.at("has_link").get<bool>();
  outcome.link_bandwidth_measurable = document.at("link_bandwidth_measurable").get<bool>();
  outcome.environment = rankEnvironmentFromJson(document.at("environment"), "rank " + std::to_string(outcome.rank));
  return outcome;
}

}  // namespace stagecut
