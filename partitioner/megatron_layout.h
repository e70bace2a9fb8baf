#pragma once

#include <string>
#include <vector>

#include "core/profile.h"
#include "partitioner/cost_model.h"

namespace stagecut {

/// How Megatron-LM sees a layer chain: leading embedding layers ('E'), transformer blocks ('t'),
/// and trailing final norm / output layer / loss ('L'), which Megatron runs as one unit each.
struct MegatronGroups {
  int embedding_layers = 0;  ///< leading layers whose kind or name mentions "embed"
  int block_layers = 0;      ///< everything between
  int loss_layers = 0;       ///< trailing layers mentioning norm, head, output, logits or loss
};

/// Classifies the profile's layers by kind and name (case-insensitive).
MegatronGroups megatronGroups(const Profile& profile);

/// The profile with its embedding layers merged into one layer and its norm/head/loss layers
/// merged into one, so that any split of the result is one Megatron can express.
Profile megatronView(const Profile& profile, const MegatronGroups& groups);

/// Layers per stage of the original profile from a split of megatronView().
std::vector<int> fromMegatronView(std::vector<int> view_layers_per_stage, const MegatronGroups& groups);

/// `"Et*3|t*5|t*5|t*3L"`: the --pipeline-model-parallel-layout of a split of the original
/// profile (runs of 4 or more equal symbols written as x*N). Throws Error (input) when the split
/// separates the embedding layers or the norm/head/loss layers, which Megatron cannot express.
std::string megatronLayout(const MegatronGroups& groups, const std::vector<int>& layers_per_stage);

/// Expands a layout string ("Et*3|tt") into one symbol string per stage ("Ettt", "tt").
std::vector<std::string> expandMegatronLayout(const std::string& layout);

/// `--decoder-first-pipeline-num-layers A --decoder-last-pipeline-num-layers B` when the split
/// has equal, non-empty middle stages (any split with 2 stages) and A, B >= 1 (Megatron rejects
/// 0), else "".
std::string megatronFirstLastFlags(const MegatronGroups& groups, const std::vector<int>& layers_per_stage);

/// The best split (SplitScore order, then fewer layers earlier) among those the two
/// first/last flags can express: embedding + A blocks, equal middle stages, B blocks + loss,
/// with A, B >= 1.
/// Empty when none exists or none fits the memory caps.
std::vector<int> bestFirstLastSplit(const CostModel& model, const MegatronGroups& groups);

}  // namespace stagecut
