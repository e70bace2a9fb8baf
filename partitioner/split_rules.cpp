#include "partitioner/split_rules.h"

#include <algorithm>
#include <cctype>

#include "core/error.h"
#include "partitioner/megatron_layout.h"

namespace stagecut {

namespace {

bool mentionsLoss(const LayerCost& layer) {
  std::string text = layer.kind + " " + layer.name;
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text.find("loss") != std::string::npos;
}

std::string layerWords(const Profile& profile, int k) {
  const LayerCost& layer = profile.layers[k];
  return layer.kind.empty() || layer.kind == layer.name ? layer.name : layer.name + " (" + layer.kind + ")";
}

std::string rangeWords(const Profile& profile, int first, int last) {
  if (first == last) return "layer " + std::to_string(first) + ", " + layerWords(profile, first);
  return "layers " + std::to_string(first) + "-" + std::to_string(last) + ", " + profile.layers[first].name +
         " .. " + profile.layers[last].name;
}

// Forbids every cut inside first..last (inclusive), so the range shares one stage.
void keepTogether(std::vector<char>& cut_allowed, int first, int last) {
  for (int b = std::max(first, 0); b < last; ++b) cut_allowed[b] = 0;
}

}  // namespace

const char* ruleSetName(SplitRuleSet set) {
  switch (set) {
    case SplitRuleSet::kLossWithLast: return "loss-with-last";
    case SplitRuleSet::kMegatron: return "megatron";
    case SplitRuleSet::kAny: break;
  }
  return "any";
}

const char* ruleSetRunners(SplitRuleSet set) {
  switch (set) {
    case SplitRuleSet::kLossWithLast: return "DeepSpeed, torchgpipe, fairscale, PiPPy, torchtitan";
    case SplitRuleSet::kMegatron: return "Megatron-LM";
    case SplitRuleSet::kAny: break;
  }
  return "any split: stagecut validate";
}

int trailingLossLayers(const Profile& profile) {
  int count = 0;
  const int layers = static_cast<int>(profile.layerCount());
  while (count < layers && mentionsLoss(profile.layers[layers - 1 - count])) ++count;
  return count;
}

std::string megatronInapplicability(const Profile& profile) {
  if (profile.layers.empty()) return "the chain has no layers";
  const MegatronGroups groups = megatronGroups(profile);
  if (groups.embedding_layers == 0) {
    return "its first layer, " + layerWords(profile, 0) + ", is not an embedding";
  }
  if (trailingLossLayers(profile) == 0) {
    return "its last layer, " + layerWords(profile, static_cast<int>(profile.layerCount()) - 1) + ", is not the loss";
  }
  return "";
}

SplitRules splitRules(SplitRuleSet set, const Profile& profile) {
  const int layers = static_cast<int>(profile.layerCount());
  SplitRules rules;
  rules.set = set;
  if (set == SplitRuleSet::kAny || layers < 2) return rules;
  rules.cut_allowed.assign(static_cast<std::size_t>(layers - 1), 1);
  if (set == SplitRuleSet::kLossWithLast) {
    const int loss = trailingLossLayers(profile);
    if (loss > 0) keepTogether(rules.cut_allowed, layers - loss - 1, layers - 1);
    return rules;
  }
  const std::string why_not = megatronInapplicability(profile);
  if (!why_not.empty()) {
    throw Error("Megatron's layout does not apply to this chain: " + why_not, ErrorKind::kRuntime);
  }
  const MegatronGroups groups = megatronGroups(profile);
  keepTogether(rules.cut_allowed, 0, groups.embedding_layers - 1);
  keepTogether(rules.cut_allowed, layers - groups.loss_layers, layers - 1);
  return rules;
}

std::optional<SplitRules> formatRules(FrameworkFormat format, const Profile& profile) {
  switch (format) {
    case FrameworkFormat::kList:
    case FrameworkFormat::kJson: return splitRules(SplitRuleSet::kAny, profile);
    case FrameworkFormat::kMegatron:
      if (!megatronInapplicability(profile).empty()) return std::nullopt;
      return splitRules(SplitRuleSet::kMegatron, profile);
    case FrameworkFormat::kTorchgpipe:
    case FrameworkFormat::kFairscale:
    case FrameworkFormat::kDeepspeed:
    case FrameworkFormat::kPippy:
    case FrameworkFormat::kTorchtitan: return splitRules(SplitRuleSet::kLossWithLast, profile);
  }
  throw Error("a framework format without rules", ErrorKind::kRuntime);
}

SplitRules frameworkRules(const Profile& profile) {
  SplitRules rules = splitRules(SplitRuleSet::kLossWithLast, profile);
  if (megatronInapplicability(profile).empty()) {
    const SplitRules megatron = splitRules(SplitRuleSet::kMegatron, profile);
    for (std::size_t b = 0; b < rules.cut_allowed.size(); ++b) {
      rules.cut_allowed[b] = static_cast<char>(rules.cut_allowed[b] && megatron.cut_allowed[b]);
    }
    rules.set = SplitRuleSet::kMegatron;  // the stricter one names the whole
  }
  return rules;
}

std::string ruleViolation(const SplitRules& rules, const Profile& profile, const std::vector<int>& layers_per_stage) {
  const int layers = static_cast<int>(profile.layerCount());
  const int loss = trailingLossLayers(profile);
  const MegatronGroups groups = megatronGroups(profile);
  int first = 0;
  for (std::size_t s = 0; s + 1 < layers_per_stage.size(); ++s) {
    const int last = first + layers_per_stage[s] - 1;
    first = last + 1;
    if (rules.allowsCutAfter(last)) continue;
    const std::string stage = "stage " + std::to_string(s + 1);
    if (loss > 0 && last == layers - loss - 1) {
      return stage + " holds only the loss (" + rangeWords(profile, layers - loss, layers - 1) + "); " +
             ruleSetRunners(SplitRuleSet::kLossWithLast) + " apply the loss to the last stage's output";
    }
    if (last < groups.embedding_layers - 1) {
      return "stage 0 ends inside the embedding (" + rangeWords(profile, 0, groups.embedding_layers - 1) +
             "), which Megatron keeps whole on the first stage";
    }
    if (last >= layers - groups.loss_layers) {
      return stage + " starts inside the final norm, output layer and loss (" +
             rangeWords(profile, layers - groups.loss_layers, layers - 1) +
             "), which Megatron runs as one unit, L, on the last stage";
    }
    return stage + " starts after layer " + std::to_string(last) + ", where " + ruleSetRunners(rules.set) +
           " cannot cut";
  }
  return "";
}

}  // namespace stagecut
