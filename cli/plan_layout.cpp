#include "cli/plan_layout.h"

#include <algorithm>
#include <iostream>
#include <map>
#include <set>

#include "cli/layout_plan_text.h"
#include "core/error.h"
#include "core/json_document.h"
#include "core/output_path.h"
#include "core/partition_json.h"
#include "core/precision.h"
#include "core/profile_json.h"
#include "core/units.h"
#include "partitioner/framework_formats.h"
#include "planner/layout_formats.h"
#include "planner/layout_plan_json.h"
#include "planner/layout_search.h"

namespace stagecut {

void addLayoutPlanFlags(CLI::App* command, LayoutPlanFlags& flags) {
  command->add_option("--gpus", flags.gpus,
                      "Plan the whole layout for G GPUs: TP x CP x PP x DP, chunks, schedule, microbatch size, "
                      "recomputation and the sharded optimizer (instead of --stages)");
  command->add_option("--cluster", flags.cluster, "The machines: dgx-h100, dgx-h200 or dgx-a100 (links, memory, GPU)")
      ->capture_default_str();
  command->add_option("--gpus-per-node", flags.gpus_per_node, "GPUs in a node (default: the cluster's, 8)");
  command->add_option("--gpu-memory", flags.gpu_memory, "Memory of a GPU, e.g. 80GiB (default: the cluster's)");
  command->add_option("--intra-node-bandwidth", flags.intra_bandwidth, "A GPU's link inside a node, e.g. 360GB/s");
  command->add_option("--intra-node-latency", flags.intra_latency, "Per ring step inside a node, e.g. 3us");
  command->add_option("--inter-node-bandwidth", flags.inter_bandwidth, "A GPU's link between nodes, e.g. 40GB/s");
  command->add_option("--inter-node-latency", flags.inter_latency, "Per ring step between nodes, e.g. 8us");
  command->add_option("--fix", flags.fix,
                      "Evaluate a given layout (the rest searched): tp=4,cp=2,pp=4,v=5,mbs=1,schedule=..., "
                      "recompute=..., dist-opt=on|off");
  command->add_option("--format", flags.format, "The framework planned for and printed: megatron or torchtitan")
      ->capture_default_str();
  command->add_option("--most-chunks", flags.most_chunks, "The largest v interleaved-1f1b is tried with")
      ->capture_default_str();
  command->add_option("--top", flags.top, "How many of the fastest layouts to rank")->capture_default_str();
  command->add_option("--write-split", flags.write_split,
                      "Also write the winner's split as a stagecut.partition/1 file (for simulate, report and, at "
                      "TP 1 and CP 1, validate --partition)");
}

namespace {

// The preset, with every cluster flag given in place of its figure.
Cluster clusterOf(const LayoutPlanFlags& flags) {
  Cluster cluster = clusterPreset(flags.cluster, flags.gpus);
  if (flags.gpus_per_node > 0) cluster.gpus_per_node = flags.gpus_per_node;
  if (!flags.gpu_memory.empty()) cluster.memory_bytes = parseBytes(flags.gpu_memory, "--gpu-memory");
  const auto link = [](const std::string& bandwidth, const std::string& latency, const char* bandwidth_flag,
                       const char* latency_flag, BoundaryLink* into) {
    if (!bandwidth.empty()) into->bandwidth_bytes_per_s = parseBandwidthBytesPerS(bandwidth, bandwidth_flag);
    if (!latency.empty()) into->latency_ms = parseDurationMs(latency, latency_flag);
  };
  link(flags.intra_bandwidth, flags.intra_latency, "--intra-node-bandwidth", "--intra-node-latency", &cluster.intra_node);
  link(flags.inter_bandwidth, flags.inter_latency, "--inter-node-bandwidth", "--inter-node-latency", &cluster.inter_node);
  checkCluster(cluster);
  return cluster;
}

// plan --gpus chooses what these set for one pipeline: each is refused with the way to pin it.
void refuseOnePipelineFlags(const CLI::App& command) {
  const std::map<std::string, std::string> instead = {
      {"--stages", "pin the pipeline with --fix pp=N"},   {"--schedule", "pin it with --fix schedule=NAME"},
      {"--chunks", "pin it with --fix v=N"},              {"--data-parallel", "pin it with --fix dp=N"},
      {"--memory-cap", "give --gpu-memory"},              {"--recompute", "pin it with --fix recompute=MODE"},
      {"--bandwidth", "give the cluster's links (--inter-node-bandwidth)"},
      {"--latency", "give the cluster's links (--inter-node-latency)"},
      {"--split", "pin the layout with --fix"},           {"--stage-speed", "plan one kind of GPU"},
      {"--microbatch-size", "pin it with --fix mbs=N"},    {"--tp-bandwidth", "give --intra-node-bandwidth"}};
  for (const auto& [flag, fix] : instead) {
    const CLI::Option* option = command.get_option_no_throw(flag);
    if (option != nullptr && option->count() > 0) throw Error(flag + ": plan --gpus chooses it for every layout; " + fix);
  }
}

// The --recompute validate runs the split's stages with: every stage's the same, none or full.
std::optional<std::string> validateRecompute(const Partition& split) {
  std::set<std::string> modes;
  for (const StageCost& stage : split.stages) modes.insert(stage.recompute.value_or("none"));
  if (modes.size() == 1 && (*modes.begin() == "none" || *modes.begin() == "full")) return *modes.begin();
  return std::nullopt;
}

// The winner's split as a partition file, and how to run it for real where validate can: a
// layout without tensor or context parallelism at a measured microbatch size.
void writeWinnerSplit(const std::string& path, const PlanInputs& inputs, const LayoutFigures& best) {
  const Partition& split = best.split;
  const ParallelLayout& layout = best.layout;
  const FrameworkOutputs outputs =
      frameworkOutputs(inputs.profile(), split.layersPerStage(), split.placement, layout.schedule);
  writeOutputFile(OutputPath(path, "--write-split", {{"the profile", inputs.source()}}),
                  toJsonText(partitionToJson(split, outputs)));
  std::cout << "\nwrote " << path << " (the split of #1)";
  const std::vector<int> sizes = measuredMicrobatchSizes(inputs.profile());
  const bool measured = std::find(sizes.begin(), sizes.end(), layout.microbatch_size) != sizes.end();
  const std::optional<std::string> recompute = validateRecompute(split);
  if (layout.degrees.tensor_parallel == 1 && layout.degrees.context_parallel == 1 && measured && recompute) {
    std::cout << "; run it with: stagecut validate " << inputs.source() << " --partition " << path
              << " --schedule " << scheduleName(layout.schedule) << " --microbatches " << layout.microbatches
              << " --microbatch-size " << layout.microbatch_size << " --data-parallel " << layout.data_parallel
              << " --recompute " << *recompute;
  }
  std::cout << "\n";
}

}  // namespace

void runLayoutPlan(const LayoutPlanFlags& flags, const PartitionFlags& partition, int global_batch,
                   const CLI::App& command) {
  refuseOnePipelineFlags(command);
  if (const auto output = partition.output()) checkOutputPath(*output);
  if (!flags.write_split.empty()) {
    checkOutputPath(OutputPath(flags.write_split, "--write-split", {{"the profile", partition.profile_path}}));
  }
  Profile profile = readProfileFile(partition.profile_path);
  PlanTarget target;
  target.global_batch = global_batch;
  target.framework = parseFramework(flags.format);
  // A 16-bit profile trains as Megatron's --bf16 does: float32 masters and moments.
  target.optimizer = command.count("--optimizer") > 0                 ? partition.optimizer
                     : isSixteenBitPrecision(profile.run.dtype) ? "adam-mixed"
                                                                 : "adam";
  const PlanInputs inputs(std::move(profile), partition.profile_path, clusterOf(flags), target);
  LayoutSearchOptions options;
  options.most_chunks = flags.most_chunks;
  options.keep = static_cast<std::size_t>(flags.top);
  std::optional<LayoutPlan> free_plan;
  if (!flags.fix.empty()) {
    free_plan = searchLayouts(inputs, options);
    options.pin = parseLayoutPin(flags.fix, inputs.profile());
  }
  const LayoutPlan plan = searchLayouts(inputs, options);
  const std::string text = plan.ranked.empty() ? std::string() : frameworkText(inputs, plan.ranked.front());
  const nlohmann::json document = layoutPlanToJson(inputs, plan, text, flags.fix);
  const std::optional<OutputPath> output = partition.output();
  if (output) writeOutputFile(*output, toJsonText(document));
  if (partition.json) {
    std::cout << toJsonText(document);
    return;
  }
  printLayoutPlan(std::cout, inputs, plan, flags.fix, free_plan ? &*free_plan : nullptr);
  if (output) std::cout << "\nwrote " << output->path << "\n";
  if (!flags.write_split.empty() && !plan.ranked.empty()) writeWinnerSplit(flags.write_split, inputs, plan.ranked.front());
}

}  // namespace stagecut
