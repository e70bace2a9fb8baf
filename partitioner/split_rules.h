#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/profile.h"
#include "partitioner/framework_formats.h"

namespace stagecut {

/// The rule sets the partitioner solves under, each written down once from its frameworks'
/// documentation (docs/partitioner.md):
/// - kAny: any contiguous split (stagecut's own validate runs it);
/// - kLossWithLast: DeepSpeed (`loss_fn`), torchgpipe and fairscale (the loss outside the
///   `nn.Sequential`), PiPPy and torchtitan (a loss function given to the schedule) apply the
///   loss to the last stage's output, so the loss layers share the last stage with at least
///   one layer before them;
/// - kMegatron: Megatron-LM's embedding `E` on the first stage and final norm + output layer +
///   loss `L` together on the last, transformer layers `t` in between.
enum class SplitRuleSet { kAny, kLossWithLast, kMegatron };

/// "any", "loss-with-last", "megatron".
const char* ruleSetName(SplitRuleSet set);

/// Who runs splits under the rules, for tables: "Megatron-LM", "DeepSpeed, torchgpipe, ...".
const char* ruleSetRunners(SplitRuleSet set);

/// Which stages a runtime can build from a chain: the boundaries it may cut at.
struct SplitRules {
  SplitRuleSet set = SplitRuleSet::kAny;
  /// Per boundary b (after layer b, L - 1 entries): whether a stage may end there (the cost
  /// model's cut_allowed). Empty: any cut.
  std::vector<char> cut_allowed;

  bool allowsCutAfter(int layer) const {
    return cut_allowed.empty() || layer >= static_cast<int>(cut_allowed.size()) || cut_allowed[layer] != 0;
  }
};

/// Trailing layers whose kind or name mentions "loss", which the frameworks take as a function.
int trailingLossLayers(const Profile& profile);

/// "" when Megatron's layout applies to the chain (its first layer an embedding, its last the
/// loss), else why not, in words: "its first layer, conv1 (Conv2d), is not an embedding".
std::string megatronInapplicability(const Profile& profile);

/// The rules of one set for this chain. kMegatron needs megatronInapplicability() == "".
SplitRules splitRules(SplitRuleSet set, const Profile& profile);

/// The rules of framework output `format`: list and json take any split, megatron its own
/// rules, the others the loss with the last stage. Empty when the format applies to no split of
/// this chain (megatron without an embedding first and the loss last).
std::optional<SplitRules> formatRules(FrameworkFormat format, const Profile& profile);

/// The rules of every framework stagecut prints for this chain at once (each framework's cuts
/// allowed by all): what the "compute" split obeys by default.
SplitRules frameworkRules(const Profile& profile);

/// "" when the split (layers per stage, already shaped) obeys the rules, else one line naming
/// the first stage that breaks them and why: "stage 3 holds only the loss (layer 8, loss);
/// DeepSpeed, ... apply the loss to the last stage's output".
std::string ruleViolation(const SplitRules& rules, const Profile& profile, const std::vector<int>& layers_per_stage);

}  // namespace stagecut
