#include <iostream>

#include "cli/commands.h"
#include "cli/partition_flags.h"
#include "cli/partition_report.h"
#include "cli/partition_table.h"
#include "cli/text_table.h"
#include "core/error.h"
#include "core/json_document.h"
#include "core/partition_json.h"
#include "core/profile_json.h"
#include "core/units.h"
#include "partitioner/chunked_partition.h"
#include "partitioner/framework_formats.h"
#include "partitioner/split_rules.h"
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

  /// --format as the enum every choice below switches on (parseFrameworkFormat refuses others).
  FrameworkFormat frameworkFormat() const { return parseFrameworkFormat(format); }
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

// The best split under each framework's rules beside the free optimum, as the table
// `partition` prints under its split.
void printRuleSetSplits(std::ostream& out, const std::vector<RuleSetSplit>& rows, const Profile& profile) {
  const Partition* free = nullptr;
  for (const RuleSetSplit& row : rows) {
    if (row.rules == SplitRuleSet::kAny && row.partition) free = &*row.partition;
  }
  TextTable table;
  for (const char* header : {"rules", "runs on", "layers per stage", "bottleneck ms", "step ms", "vs free"}) {
    const std::string name = header;
    table.addColumn(name, name == "bottleneck ms" || name == "step ms" || name == "vs free" ? TextTable::Align::kRight
                                                                                           : TextTable::Align::kLeft);
  }
  std::vector<std::string> failures;
  for (const RuleSetSplit& row : rows) {
    if (!row.partition) {
      table.addRow({ruleSetName(row.rules), ruleSetRunners(row.rules), "none", "", "", ""});
      failures.push_back(std::string(ruleSetName(row.rules)) + ": " + row.failure);
      continue;
    }
    const Partition& split = *row.partition;
    table.addRow({ruleSetName(row.rules), ruleSetRunners(row.rules), joinNumbers(split.layersPerStage()),
                  formatMs(split.bottleneck_ms), formatMs(split.predicted_step_ms),
                  free ? formatSignedPercent(split.bottleneck_ms / free->bottleneck_ms - 1.0) : ""});
  }
  out << "\n  the best split under each framework's rules (each exact; vs free: its bottleneck against the free "
         "optimum's):\n";
  table.print(out, "  ");
  for (const std::string& failure : failures) out << "  " << failure << "\n";
  const std::string no_megatron = megatronInapplicability(profile);
  if (!no_megatron.empty()) {
    out << "  no Megatron layout: " << no_megatron
        << " (Megatron needs the embedding first and the loss last); use the deepspeed, torchgpipe or list output\n";
  }
}

// The rules a --format's split obeys: its framework's own, or every framework's for list and
// json (the free optimum with --any-split).
// Whether the format carries a rule set of its own beside the one --format megatron and the
// command's defaults choose: the frameworks that put the loss after the last stage's output.
bool lossWithLastFormat(FrameworkFormat format) {
  switch (format) {
    case FrameworkFormat::kList:
    case FrameworkFormat::kJson:
    case FrameworkFormat::kMegatron:
      return false;
    case FrameworkFormat::kTorchgpipe:
    case FrameworkFormat::kFairscale:
    case FrameworkFormat::kDeepspeed:
    case FrameworkFormat::kPippy:
    case FrameworkFormat::kTorchtitan:
      return true;
  }
  return true;
}

PartitionOptions optionsForFormat(PartitionOptions options, const PartitionCommandFlags& flags) {
  if (lossWithLastFormat(flags.frameworkFormat())) {
    if (flags.shared.any_split) {
      throw Error("--any-split: --format " + flags.format + " cannot express every split (" +
                  ruleSetRunners(SplitRuleSet::kLossWithLast) +
                  " apply the loss to the last stage's output); drop one of the two");
    }
    options.rules = SplitRuleSet::kLossWithLast;
  }
  return options;
}

// partition --schedule interleaved-1f1b --chunks v (or a V: zb-v, dualpipe-v): N x v chunks placed on the ranks,
// solved as one problem (a rank's load is the sum of its chunks).
void runChunkedPartition(const PartitionCommandFlags& flags, const Profile& profile, PartitionOptions options,
                         const std::string& tensor_parallel_note, const std::vector<int>& yours) {
  const std::string& path = flags.shared.profile_path;
  if (flags.megatron_first_last || flags.simulate) {
    throw Error(std::string(flags.simulate ? "--simulate" : "--megatron-first-last") + ": not available with " +
                scheduleName(options.schedule) + " on " + placementWords(options.placement) +
                " (the chunked split is solved with its schedule already); drop it");
  }
  const bool megatron = flags.frameworkFormat() == FrameworkFormat::kMegatron;
  if (megatron && chunkStyle(options.schedule) == Placement::Style::kV) {
    throw Error("--format megatron: Megatron-LM runs no V-shaped schedule (" + std::string(scheduleName(options.schedule)) +
                "); use --format torchtitan or pippy");
  }
  if (megatron) options.rules = SplitRuleSet::kMegatron;
  ChunkedSplit search;
  const Partition best = partitionChunked(profile, options, path, &search);
  const Partition partition = yours.empty() ? best : describeChunkedSplit(profile, options, yours, "yours", path, &search);
  const std::vector<int> counts = partition.layersPerStage();
  const std::string text =
      flags.frameworkFormat() == FrameworkFormat::kJson
          ? std::string()
          : formatSplit(flags.frameworkFormat(), profile, counts, partition.placement, options.schedule);
  const nlohmann::json document =
      partitionToJson(partition, frameworkOutputs(profile, counts, partition.placement, options.schedule));
  const std::optional<OutputPath> output = flags.shared.output();
  if (output) writeOutputFile(*output, toJsonText(document));
  if (flags.shared.json || flags.frameworkFormat() == FrameworkFormat::kJson) {
    std::cout << toJsonText(document);
    return;
  }
  std::cout << path << ": " << profile.layerCount() << " layers, " << assumptionsNote(flags.shared, options) << "\n";
  std::cout << communicationNote(flags.shared) << "\n";
  if (!tensor_parallel_note.empty()) std::cout << tensor_parallel_note << "\n";
  if (!yours.empty()) {
    std::cout << "your split, as given (--split " << flags.shared.split_text << ")\n";
  } else {
    std::cout << (megatron ? std::string("Megatron's rules: the embedding on chunk 0, the final norm, output layer and "
                                         "loss on the last chunk")
                           : rulesNote(options, profile))
              << "\n";
  }
  const int ranks = options.placement.ranks;
  if (options.placement.style == Placement::Style::kV) {
    std::cout << placementWords(options.placement) << ", rank r holding chunks r and " << 2 * ranks - 1
              << " - r (the turn stays on rank " << ranks - 1 << "); a rank's load is the sum of its chunks\n\n";
  } else {
    std::cout << placementWords(options.placement) << ", chunk c on rank c mod " << ranks
              << " (Megatron's virtual pipeline); a rank's load is the sum of its chunks\n\n";
  }
  printPartitionTable(std::cout, partition, layerNameRanges(partition, profile));
  printMemoryParts(std::cout, partition);
  if (!yours.empty()) {
    std::cout << "  best chunking (" << rulesNote(options, profile) << "): " << joinNumbers(best.layersPerStage())
              << ", slowest rank " << formatMs(best.bottleneck_ms) << " ms, step " << formatMs(best.predicted_step_ms)
              << " ms, " << formatSignedPercent(best.predicted_step_ms / partition.predicted_step_ms - 1.0)
              << " against yours\n";
  }
  if (search.exact) {
    std::cout << "  exact: "
              << (search.search_complete ? "the search over every chunking ended (" + std::to_string(search.nodes) + " nodes)"
                                         : std::string("the slowest rank meets the packing bound (docs/partitioner.md)"))
              << "; among chunkings as slow, the simulated step chose\n";
  } else {
    const double gap = search.bottleneck_ms / search.lower_bound_ms - 1.0;
    std::cout << "  best found in " << search.nodes << " search nodes, not proven optimal: at most "
              << formatPercent(gap, gap < 0.01 ? 2 : 1) << " above the lower bound\n";
  }
  if (flags.frameworkFormat() != FrameworkFormat::kJson) printFormat(std::cout, flags.format, text);
  if (output) std::cout << "\nwrote " << output->path << "\n";
}

// The N-stage split partition prints: yours as given, Megatron's (or its flags'), or the
// compute split, then refined by the simulated step with --simulate.
struct StageSplit {
  Partition partition;
  MegatronPartition megatron;
  SimulatedRefinement refinement;
};

StageSplit chooseStageSplit(const PartitionCommandFlags& flags, const Profile& profile, const PartitionOptions& options,
                            const std::vector<int>& yours, bool megatron) {
  const std::string& path = flags.shared.profile_path;
  StageSplit split;
  if (!yours.empty()) {
    split.partition = describeSplit(profile, options, buildCostModel(profile, options, path), yours, "yours");
  } else if (megatron) {
    split.megatron = partitionForMegatron(profile, options, path, flags.megatron_first_last);
    split.partition = split.megatron.chosen;
  } else {
    split.partition = partitionProfile(profile, options, path, SplitMethod::kCompute);
  }
  if (flags.simulate) {
    const CostModel model = buildCostModel(profile, options, path);
    split.refinement = refineBySimulatedStep(profile, options, model, split.partition.layersPerStage());
    if (split.refinement.layers_per_stage != split.partition.layersPerStage()) {
      split.partition = describeSplit(profile, options, model, split.refinement.layers_per_stage, "compute+simulated");
    }
  }
  return split;
}

// What the restriction to Megatron's flags and the simulated refinement changed.
void printStageSplitNotes(std::ostream& out, const StageSplit& split, const PartitionCommandFlags& flags,
                          const PartitionOptions& options) {
  if (split.megatron.first_last) {
    const Partition& free = split.megatron.free_optimum;
    out << "  restricted to Megatron's flags: bottleneck "
        << formatSignedPercent(split.partition.bottleneck_ms / free.bottleneck_ms - 1.0) << ", step "
        << formatSignedPercent(split.partition.predicted_step_ms / free.predicted_step_ms - 1.0)
        << " against the best layout (" << formatMs(free.bottleneck_ms) << " ms, " << formatMs(free.predicted_step_ms)
        << " ms)\n";
  }
  if (flags.simulate) {
    const SimulatedRefinement& refinement = split.refinement;
    out << "  simulated " << scheduleName(options.schedule) << " step " << formatMs(refinement.simulated_step_ms)
        << " ms (the solver's first choice: " << formatMs(refinement.exact_split_simulated_ms) << " ms), best of "
        << refinement.candidates << " splits with the optimal bottleneck"
        << (refinement.truncated ? " (the first ones; more exist)" : "") << "\n";
  }
}

// Your split beside the best under each rule set, or the best under each rule set alone.
void printRuleSetComparison(std::ostream& out, const Profile& profile, const std::string& path,
                            const PartitionOptions& options, const Partition& partition, const std::vector<int>& yours,
                            const std::string& broken) {
  const std::vector<RuleSetSplit> rule_rows = ruleSetSplits(profile, options, path);
  if (yours.empty()) {
    printRuleSetSplits(out, rule_rows, profile);
    return;
  }
  for (const RuleSetSplit& row : rule_rows) {
    if (!row.partition) continue;
    const Partition& best = *row.partition;
    out << (row.rules == SplitRuleSet::kAny ? std::string("  best over any split (stagecut validate): ")
                                            : "  best under " + std::string(ruleSetName(row.rules)) + " rules (" +
                                                  ruleSetRunners(row.rules) + "): ")
        << joinNumbers(best.layersPerStage()) << ", step " << formatMs(best.predicted_step_ms) << " ms, "
        << formatSignedPercent(best.predicted_step_ms / partition.predicted_step_ms - 1.0) << " against yours\n";
  }
  if (!broken.empty()) out << "  your split: " << broken << "\n";
}

void runPartition(const PartitionCommandFlags& flags) {
  const FrameworkFormat format = parseFrameworkFormat(flags.format);
  const std::string& path = flags.shared.profile_path;
  std::string tensor_parallel_note;
  const Profile profile = readPricedProfile(path, flags.shared.microbatch_size, flags.shared.tp_bandwidth,
                                            flags.shared.tp_latency, &tensor_parallel_note);
  std::vector<int> yours;
  Placement placement;
  const PartitionOptions options =
      optionsForFormat(resolvePartitionFlags(flags.shared, profile, &yours, &placement), flags);
  if (options.placement.chunked()) {
    runChunkedPartition(flags, profile, options, tensor_parallel_note, yours);
    return;
  }
  const bool megatron = format == FrameworkFormat::kMegatron || flags.megatron_first_last;
  if (megatron && flags.shared.any_split) {
    throw Error("--any-split: Megatron cannot run every split (its embedding first, norm + head + loss last); "
                "drop --any-split or --format megatron");
  }
  if (!yours.empty() && (megatron || flags.simulate)) {
    throw Error(std::string("--split: evaluates your split as given; drop ") +
                (flags.simulate ? "--simulate" : flags.megatron_first_last ? "--megatron-first-last" : "--format megatron") +
                " (it chooses a split)");
  }
  const StageSplit split = chooseStageSplit(flags, profile, options, yours, megatron);
  const Partition& partition = split.partition;
  // A user's split that a format cannot express prints what it breaks instead of the text.
  std::string text, text_failure;
  if (flags.frameworkFormat() != FrameworkFormat::kJson) {
    try {
      text = formatSplit(format, profile, partition.layersPerStage());
    } catch (const Error& error) {
      if (yours.empty() || error.kind() != ErrorKind::kInput) throw;
      text_failure = error.what();
    }
  }
  const bool extras = options.recompute.mode != RecomputePolicy::Mode::kNone || options.data_parallel > 1;
  const std::vector<StageRecompute> stage_extras =
      extras ? stageRecompute(profile, options, partition, path) : std::vector<StageRecompute>{};
  const nlohmann::json document = partitionToJson(partition, frameworkOutputs(profile, partition.layersPerStage()));
  const std::optional<OutputPath> output = flags.shared.output();
  if (output) writeOutputFile(*output, toJsonText(document));
  if (flags.shared.json || flags.frameworkFormat() == FrameworkFormat::kJson) {
    std::cout << toJsonText(document);
    return;
  }
  std::cout << path << ": " << profile.layerCount() << " layers, " << assumptionsNote(flags.shared, options) << "\n";
  std::cout << communicationNote(flags.shared) << "\n";
  if (!tensor_parallel_note.empty()) std::cout << tensor_parallel_note << "\n";
  std::cout << (!yours.empty() ? "your split, as given (--split " + flags.shared.split_text + ")"
                : megatron     ? std::string("Megatron's rules: the embedding stays on the first stage, the final "
                                             "norm, output layer and loss on the last")
                               : rulesNote(options, profile))
            << "\n\n";
  printPartitionTable(std::cout, partition, layerNameRanges(partition, profile));
  printMemoryParts(std::cout, partition);
  if (extras) {
    std::cout << "\n";
    printRecomputeTable(std::cout, stage_extras, options);
  }
  printStageSplitNotes(std::cout, split, flags, options);
  const std::string broken = yours.empty() ? std::string() : ruleViolation(frameworkRules(profile), profile, yours);
  printRuleSetComparison(std::cout, profile, path, options, partition, yours, broken);
  if (!text_failure.empty()) {
    // The rule a given split breaks is printed just above: name it, not the rule again.
    const bool said = !broken.empty() && text_failure.find(broken) != std::string::npos;
    std::cout << "\n" << flags.format << ": cannot express your split"
              << (said ? " (the rule above); partition with --format " + flags.format + " for the best split it can run"
                       : ": " + text_failure)
              << "\n";
  } else if (flags.frameworkFormat() != FrameworkFormat::kJson) {
    printFormat(std::cout, flags.format, text);
  }
  if (output) std::cout << "\nwrote " << output->path << "\n";
}

}  // namespace

void addPartitionCommand(CLI::App& app) {
  auto* command = app.add_subcommand(
      "partition", "Split a profile into pipeline stages with the smallest slowest stage (exact)");
  auto flags = std::make_shared<PartitionCommandFlags>();
  addPartitionFlags(command, flags->shared);
  addSplitFlag(command, flags->shared);
  command->add_option("--format", flags->format,
                      "list, json, megatron, torchgpipe, fairscale, deepspeed, pippy or torchtitan: prints the "
                      "best split that framework can run, in its words")
      ->capture_default_str();
  command->add_flag("--megatron-first-last", flags->megatron_first_last,
                    "Only splits Megatron's flags can express without a layout (--decoder-first/last-pipeline-"
                    "num-layers or --account-for-embedding/loss-in-pipeline-split)");
  command->add_flag("--simulate", flags->simulate,
                    "Among splits with the optimal bottleneck, take the fastest in the event simulator");
  command->callback([flags] { runPartition(*flags); });
}

}  // namespace stagecut
