#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/partition.h"
#include "core/profile.h"
#include "schedule/schedule_kind.h"

namespace stagecut {

/// The `--format` outputs: stagecut's own list and partition document, and each training
/// framework's words. Every switch over it names each one (-Wswitch), so a format added here is
/// written everywhere a format is handled, not taken for another.
enum class FrameworkFormat {
  kList,        ///< "list": layers per stage
  kJson,        ///< "json": the partition document itself (the CLI writes it)
  kMegatron,    ///< "megatron": Megatron-LM's layout, or its flags
  kTorchgpipe,  ///< "torchgpipe": balance over the nn.Sequential
  kFairscale,   ///< "fairscale": the same balance
  kDeepspeed,   ///< "deepspeed": PipelineModule's parts
  kPippy,       ///< "pippy": torch.distributed.pipelining's split_spec
  kTorchtitan,  ///< "torchtitan": module names per model part
};

/// Every format, in the order help texts and messages list them.
const std::vector<FrameworkFormat>& allFrameworkFormats();

/// "list", "json", "megatron", "torchgpipe", "fairscale", "deepspeed", "pippy" or "torchtitan":
/// the `--format` name, and the key of a partition document's `outputs`.
const char* frameworkFormatName(FrameworkFormat format);

/// The format called `name`. Throws Error (input) naming `--format` and the nearest known name:
/// "--format: unknown format 'yaml'; use one of: list, json, ...".
FrameworkFormat parseFrameworkFormat(const std::string& name);

/// The split in framework `format`'s own words (every format but json, which throws Error):
/// - list: `3,5,5,3`
/// - megatron: `--pipeline-model-parallel-layout "Et*3|t*5|t*5|t*3L"`, then "or" and the flags
///   that express the same split without a layout where some do (megatronFlags)
/// - torchgpipe, fairscale: `balance=[3, 5, 5, 2]` over the `nn.Sequential`, which ends before
///   the loss
/// - deepspeed: `parts=[0, 3, 8, 13, 15]` over PipelineModule's layers (the loss is its
///   `loss_fn`), then each stage's layers and the loss as DeepSpeed prints them
/// - pippy: `split_spec={"block.3": SplitPoint.BEGINNING, ...}` (torch.distributed.pipelining)
/// - torchtitan: `module_fqns_per_model_part=[["embed", "block.0"], ...]` (no loss: a function)
/// Each text is parsed back and checked to cover every layer exactly once before it is
/// returned. Throws Error (input) when the split breaks the format's rules (formatRules: a
/// stage of only the loss, a split embedding or `L`, Megatron on a chain without an embedding
/// first and the loss last) or the format cannot name the layers (duplicate names for pippy
/// and torchtitan).
/// A chunked split (`placement` with v > 1; the stages are its N x v chunks in chain order) prints
/// as the frameworks that run chunks take it: megatron the layout of N x v stages with
/// `--pipeline-model-parallel-size N` (Megatron derives the virtual size from the layout's
/// length), torchtitan the N x v module lists with `pipeline_parallel_degree` and
/// `pipeline_parallel_schedule`, pippy the split points with its schedule class (PyTorch's name
/// of `schedule`, the schedule that runs the chunks; absent, the placement's own:
/// scheduleRunningChunks); deepspeed, torchgpipe and fairscale, which run one stage per rank,
/// throw Error (input), as megatron does for v > 1 on one rank (megatronVirtualPipelineRefusal).
std::string formatSplit(FrameworkFormat format, const Profile& profile,
                        const std::vector<int>& layers_per_stage,
                        const std::optional<Placement>& placement = std::nullopt,
                        std::optional<ScheduleKind> schedule = std::nullopt);

/// Every format that can express the split (json excluded): the `outputs` map of a partition
/// document. Megatron's two alternatives are two keys: "megatron" (the layout) and
/// "megatron-flags".
FrameworkOutputs frameworkOutputs(const Profile& profile, const std::vector<int>& layers_per_stage,
                                  const std::optional<Placement>& placement = std::nullopt,
                                  std::optional<ScheduleKind> schedule = std::nullopt);

}  // namespace stagecut
