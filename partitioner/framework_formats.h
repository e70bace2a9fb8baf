#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/profile.h"

namespace stagecut {

/// The `--format` names: list, json, megatron, torchgpipe, fairscale, deepspeed, pippy,
/// torchtitan. ("json" is the partition document itself; the CLI writes it.)
const std::vector<std::string>& frameworkFormatNames();

/// Throws Error (input) naming `--format` and the nearest known name unless `name` is one.
void checkFrameworkFormatName(const std::string& name);

/// The split in framework `format`'s own words (every name but "json"):
/// - list: `3,5,5,3`
/// - megatron: `--pipeline-model-parallel-layout "Et*3|t*5|t*5|t*3L"`, and on a second line the
///   equivalent first/last flags when the middle stages are equal
/// - torchgpipe, fairscale: `balance=[3, 5, 5, 3]`
/// - deepspeed: `parts=[0, 3, 8, 13, 16]`, then each stage's layers as DeepSpeed prints them
/// - pippy: `split_spec={"block.3": SplitPoint.BEGINNING, ...}` (torch.distributed.pipelining)
/// - torchtitan: `module_fqns_per_model_part=[["embed", "block.0"], ...]`
/// Each text is parsed back and checked to cover every layer exactly once before it is
/// returned. Throws Error (input) when the format cannot express the split (duplicate layer
/// names for pippy and torchtitan, a separated embedding or loss for megatron).
std::string formatSplit(const std::string& format, const Profile& profile,
                        const std::vector<int>& layers_per_stage);

/// formatSplit for every format that can express the split (json excluded): the `outputs` map
/// of a partition document.
std::map<std::string, std::string> frameworkOutputs(const Profile& profile,
                                                    const std::vector<int>& layers_per_stage);

}  // namespace stagecut
