#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/partition.h"
#include "core/profile.h"
#include "schedule/schedule_kind.h"

namespace stagecut {

/// The `--format` names: list, json, megatron, torchgpipe, fairscale, deepspeed, pippy,
/// torchtitan. ("json" is the partition document itself; the CLI writes it.)
const std::vector<std::string>& frameworkFormatNames();

/// Throws Error (input) naming `--format` and the nearest known name unless `name` is one.
void checkFrameworkFormatName(const std::string& name);

/// The split in framework `format`'s own words (every name but "json"):
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
/// throw Error (input).
std::string formatSplit(const std::string& format, const Profile& profile,
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
