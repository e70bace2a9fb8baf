#include <iostream>

#include "cli/commands.h"
#include "cli/partition_flags.h"
#include "cli/partition_report.h"
#include "cli/partition_table.h"
#include "core/error.h"
#include "core/json_document.h"
#include "core/partition_json.h"
#include "core/profile_json.h"
#include "core/units.h"
#include "partitioner/framework_formats.h"
#include "partitioner/partition_summary.h"
#include "partitioner/profile_partitioner.h"
#include "partitioner/simulated_refinement.h"

namespace stagecut {

namespace {

struct PartitionCommandFlags {
  PartitionFlags shared;
  std::string format = "list";
  bool megatron_first_last = false;
  bool simulate = false;
};

void printFormat(std::ostream& out, const std::string& format, const std::string& text) {
  out << "\n" << format << ":\n";
  std::string line;
  for (char c : text + "\n") {
    if (c == '\n') {
      out << "  " << line << "\n";
      line.clear();
    } else {
      line += c;
    }
  }
}

void runPartition(const PartitionCommandFlags& flags) {
  checkFrameworkFormatName(flags.format);
  const std::string& path = flags.shared.profile_path;
  const Profile profile = readProfileFile(path, flags.shared.microbatch_size);
  const PartitionOptions options = resolvePartitionFlags(flags.shared, profile);
  const bool megatron = flags.format == "megatron" || flags.megatron_first_last;

  Partition partition;
  MegatronPartition megatron_result;
  if (megatron) {
    megatron_result = partitionForMegatron(profile, options, path, flags.megatron_first_last);
    partition = megatron_result.chosen;
  } else {
    partition = partitionProfile(profile, options, path, SplitMethod::kCompute);
  }
  SimulatedRefinement refinement;
  if (flags.simulate) {
    const CostModel model = buildCostModel(profile, options, path);
    refinement = refineBySimulatedStep(profile, options, model, partition.layersPerStage());
    if (refinement.layers_per_stage != partition.layersPerStage()) {
      partition = describeSplit(profile, options, model, refinement.layers_per_stage, "compute+simulated");
    }
  }
  // Formats print only what passed their coverage check; an explicit format that cannot express
  // the split says why.
  const std::string text = flags.format == "json" ? "" : formatSplit(flags.format, profile, partition.layersPerStage());

  const bool extras = options.recompute.mode != RecomputePolicy::Mode::kNone || options.data_parallel > 1;
  const std::vector<StageRecompute> stage_extras =
      extras ? stageRecompute(profile, options, partition, path) : std::vector<StageRecompute>{};
  const nlohmann::json document = partitionToJson(partition, frameworkOutputs(profile, partition.layersPerStage()));
  const std::optional<OutputPath> output = flags.shared.output();
  if (output) writeOutputFile(*output, toJsonText(document));
  if (flags.shared.json || flags.format == "json") {
    std::cout << toJsonText(document);
    return;
  }
  std::cout << path << ": " << profile.layerCount() << " layers, "
            << assumptionsNote(flags.shared, options) << "\n";
  std::cout << communicationNote(flags.shared) << "\n";
  if (megatron) {
    std::cout << "Megatron view: the embedding stays on the first stage, the final norm, output "
                 "layer and loss on the last\n";
  }
  std::cout << "\n";
  printPartitionTable(std::cout, partition, layerNameRanges(partition, profile));
  printMemoryParts(std::cout, partition);
  if (extras) {
    std::cout << "\n";
    printRecomputeTable(std::cout, stage_extras, options);
  }
  if (megatron_result.first_last) {
    const Partition& free = megatron_result.free_optimum;
    std::cout << "  restricted to --decoder-first/last-pipeline-num-layers: bottleneck "
              << formatSignedPercent(partition.bottleneck_ms / free.bottleneck_ms - 1.0)
              << ", step " << formatSignedPercent(partition.predicted_step_ms / free.predicted_step_ms - 1.0)
              << " against the free layout (" << formatMs(free.bottleneck_ms) << " ms, "
              << formatMs(free.predicted_step_ms) << " ms)\n";
  }
  if (flags.simulate) {
    std::cout << "  simulated " << scheduleName(options.schedule) << " step "
              << formatMs(refinement.simulated_step_ms) << " ms (the solver's first choice: "
              << formatMs(refinement.exact_split_simulated_ms) << " ms), best of "
              << refinement.candidates << " splits with the optimal bottleneck"
              << (refinement.truncated ? " (the first ones; more exist)" : "") << "\n";
  }
  if (flags.format != "json") printFormat(std::cout, flags.format, text);
  if (output) std::cout << "\nwrote " << output->path << "\n";
}

}  // namespace

void addPartitionCommand(CLI::App& app) {
  auto* command = app.add_subcommand(
      "partition", "Split a profile into pipeline stages with the smallest slowest stage (exact)");
  auto flags = std::make_shared<PartitionCommandFlags>();
  addPartitionFlags(command, flags->shared);
  command->add_option("--format", flags->format,
                      "list, json, megatron, torchgpipe, fairscale, deepspeed, pippy or torchtitan")
      ->capture_default_str();
  command->add_flag("--megatron-first-last", flags->megatron_first_last,
                    "Only splits --decoder-first/last-pipeline-num-layers can express (equal middle stages)");
  command->add_flag("--simulate", flags->simulate,
                    "Among splits with the optimal bottleneck, take the fastest in the event simulator");
  command->callback([flags] { runPartition(*flags); });
}

}  // namespace stagecut
