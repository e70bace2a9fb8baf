#include "planner/layout_plan_json.h"

#include <map>

namespace stagecut {

namespace {

using nlohmann::json;

json layoutToJson(const ParallelLayout& layout) {
  return {{"tensor_parallel", layout.degrees.tensor_parallel},
          {"sequence_parallel", layout.degrees.sequence_parallel},
          {"context_parallel", layout.degrees.context_parallel},
          {"pipeline_parallel", layout.placement.ranks},
          {"chunks_per_rank", layout.placement.chunks_per_rank},
          {"data_parallel", layout.data_parallel},
          {"schedule", scheduleName(layout.schedule)},
          {"microbatch_size", layout.microbatch_size},
          {"microbatches", layout.microbatches},
          {"recompute", layout.recompute.text()},
          {"sharded_data_parallel", layout.sharded_data_parallel}};
}

json figuresToJson(const LayoutFigures& figures) {
  json row = {{"layout", layoutToJson(figures.layout)},
              {"predicted_step_ms", figures.step_ms},
              {"bubble", figures.bubble},
              {"compute_ms", figures.compute_ms},
              {"tensor_parallel_ms", figures.tensor_parallel_ms},
              {"data_parallel_ms", figures.data_parallel_ms},
              {"tokens_per_s_per_gpu", figures.tokens_per_s_per_gpu},
              {"peak_memory_bytes", figures.peak_bytes},
              {"layers_per_chunk", figures.split.layersPerStage()}};
  std::vector<std::string> recompute;
  for (const StageCost& stage : figures.split.stages) recompute.push_back(stage.recompute.value_or("none"));
  row["recompute_per_chunk"] = recompute;
  if (figures.mfu) row["mfu"] = *figures.mfu;
  return row;
}

}  // namespace

json layoutPlanToJson(const PlanInputs& inputs, const LayoutPlan& plan, const std::string& framework_text,
                      const std::string& pinned) {
  const Cluster& cluster = inputs.cluster();
  json rows = json::array();
  for (const LayoutFigures& figures : plan.ranked) rows.push_back(figuresToJson(figures));
  std::map<std::string, long long> rejected;
  for (const RejectedLayout& layout : plan.rejected) ++rejected[layoutProblemName(layout.problem.kind)];
  json document = {
      {"format", kLayoutPlanFormat},
      {"profile", inputs.source()},
      {"framework", frameworkName(inputs.target().framework)},
      {"global_batch", inputs.target().global_batch},
      {"seq_len", inputs.profile().run.seq_len},
      {"cluster",
       {{"name", cluster.name},
        {"gpu", cluster.gpu},
        {"gpus", cluster.gpus},
        {"gpus_per_node", cluster.gpus_per_node},
        {"memory_bytes", cluster.memory_bytes},
        {"intra_node", {{"bandwidth_bytes_per_s", cluster.intra_node.bandwidth_bytes_per_s}, {"latency_ms", cluster.intra_node.latency_ms}}},
        {"inter_node", {{"bandwidth_bytes_per_s", cluster.inter_node.bandwidth_bytes_per_s}, {"latency_ms", cluster.inter_node.latency_ms}}}}},
      {"search",
       {{"candidates", plan.candidates}, {"evaluated", plan.evaluated}, {"pruned", plan.pruned}, {"seconds", plan.seconds},
        {"unproven_splits", plan.unproven_splits}, {"largest_split_gap", plan.largest_split_gap}}},
      {"rejected", rejected},
      {"rows", std::move(rows)}};
  if (!pinned.empty()) document["fix"] = pinned;
  if (plan.ranked.empty()) {
    document["best"] = nullptr;
    return document;
  }
  document["best"] = {{"row", 0},
                      {"layout", layoutToJson(plan.ranked.front().layout)},
                      {"predicted_step_ms", plan.ranked.front().step_ms},
                      {frameworkName(inputs.target().framework), framework_text}};
  return document;
}

}  // namespace stagecut
