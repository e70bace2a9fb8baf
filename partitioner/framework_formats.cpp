#include "partitioner/framework_formats.h"

#include <cstdio>
#include <optional>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/suggest.h"
#include "core/units.h"
#include "partitioner/baselines.h"
#include "partitioner/megatron_layout.h"
#include "partitioner/split_rules.h"
#include "partitioner/split_score.h"
#include "prediction/tensor_parallel_comm.h"

namespace stagecut {

namespace {

std::string quoted(const std::string& name) {
  std::string text = "\"";
  for (char c : name) {
    if (c == '"' || c == '\\') text += '\\';
    text += c;
  }
  return text + "\"";
}

[[noreturn]] void refuseJson() {
  throw Error("--format json: the partition document is written by the command, not formatted here");
}

// A formatter's output did not describe the split it was given: a bug here, not the user's.
[[noreturn]] void coverageBug(const std::string& format, const std::string& why) {
  throw Error("--format " + format + ": internal check failed: " + why +
              "; please report it with the profile", ErrorKind::kRuntime);
}

void checkCounts(const std::string& format, const std::vector<int>& parsed,
                 const std::vector<int>& expected) {
  if (parsed != expected) {
    coverageBug(format, "it describes " + joinNumbers(parsed, ",") + " instead of " + joinNumbers(expected, ","));
  }
}

std::vector<int> parseIntegers(const std::string& text) {
  std::vector<int> values;
  std::string digits;
  for (char c : text + ",") {
    if (c >= '0' && c <= '9') {
      digits += c;
    } else if (!digits.empty()) {
      values.push_back(std::stoi(digits));
      digits.clear();
    }
  }
  return values;
}

void requireUniqueNames(const std::string& format, const Profile& profile) {
  std::set<std::string> seen;
  for (const LayerCost& layer : profile.layers) {
    if (!seen.insert(layer.name).second) {
      throw Error("--format " + format + ": layer name \"" + layer.name + "\" appears twice; " +
                  format + " names modules by name, so give the profile's layers unique names");
    }
  }
}

// The split as the loss-as-function frameworks see it: their module list ends before the loss,
// which they apply to the last stage's output.
std::vector<int> moduleCounts(const Profile& profile, std::vector<int> counts) {
  counts.back() -= trailingLossLayers(profile);
  return counts;
}

std::string lossNote(const Profile& profile) {
  const int loss = trailingLossLayers(profile);
  if (loss == 0) return "";
  const LayerCost& layer = profile.layers[profile.layerCount() - static_cast<std::size_t>(loss)];
  return layer.kind.empty() ? layer.name : layer.kind;
}

void checkRules(FrameworkFormat format, const Profile& profile, const std::vector<int>& counts) {
  const std::optional<SplitRules> rules = formatRules(format, profile);
  const std::string name = frameworkFormatName(format);
  if (!rules) {
    throw Error("--format " + name + ": Megatron's layout does not apply to this chain: " +
                megatronInapplicability(profile) +
                " (Megatron needs the embedding first and the loss last); use --format deepspeed, torchgpipe or list");
  }
  const std::string violation = ruleViolation(*rules, profile, counts);
  if (!violation.empty()) {
    throw Error("--format " + name + ": " + violation + "; partition with --format " + name +
                " for the best split it can run");
  }
}

std::string listFormat(const std::vector<int>& counts) {
  const std::string text = joinNumbers(counts, ",");
  checkCounts("list", parseIntegers(text), counts);
  return text;
}

std::string balanceFormat(const std::string& format, const Profile& profile, const std::vector<int>& counts) {
  const std::vector<int> modules = moduleCounts(profile, counts);
  const std::string text = "balance=[" + joinNumbers(modules, ", ") + "]";
  checkCounts(format, parseIntegers(text), modules);
  return text;
}

namespace {

// A tensor-parallel profile's shards run at its degree: Megatron is told so beside the split.
std::string megatronParallelText(const Profile& profile) {
  const int ranks = profileTensorParallel(profile);
  if (ranks < 2) return "";
  const bool sequence = profile.model.config.value("sequence_parallel", false);
  return " --tensor-model-parallel-size " + std::to_string(ranks) + (sequence ? " --sequence-parallel" : "");
}

}  // namespace

std::string megatronLayoutText(const Profile& profile, const std::vector<int>& counts) {
  const MegatronGroups groups = megatronGroups(profile);
  const std::string layout = megatronLayout(groups, counts);
  std::vector<int> parsed;
  for (const std::string& stage : expandMegatronLayout(layout)) {
    int layers = 0;
    for (char symbol : stage) {
      layers += symbol == 'E' ? groups.embedding_layers : symbol == 'L' ? groups.loss_layers : 1;
    }
    parsed.push_back(layers);
  }
  checkCounts("megatron", parsed, counts);
  return "--pipeline-model-parallel-layout \"" + layout + "\"" + megatronParallelText(profile);
}

// The layout, with the pipeline size that makes a layout of N x v stages a virtual pipeline.
std::string megatronLayoutLine(const Profile& profile, const std::vector<int>& counts, const Placement& placement) {
  return megatronLayoutText(profile, counts) +
         (placement.chunked() ? " --pipeline-model-parallel-size " + std::to_string(placement.ranks) : "");
}

std::string megatronFlagsText(const Profile& profile, const std::vector<int>& counts, const Placement& placement) {
  const std::string flags = megatronFlags(megatronGroups(profile), counts, placement.chunks_per_rank);
  return flags.empty() ? flags : flags + megatronParallelText(profile);
}

// Megatron refuses the layout and the flags together: one line or the other.
std::string megatronFormat(const Profile& profile, const std::vector<int>& counts, const Placement& placement) {
  const std::string flags = megatronFlagsText(profile, counts, placement);
  return megatronLayoutLine(profile, counts, placement) + (flags.empty() ? "" : "\nor\n" + flags);
}

std::string deepspeedFormat(const Profile& profile, const std::vector<int>& counts) {
  const std::vector<int> modules = moduleCounts(profile, counts);
  const std::vector<int> parts = boundaryList(modules);
  std::ostringstream text;
  text << "parts=[" << joinNumbers(parts, ", ") << "]";
  std::vector<int> listed;
  for (std::size_t s = 0; s + 1 < parts.size(); ++s) {
    // DeepSpeed's PipelineModule._partition_layers prints these lines on rank 0.
    text << "\nstage=" << s << " layers=" << parts[s + 1] - parts[s];
    listed.push_back(0);
    for (int k = parts[s]; k < parts[s + 1]; ++k) {
      const LayerCost& layer = profile.layers[k];
      char index[16];
      std::snprintf(index, sizeof index, "%2d", k);
      text << "\n    " << index << ": " << (layer.kind.empty() ? layer.name : layer.kind);
      ++listed.back();
    }
  }
  const std::string loss = lossNote(profile);
  if (!loss.empty()) text << "\n  loss: " << loss;
  std::vector<int> from_parts;
  for (std::size_t s = 0; s + 1 < parts.size(); ++s) from_parts.push_back(parts[s + 1] - parts[s]);
  checkCounts("deepspeed", from_parts, modules);
  checkCounts("deepspeed", listed, modules);
  return text.str();
}

std::string pippyFormat(const Profile& profile, const std::vector<int>& counts) {
  requireUniqueNames("pippy", profile);
  std::string text = "split_spec={";
  const std::vector<int> parts = boundaryList(counts);
  std::vector<int> parsed;
  for (std::size_t s = 1; s + 1 < parts.size(); ++s) {
    text += (s > 1 ? ", " : "") + quoted(profile.layers[parts[s]].name) + ": SplitPoint.BEGINNING";
    parsed.push_back(parts[s] - parts[s - 1]);
  }
  parsed.push_back(static_cast<int>(profile.layerCount()) - parts[parts.size() - 2]);
  checkCounts("pippy", parsed, counts);
  return text + "}";
}

std::string torchtitanFormat(const Profile& profile, const std::vector<int>& counts) {
  requireUniqueNames("torchtitan", profile);
  std::string text = "module_fqns_per_model_part=[";
  const std::vector<int> modules = moduleCounts(profile, counts);
  const std::vector<int> parts = boundaryList(modules);
  std::vector<int> parsed;
  std::set<std::string> named;
  for (std::size_t s = 0; s + 1 < parts.size(); ++s) {
    text += s ? ", [" : "[";
    parsed.push_back(0);
    for (int k = parts[s]; k < parts[s + 1]; ++k) {
      text += (k > parts[s] ? ", " : "") + quoted(profile.layers[k].name);
      named.insert(profile.layers[k].name);
      ++parsed.back();
    }
    text += "]";
  }
  checkCounts("torchtitan", parsed, modules);
  if (named.size() != profile.layerCount() - static_cast<std::size_t>(trailingLossLayers(profile))) {
    coverageBug("torchtitan", "a module is missing");
  }
  return text + "]";
}

}  // namespace

const std::vector<FrameworkFormat>& allFrameworkFormats() {
  static const std::vector<FrameworkFormat> formats{
      FrameworkFormat::kList,      FrameworkFormat::kJson,      FrameworkFormat::kMegatron,
      FrameworkFormat::kTorchgpipe, FrameworkFormat::kFairscale, FrameworkFormat::kDeepspeed,
      FrameworkFormat::kPippy,     FrameworkFormat::kTorchtitan};
  return formats;
}

const char* frameworkFormatName(FrameworkFormat format) {
  switch (format) {
    case FrameworkFormat::kList: return "list";
    case FrameworkFormat::kJson: return "json";
    case FrameworkFormat::kMegatron: return "megatron";
    case FrameworkFormat::kTorchgpipe: return "torchgpipe";
    case FrameworkFormat::kFairscale: return "fairscale";
    case FrameworkFormat::kDeepspeed: return "deepspeed";
    case FrameworkFormat::kPippy: return "pippy";
    case FrameworkFormat::kTorchtitan: return "torchtitan";
  }
  throw Error("a framework format without a name", ErrorKind::kRuntime);
}

FrameworkFormat parseFrameworkFormat(const std::string& name) {
  std::vector<std::string> names;
  for (FrameworkFormat format : allFrameworkFormats()) {
    if (name == frameworkFormatName(format)) return format;
    names.push_back(frameworkFormatName(format));
  }
  throw Error("--format: unknown format '" + name + "'" + unknownNameHint(name, names));
}

namespace {

// A chunked split in the words of the frameworks that run chunks on ranks: N x v stages, each
// framework told N (Megatron's virtual size follows from the layout's length) and the schedule.
std::string chunkedFormat(FrameworkFormat format, const Profile& profile, const std::vector<int>& counts,
                          const Placement& placement, ScheduleKind schedule) {
  const std::string ranks = std::to_string(placement.ranks);
  const bool loop = placement.style == Placement::Style::kLoop;
  const std::string pytorch_name = pytorchScheduleName(schedule);
  const std::string name = frameworkFormatName(format);
  switch (format) {
    case FrameworkFormat::kList: return listFormat(counts);
    case FrameworkFormat::kMegatron: {
      if (!loop) throw Error("megatron: Megatron-LM runs no V-shaped schedule; use --format torchtitan");
      const std::string refusal = megatronVirtualPipelineRefusal(placement.ranks, placement.chunks_per_rank);
      if (!refusal.empty()) throw Error("--format megatron: " + refusal + "; use --format torchtitan or pippy");
      return megatronFormat(profile, counts, placement);
    }
    case FrameworkFormat::kTorchtitan:
      return torchtitanFormat(profile, counts) + "\npipeline_parallel_degree=" + ranks +
             "\npipeline_parallel_schedule=\"" + pytorch_name + "\"";
    case FrameworkFormat::kPippy:
      return pippyFormat(profile, counts) + "\nschedule=Schedule" + pytorch_name + ", " +
             std::to_string(placement.chunks_per_rank) + " stages per rank (" +
             (loop ? "stage i on rank i % " + ranks : "rank r holds stages r and " +
                                                         std::to_string(placement.chunkCount() - 1) + " - r") + ")";
    case FrameworkFormat::kDeepspeed:
    case FrameworkFormat::kTorchgpipe:
    case FrameworkFormat::kFairscale:
      throw Error(name + ": " + (format == FrameworkFormat::kDeepspeed ? "DeepSpeed's PipelineModule runs" : name + " runs") +
                  " one stage per rank, not " + std::to_string(placement.chunks_per_rank) +
                  " chunks; use --format " + (loop ? "megatron, torchtitan or pippy" : "torchtitan or pippy"));
    case FrameworkFormat::kJson: break;
  }
  refuseJson();
}

}  // namespace

std::string formatSplit(FrameworkFormat format, const Profile& profile,
                        const std::vector<int>& layers_per_stage, const std::optional<Placement>& placement,
                        std::optional<ScheduleKind> schedule) {
  checkSplitShape(layers_per_stage, static_cast<int>(profile.layerCount()),
                  static_cast<int>(layers_per_stage.size()), "--format");
  if (format == FrameworkFormat::kJson) {
    refuseJson();
  }
  checkRules(format, profile, layers_per_stage);
  if (placement && placement->chunked()) {
    return chunkedFormat(format, profile, layers_per_stage, *placement,
                         schedule.value_or(scheduleRunningChunks(placement->style)));
  }
  const std::string name = frameworkFormatName(format);
  switch (format) {
    case FrameworkFormat::kList: return listFormat(layers_per_stage);
    case FrameworkFormat::kMegatron:
      return megatronFormat(profile, layers_per_stage, Placement::loop(static_cast<int>(layers_per_stage.size()), 1));
    case FrameworkFormat::kTorchgpipe:
    case FrameworkFormat::kFairscale: return balanceFormat(name, profile, layers_per_stage);
    case FrameworkFormat::kDeepspeed: return deepspeedFormat(profile, layers_per_stage);
    case FrameworkFormat::kPippy: return pippyFormat(profile, layers_per_stage);
    case FrameworkFormat::kTorchtitan: return torchtitanFormat(profile, layers_per_stage);
    case FrameworkFormat::kJson: break;
  }
  refuseJson();
}

FrameworkOutputs frameworkOutputs(const Profile& profile, const std::vector<int>& layers_per_stage,
                                  const std::optional<Placement>& placement, std::optional<ScheduleKind> schedule) {
  FrameworkOutputs outputs;
  for (FrameworkFormat format : allFrameworkFormats()) {
    if (format == FrameworkFormat::kJson) continue;
    try {
      const std::string text = formatSplit(format, profile, layers_per_stage, placement, schedule);
      if (format != FrameworkFormat::kMegatron) {
        outputs[frameworkFormatName(format)] = text;
        continue;
      }
      // Two keys: Megatron refuses the layout and the flags together.
      const Placement ranks = placement ? *placement : Placement::loop(static_cast<int>(layers_per_stage.size()), 1);
      outputs["megatron"] = megatronLayoutLine(profile, layers_per_stage, ranks);
      const std::string flags = megatronFlagsText(profile, layers_per_stage, ranks);
      if (!flags.empty()) outputs["megatron-flags"] = flags;
    } catch (const Error& error) {
      if (error.kind() != ErrorKind::kInput) throw;  // a coverage bug must not pass silently
    }
  }
  return outputs;
}

}  // namespace stagecut
