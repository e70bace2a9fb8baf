#include "cli/partition_flags.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/profile_json.h"
#include "core/units.h"
#include "partitioner/split_text.h"
#include "schedule/schedule_kind.h"

namespace stagecut {

void addPartitionFlags(CLI::App* command, PartitionFlags& flags) {
  command->add_option("profile", flags.profile_path, "A stagecut.profile file")->required();
  flags.microbatch_size_option = command->add_option(
      "--microbatch-size", flags.microbatch_size,
      "Use the costs at this measured microbatch size (a profile measured at several; default: the size "
      "its layers hold)");
  flags.stages_option =
      command->add_option("--stages,-n", flags.stages, "Pipeline stages N (required unless --split gives them)");
  flags.microbatches_option = command->add_option("--microbatches,-m", flags.microbatches,
                      "Microbatches per step M (default: 4 x stages)");
  command->add_option("--schedule", flags.schedule,
                      scheduleNameList() + ": how many microbatches' activations each stage keeps (and, "
                      "with chunks, how they sit on the ranks)")
      ->capture_default_str();
  flags.chunks_option =
      command->add_option("--chunks", flags.chunks_flag, "Model chunks per rank for interleaved-1f1b (zb-v and dualpipe-v always run 2, in a V)")->capture_default_str();
  command->add_option("--memory-cap", flags.memory_cap,
                      "Memory per stage, e.g. 80GiB, or one per stage: 80GiB,80GiB,40GiB,80GiB");
  command->add_option("--bandwidth", flags.bandwidth,
                      "Link bandwidth between stages, e.g. 25GB/s (default: no communication cost)");
  command->add_option("--latency", flags.latency, "Latency per message, e.g. 10us");
  addTensorParallelLinkFlags(command, flags.tp_bandwidth, flags.tp_latency);
  command->add_option("--stage-speed", flags.stage_speed,
                      "Relative device speed per stage, e.g. 1,1,0.5,1 (default: all 1)");
  command->add_option("--optimizer", flags.optimizer,
                      "none, sgd, sgd-momentum, adam or adam-mixed: optimizer state per parameter and its step's temporaries")
      ->capture_default_str();
  command->add_option("--bytes-per-param", flags.bytes_per_param,
                      "Weights + gradients + optimizer state per parameter, bytes (overrides --optimizer)");
  // A bare --recompute means full, as it did when it was a flag.
  command->add_option("--recompute", flags.recompute_spec,
                      "Activation recomputation: none (when not given), full (a bare --recompute), "
                      "selective:<layer kinds> (e.g. selective:TransformerBlock), or auto / "
                      "auto:<layer kinds> (per stage, the cheapest of none, selective and full "
                      "that fits the memory cap)")
      ->expected(0, 1)
      ->default_str("full")
      ->option_text("[MODE]");
  command->add_option("--data-parallel,-d", flags.data_parallel,
                      "Replicas D of every stage: charges each stage's gradient all-reduce where "
                      "it does not overlap")
      ->capture_default_str();
  command->add_option("--dp-bandwidth", flags.dp_bandwidth,
                      "All-reduce link bandwidth per rank (with --data-parallel)")
      ->capture_default_str();
  command->add_option("--dp-latency", flags.dp_latency,
                      "All-reduce latency per ring step (with --data-parallel)")
      ->capture_default_str();
  command->add_flag("--any-split", flags.any_split,
                    "The free optimum, for a runtime that runs any split (stagecut validate): no framework's "
                    "rules (by default the split runs in every framework stagecut prints)");
  command->add_flag("--json", flags.json, "Print the JSON document instead of tables");
  flags.output_option =
      command->add_option("-o,--output", flags.output_path, "Also write the JSON document to this file");
}

std::optional<int> PartitionFlags::chunksGiven() const {
  if (chunks_option == nullptr || chunks_option->count() == 0) return std::nullopt;
  return chunks_flag;
}

std::optional<OutputPath> PartitionFlags::output() const {
  if (output_option == nullptr || output_option->count() == 0) return std::nullopt;
  return OutputPath(output_path, "-o", {{"the input profile", profile_path}});
}

void addSplitFlag(CLI::App* command, PartitionFlags& flags) {
  flags.split_option = command->add_option(
      "--split", flags.split_text,
      "Your own split, in any form stagecut prints: 4,3,1,1, a Megatron layout or its flags, "
      "parts=[...], balance=[...], split_spec={...} or module_fqns_per_model_part=[...]");
}

std::string rulesNote(const PartitionOptions& options, const Profile& profile) {
  const SplitRules rules = resolvedSplitRules(profile, options);
  if (!options.rules) {
    return std::string("compute split: one every framework below can run (") +
           (rules.set == SplitRuleSet::kMegatron ? "Megatron's embedding first and norm + head + loss last; " : "") +
           "the loss with the last stage)";
  }
  if (*options.rules == SplitRuleSet::kAny) {
    return "free split: any split (stagecut validate runs it; frameworks may not)";
  }
  return std::string("compute split: by ") + ruleSetRunners(*options.rules) + "'s rules";
}

// The placement a user's split fixes: a virtual-pipeline layout's own chunks, one chunk per rank
// otherwise; --chunks and --schedule must agree with it, not quietly replace it.
Placement splitPlacement(const PartitionFlags& flags, ScheduleKind schedule, const Placement& split) {
  const std::string text = "--split " + flags.split_text;
  if (const std::optional<int> chunks = flags.chunksGiven(); chunks && *chunks != split.chunks_per_rank) {
    throw Error("--chunks " + std::to_string(*chunks) + ": " + text + " places " + placementWords(split) +
                "; drop --chunks (the split decides them)");
  }
  if (!split.chunked() && runsChunks(schedule)) {
    throw Error("--schedule " + std::string(scheduleName(schedule)) + ": " + text + " places one chunk on each of its " +
                std::to_string(split.ranks) + " ranks; " + scheduleName(schedule) +
                (choosesChunks(schedule) ? " runs several (give the layout of N x v stages with --pipeline-model-parallel-size N)"
                                         : " runs 2 in a V (partition --schedule " + std::string(scheduleName(schedule)) +
                                               " makes one)") +
                ", or use --schedule 1f1b");
  }
  checkRunsPlacement(schedule, split, text);
  return split;
}

PartitionOptions resolvePartitionFlags(const PartitionFlags& flags, const Profile& profile,
                                       std::vector<int>* user_split, Placement* user_placement) {
  if (const auto output = flags.output()) checkOutputPath(*output);
  // A command that registers --stages itself (report) always has one.
  const bool stages_given = flags.stages_option == nullptr || flags.stages_option->count() > 0;
  std::vector<int> split;
  Placement placement;
  if (flags.split_option != nullptr && flags.split_option->count() > 0) {
    split = parseSplitText(flags.split_text, profile, stages_given ? std::max(flags.stages, 1) : 0, "--split",
                           user_placement ? &placement : nullptr);
  }
  if (!placement.chunked()) placement = Placement::loop(static_cast<int>(split.size()), 1);
  if (user_split) *user_split = split;
  if (user_placement) *user_placement = placement;
  if (!stages_given && split.empty()) {
    throw Error("--stages is required: give the pipeline's stage count, e.g. --stages 4");
  }
  const int stages = stages_given ? flags.stages : placement.chunked() ? placement.ranks : static_cast<int>(split.size());
  checkStageCount(stages, profile.layerCount());
  PartitionOptions options;
  const bool microbatches_given = flags.microbatches_option && flags.microbatches_option->count() > 0;
  options.microbatches = microbatches_given ? flags.microbatches : 4 * stages;
  if (options.microbatches < 1) {
    throw Error("--microbatches " + std::to_string(flags.microbatches) +
                ": a step needs at least 1 microbatch");
  }
  options.schedule = parseScheduleName(flags.schedule);
  options.placement = split.empty() ? schedulePlacement(options.schedule, stages, flags.chunksGiven())
                                    : splitPlacement(flags, options.schedule, placement);
  if (!flags.recompute_spec.empty()) {
    options.recompute = parseRecomputePolicy(flags.recompute_spec, profile);
  } else if (flags.recompute) {
    options.recompute.mode = RecomputePolicy::Mode::kFull;
  }
  if (flags.data_parallel < 1) {
    throw Error("--data-parallel " + std::to_string(flags.data_parallel) +
                ": each stage needs at least 1 replica; use --data-parallel 1 for a plain pipeline");
  }
  options.data_parallel = flags.data_parallel;
  options.dp_bandwidth_bytes_per_s = parseBandwidthBytesPerS(flags.dp_bandwidth, "--dp-bandwidth");
  options.dp_latency_ms = parseDurationMs(flags.dp_latency, "--dp-latency");

  if (!flags.bandwidth.empty()) {
    options.bandwidth_bytes_per_s = parseBandwidthBytesPerS(flags.bandwidth, "--bandwidth");
  }
  if (!flags.latency.empty()) options.latency_ms = parseDurationMs(flags.latency, "--latency");
  if (!flags.stage_speed.empty()) options.stage_speed = parseStageSpeeds(flags.stage_speed, stages);
  const OptimizerMemory optimizer = optimizerMemory(flags.optimizer);
  options.bytes_per_param = optimizer.bytes_per_param;
  options.optimizer_step_temporaries = optimizer.step_temporaries;
  if (flags.bytes_per_param < 0) {
    throw Error("--bytes-per-param " + formatMs(flags.bytes_per_param) + ": must not be negative");
  }
  if (!std::isfinite(flags.bytes_per_param)) {
    throw Error("--bytes-per-param " + formatMs(flags.bytes_per_param) +
                ": must be a finite number of bytes, e.g. 16 for fp32 Adam");
  }
  if (flags.bytes_per_param > 0) options.bytes_per_param = flags.bytes_per_param;
  if (!flags.memory_cap.empty()) options.memory_cap_bytes = parseMemoryCaps(flags.memory_cap, stages);
  if (flags.any_split) options.rules = SplitRuleSet::kAny;
  return options;
}

void addTensorParallelLinkFlags(CLI::App* command, std::string& bandwidth, std::string& latency) {
  command->add_option("--tp-bandwidth", bandwidth,
                      "A tensor-parallel profile's collectives: the link between its ranks, e.g. 300GB/s (default: not priced)");
  command->add_option("--tp-latency", latency, "Latency per step of a tensor-parallel ring collective, e.g. 5us");
}

TensorParallelLink tensorParallelLink(const std::string& bandwidth, const std::string& latency) {
  TensorParallelLink link;
  if (!bandwidth.empty()) link.bandwidth_bytes_per_s = parseBandwidthBytesPerS(bandwidth, "--tp-bandwidth");
  if (!latency.empty()) {
    if (bandwidth.empty()) throw Error("--tp-latency " + latency + ": prices the collectives with --tp-bandwidth; give both");
    link.latency_ms = parseDurationMs(latency, "--tp-latency");
  }
  return link;
}

Profile readPricedProfile(const std::string& path, int microbatch_size, const std::string& tp_bandwidth,
                          const std::string& tp_latency, std::string* note) {
  const TensorParallelLink link = tensorParallelLink(tp_bandwidth, tp_latency);
  Profile profile = readProfileFile(path, microbatch_size);
  if (link.bandwidth_bytes_per_s > 0 && profileTensorParallel(profile) < 2) {
    throw Error("--tp-bandwidth: " + path + " was not profiled with --tensor-parallel; its layers have no collectives to price");
  }
  if (note) *note = tensorParallelNote(profile, link);
  priceTensorParallelComm(profile, link);
  return profile;
}

std::string communicationNote(const PartitionFlags& flags) {
  if (flags.bandwidth.empty() && flags.latency.empty()) {
    return "no communication cost modelled (add --bandwidth 25GB/s --latency 10us to charge it)";
  }
  std::string note = "communication charged per stage boundary, both directions: ";
  note += flags.bandwidth.empty() ? "no bandwidth limit" : flags.bandwidth;
  note += flags.latency.empty() ? ", no latency" : ", " + flags.latency + " latency per message";
  return note;
}

std::string assumptionsNote(const PartitionFlags& flags, const PartitionOptions& options) {
  const Placement& placement = options.placement;
  std::string note = std::to_string(placement.ranks) + " stages, " +
                     std::to_string(options.microbatches) + " microbatches, " +
                     scheduleName(options.schedule) +
                     (placement.chunked() ? " (" + std::to_string(placement.chunks_per_rank) + " chunks per rank)" : std::string()) + ", " +
                     (flags.bytes_per_param > 0 ? formatMs(flags.bytes_per_param) + " bytes/param"
                                                : flags.optimizer + " state");
  if (options.recompute.mode != RecomputePolicy::Mode::kNone) {
    note += ", recompute " + options.recompute.text();
  }
  if (options.data_parallel > 1) {
    note += ", " + std::to_string(options.data_parallel) + " data-parallel replicas (all-reduce " +
            flags.dp_bandwidth + ", " + flags.dp_latency + " per ring step)";
  }
  if (!flags.memory_cap.empty()) note += ", memory cap " + flags.memory_cap;
  if (!flags.stage_speed.empty()) note += ", stage speeds " + flags.stage_speed;
  return note;
}

}  // namespace stagecut
