#pragma once

#include <string>
#include <vector>

#include "core/placement.h"
#include "core/profile.h"

namespace stagecut {

/// Reads a user's split back from any form stagecut prints (framework_formats.h), as layers per
/// stage of `profile`:
/// - a list: `4,3,1,1`;
/// - a Megatron layout, with or without its flag: `--pipeline-model-parallel-layout "Et*3|t*3|L"`,
///   expanded and checked as Megatron does (expandMegatronLayout; E first and L last of the
///   whole layout, each once); a layout with an empty stage, which Megatron runs, is refused by
///   name, as a stagecut split holds a layer per stage;
/// - Megatron's flags: `--decoder-first-pipeline-num-layers 3 --decoder-last-pipeline-num-layers 2`
///   or `--account-for-embedding-in-pipeline-split ...`, with `--pipeline-model-parallel-size N`
///   or, without it, `stages` (0: not known); the virtual stages from
///   `--num-virtual-stages-per-pipeline-rank` or `--num-layers-per-virtual-pipeline-stage`
///   (megatronVirtualStagesFromLayers). Each flag takes its value as `--flag value` or
///   `--flag=value`, as Megatron's argparse does; what Megatron refuses together (more than one of
///   the layout and the two virtual-stage flags, a layout with the first/last or account-for
///   flags, a virtual pipeline on one rank) is refused with Megatron's reason;
/// - DeepSpeed's `parts=[0, 4, 7, 8]` (its stage listing may follow), torchgpipe/fairscale's
///   `balance=[4, 3, 1]`, PiPPy's `split_spec={"block.3": SplitPoint.BEGINNING, ...}` and
///   torchtitan's `module_fqns_per_model_part=[["embed", ...], ...]`, over the layers before the
///   loss (the loss joins the last stage) or over every layer.
/// `flag` names the option in messages. Throws Error (input), in one line, for text in none of
/// these forms and for a split that does not cover the chain ("--split 4,4,4: 12 layers, the
/// profile has 9"). Rules are not checked here (ruleViolation does).
/// A Megatron layout of N x v stages on N ranks (N from --pipeline-model-parallel-size, else
/// `stages`) is a virtual pipeline: with `placement`, its N x v chunks are returned and
/// `placement` set to Placement::loop(N, v) (loop(stages, 1) for any other split); without, it is
/// refused.
std::vector<int> parseSplitText(const std::string& text, const Profile& profile, int stages, const std::string& flag,
                                Placement* placement = nullptr);

}  // namespace stagecut
