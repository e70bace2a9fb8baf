#include "partitioner/megatron_layout.h"

#include <algorithm>
#include <cctype>

#include "core/error.h"
#include "partitioner/split_score.h"

namespace stagecut {

namespace {

std::string lowered(const LayerCost& layer) {
  std::string text = layer.kind + " " + layer.name;
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

bool mentionsAny(const std::string& text, std::initializer_list<const char*> words) {
  return std::any_of(words.begin(), words.end(),
                     [&](const char* word) { return text.find(word) != std::string::npos; });
}

// "tttt" -> "t*4": a run only shortens from four symbols on.
std::string compressRuns(const std::string& symbols) {
  std::string out;
  for (std::size_t i = 0; i < symbols.size();) {
    std::size_t run = 1;
    while (i + run < symbols.size() && symbols[i + run] == symbols[i]) ++run;
    if (run >= 4) {
      out += symbols[i];
      out += "*" + std::to_string(run);
    } else {
      out.append(run, symbols[i]);
    }
    i += run;
  }
  return out;
}

std::vector<int> blocksPerStage(const MegatronGroups& groups, const std::vector<int>& layers_per_stage,
                                bool* expressible) {
  std::vector<int> blocks = layers_per_stage;
  const int stages = static_cast<int>(blocks.size());
  blocks.front() -= groups.embedding_layers;
  blocks.back() -= groups.loss_layers;
  *expressible = blocks.front() >= 0 && blocks.back() >= 0 && (stages > 1 || blocks.front() >= 0);
  return blocks;
}

}  // namespace

MegatronGroups megatronGroups(const Profile& profile) {
  MegatronGroups groups;
  const int layers = static_cast<int>(profile.layerCount());
  while (groups.embedding_layers < layers &&
         mentionsAny(lowered(profile.layers[groups.embedding_layers]), {"embed"})) {
    ++groups.embedding_layers;
  }
  while (groups.loss_layers < layers - groups.embedding_layers &&
         mentionsAny(lowered(profile.layers[layers - 1 - groups.loss_layers]),
                     {"norm", "head", "output", "logits", "loss"})) {
    ++groups.loss_layers;
  }
  groups.block_layers = layers - groups.embedding_layers - groups.loss_layers;
  return groups;
}

Profile megatronView(const Profile& profile, const MegatronGroups& groups) {
  Profile view = profile;
  auto merge = [&](int first, int count, const std::string& kind) {
    LayerCost merged = profile.layers[first];
    merged.kind = kind;
    merged.output_shape = profile.layers[first + count - 1].output_shape;
    merged.output_bytes = profile.layers[first + count - 1].output_bytes;
    merged.backward_input_ms.reset();
    merged.backward_weight_ms.reset();
    for (int k = first + 1; k < first + count; ++k) {
      const LayerCost& layer = profile.layers[k];
      merged.name += "+" + layer.name;
      merged.forward_ms = TimeStatsMs::exactly(merged.forward_ms.median + layer.forward_ms.median);
      merged.backward_ms = TimeStatsMs::exactly(merged.backward_ms.median + layer.backward_ms.median);
      merged.params += layer.params;
      merged.param_bytes += layer.param_bytes;
      merged.activation_bytes += layer.activation_bytes;
    }
    return merged;
  };
  view.layers.clear();
  const int layers = static_cast<int>(profile.layerCount());
  if (groups.embedding_layers > 0) view.layers.push_back(merge(0, groups.embedding_layers, "Embedding"));
  for (int k = groups.embedding_layers; k < layers - groups.loss_layers; ++k) view.layers.push_back(profile.layers[k]);
  if (groups.loss_layers > 0) {
    view.layers.push_back(merge(layers - groups.loss_layers, groups.loss_layers, "OutputLayerAndLoss"));
  }
  for (std::size_t k = 0; k < view.layers.size(); ++k) view.layers[k].index = static_cast<int>(k);
  return view;
}

std::vector<int> fromMegatronView(std::vector<int> view_layers_per_stage, const MegatronGroups& groups) {
  if (groups.embedding_layers > 0) view_layers_per_stage.front() += groups.embedding_layers - 1;
  if (groups.loss_layers > 0) view_layers_per_stage.back() += groups.loss_layers - 1;
  return view_layers_per_stage;
}

std::string megatronLayout(const MegatronGroups& groups, const std::vector<int>& layers_per_stage) {
  bool expressible = false;
  const std::vector<int> blocks = blocksPerStage(groups, layers_per_stage, &expressible);
  if (!expressible) {
    throw Error("--format megatron: the split separates the " +
                std::string(blocks.front() < 0 ? "embedding layers" : "norm, output and loss layers") +
                ", which Megatron runs as one unit; partition with --format megatron (it keeps them " +
                "together) or use --format list");
  }
  std::string layout;
  for (std::size_t s = 0; s < blocks.size(); ++s) {
    std::string symbols;
    if (s == 0 && groups.embedding_layers > 0) symbols += 'E';
    symbols.append(static_cast<std::size_t>(blocks[s]), 't');
    if (s + 1 == blocks.size() && groups.loss_layers > 0) symbols += 'L';
    layout += (s ? "|" : "") + compressRuns(symbols);
  }
  return layout;
}

std::vector<std::string> expandMegatronLayout(const std::string& layout) {
  std::vector<std::string> stages{""};
  for (std::size_t i = 0; i < layout.size(); ++i) {
    const char c = layout[i];
    if (c == '|') {
      stages.emplace_back();
    } else if (c == '*') {
      std::size_t end = i + 1;
      while (end < layout.size() && std::isdigit(static_cast<unsigned char>(layout[end]))) ++end;
      const int repeat = std::stoi(layout.substr(i + 1, end - i - 1));
      const char symbol = stages.back().back();
      stages.back().append(static_cast<std::size_t>(repeat - 1), symbol);
      i = end - 1;
    } else {
      stages.back() += c;
    }
  }
  return stages;
}

std::string megatronFirstLastFlags(const MegatronGroups& groups, const std::vector<int>& layers_per_stage) {
  bool expressible = false;
  const std::vector<int> blocks = blocksPerStage(groups, layers_per_stage, &expressible);
  const int stages = static_cast<int>(blocks.size());
  if (!expressible || stages < 2) return "";
  for (int s = 2; s + 1 < stages; ++s) {
    if (blocks[s] != blocks[1]) return "";
  }
  // Megatron rejects 0 for either flag ("must be larger than 0") and empty middle stages.
  if (blocks.front() < 1 || blocks.back() < 1 || (stages > 2 && blocks[1] < 1)) return "";
  return "--decoder-first-pipeline-num-layers " + std::to_string(blocks.front()) +
         " --decoder-last-pipeline-num-layers " + std::to_string(blocks.back());
}

std::vector<int> bestFirstLastSplit(const CostModel& model, const MegatronGroups& groups) {
  const int stages = model.stageCount();
  const int blocks = groups.block_layers;
  std::vector<int> best;
  SplitScore best_score;
  auto consider = [&](int first_blocks, int middle_blocks, int last_blocks) {
    std::vector<int> counts;
    counts.push_back(groups.embedding_layers + first_blocks);
    for (int s = 1; s + 1 < stages; ++s) counts.push_back(middle_blocks);
    if (stages > 1) counts.push_back(last_blocks + groups.loss_layers);
    else counts.front() += last_blocks + groups.loss_layers;
    if (std::any_of(counts.begin(), counts.end(), [](int c) { return c < 1; })) return;
    if (!splitFitsMemory(model, counts)) return;
    const SplitScore score = scoreSplit(model, counts);
    if (best.empty() || scoreBetter(score, best_score) ||
        (!scoreBetter(best_score, score) && counts < best)) {
      best = counts;
      best_score = score;
    }
  };
  if (stages == 1) {
    consider(blocks, 0, 0);
  } else if (stages == 2) {
    for (int first = 1; first < blocks; ++first) consider(first, 0, blocks - first);
  } else {
    for (int middle = 1; middle * (stages - 2) <= blocks; ++middle) {
      const int ends = blocks - middle * (stages - 2);
      for (int first = 1; first < ends; ++first) consider(first, middle, ends - first);
    }
  }
  return best;
}

}  // namespace stagecut
