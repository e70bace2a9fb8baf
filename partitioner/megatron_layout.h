#pragma once

#include <optional>
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

/// `"Et*3|t*5|t*5|t*3L"`: the --pipeline-model-parallel-layout of a split of the original
/// profile (runs of 4 or more equal symbols written as x*N). Throws Error (input) when the split
/// separates the embedding layers or the norm/head/loss layers, which Megatron cannot express.
std::string megatronLayout(const MegatronGroups& groups, const std::vector<int>& layers_per_stage);

/// Expands a layout string into one symbol string per stage, as Megatron's parser does
/// (PipelineParallelLayerLayout.parse_str_to_list, megatron/core/transformer/
/// pipeline_parallel_layer_layout.py): commas are cosmetic, "(group)*N" repeats a group (groups
/// do not nest), then "x*N" any one character, '|' too, N = 0 dropping it; then each '|' ends a
/// stage, so a stage may be empty: "Et*2|(t|)*2,L" gives "Ett", "t", "t", "L" and "E|t||L" gives
/// "E", "t", "", "L". Symbols are not checked here (a digit left over is kept). Throws Error
/// (input) with the reason alone (the caller names the flag) where Megatron's parser would meet
/// a '(', ')' or '*' left over (a repeat without its number or symbol, an unmatched, empty or
/// nested group), or for an expansion of more than a million symbols.
std::vector<std::string> expandMegatronLayout(const std::string& layout);

/// "" when Megatron runs `chunks_per_rank` model chunks on each of `ranks` pipeline ranks, else
/// why not, in words: a virtual pipeline (2 chunks or more) needs 2 ranks or more (arguments.py
/// asserts pipeline-model-parallel size > 1 for the interleaved schedule).
std::string megatronVirtualPipelineRefusal(int ranks, int chunks_per_rank);

/// The virtual stages per rank v that Megatron derives from `--num-layers-per-virtual-pipeline-stage`
/// k (arguments.py): the B blocks, plus one for each accounted embedding and loss, divide evenly
/// over the N `stages`, and each rank's share divides by k; v = share / k (v = 1: no virtual
/// pipeline). Throws Error (input) with the reason, naming the flag, when Megatron refuses it:
/// with the first/last flags (`uneven`), k < 1, or a share that does not divide.
int megatronVirtualStagesFromLayers(int blocks, int stages, bool account_for_embedding, bool account_for_loss,
                                    bool uneven, int layers_per_virtual_stage);

/// The flags that give Megatron this split without a layout (blocks per stage b, B blocks, N
/// stages), the simplest that express it exactly, else "":
/// - `--num-layers B --pipeline-model-parallel-size N` alone: every stage B / N blocks;
/// - with `--account-for-embedding-in-pipeline-split` and/or `--account-for-loss-in-pipeline-split`:
///   the embedding (loss) counts as one layer of an even split of B + 1 (+ 1), so the first
///   (last) stage builds one block fewer;
/// - with `--decoder-first-pipeline-num-layers A` and/or `--decoder-last-pipeline-num-layers Z`
///   (each >= 1): the other stages share the rest evenly, at least one block each.
/// Megatron refuses the two kinds together and either with a layout, so the text holds one kind.
/// With `virtual_stages` v > 1, `layers_per_chunk` lists the N x v chunks of a virtual pipeline
/// (chunk c on rank c mod N) and the flags add `--num-virtual-stages-per-pipeline-rank v` under
/// Megatron's rules for it (megatronBlocksFromFlags).
std::string megatronFlags(const MegatronGroups& groups, const std::vector<int>& layers_per_chunk,
                          int virtual_stages = 1);

/// Blocks per stage that Megatron builds from megatronFlags()' flags (B blocks, N stages), by
/// its documented rules; empty when it would refuse them. The inverse the tests and --split use.
/// With `virtual_stages` v > 1 (Megatron's get_num_layers_to_build with a virtual pipeline), the
/// N x v chunks' blocks in chain order: each rank's total, as without chunks, divided evenly
/// over its v chunks (A, Z and the middle ranks' share each a multiple of v); with the
/// account-for flags every chunk builds (B + e + l) / (N v), chunk 0 one fewer for the
/// embedding and the last chunk one fewer for the loss. N = 1 with v > 1 is refused.
std::vector<int> megatronBlocksFromFlags(int blocks, int stages, bool account_for_embedding,
                                         bool account_for_loss, std::optional<int> first, std::optional<int> last,
                                         int virtual_stages = 1);

/// The best split (SplitScore order, then fewer layers earlier) among those megatronFlags() can
/// express and the model allows (its cuts and memory caps). Empty when none exists.
std::vector<int> bestFlagsSplit(const CostModel& model, const MegatronGroups& groups);

}  // namespace stagecut
