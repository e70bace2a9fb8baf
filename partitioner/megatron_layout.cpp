#include "partitioner/megatron_layout.h"

#include <algorithm>
#include <cctype>
#include <map>

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

namespace {

// The longest expansion a layout may have: far above any model's layers, far below memory trouble.
constexpr std::size_t kMaxLayoutSymbols = 1000000;

bool isDigit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// Whether `text` holds "*N" at `star`: a repeat's count.
bool repeatAt(const std::string& text, std::size_t star) {
  return star + 1 < text.size() && text[star] == '*' && isDigit(text[star + 1]);
}

// The whole number whose digits start at `from`, `end` set past them; it saturates past the
// bound, so that appendRepeated refuses it (Python would try to build the text).
std::size_t repeatCount(const std::string& text, std::size_t from, std::size_t& end) {
  std::size_t repeat = 0;
  for (end = from; end < text.size() && isDigit(text[end]); ++end) {
    repeat = std::min(repeat * 10 + static_cast<std::size_t>(text[end] - '0'), kMaxLayoutSymbols + 1);
  }
  return repeat;
}

// Appends `part` `repeat` times to `out`, which holds the expansion so far: the bound is on the
// whole of it, so that many stages of long repeats are bounded together, not each alone.
void appendRepeated(std::string& out, const std::string& part, std::size_t repeat) {
  if (part.size() * repeat + out.size() > kMaxLayoutSymbols) {
    throw Error("the layout expands to more than " + std::to_string(kMaxLayoutSymbols) + " symbols");
  }
  for (std::size_t k = 0; k < repeat; ++k) out += part;
}

// The first substitution's result, with the reason for each '(' or ')' it leaves unmatched (by
// position; any other '(' came from inside a group: a nested one). Megatron's parser refuses
// one the second substitution keeps, as a character no layer has.
struct GroupsExpanded {
  std::string text;
  std::map<std::size_t, const char*> strays;
};

// Megatron's first substitution, \(([^)]+)\)\*(\d+): a group (up to the first ')') repeated N times.
GroupsExpanded expandGroups(const std::string& text) {
  GroupsExpanded out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const std::size_t close = text[i] == '(' ? text.find(')', i + 1) : std::string::npos;
    if (text[i] == '(' && close != std::string::npos && close > i + 1 && repeatAt(text, close + 1)) {
      std::size_t end = 0;
      const std::size_t repeat = repeatCount(text, close + 2, end);
      appendRepeated(out.text, text.substr(i + 1, close - i - 1), repeat);
      i = end - 1;
      continue;
    }
    if (text[i] == ')') out.strays[out.text.size()] = "a ')' without its '('";
    if (text[i] == '(') {
      out.strays[out.text.size()] = close == std::string::npos ? "a '(' without its ')'"
                                    : close == i + 1           ? "an empty group ()"
                                    : close + 1 < text.size() && text[close + 1] == '*'
                                        ? "a repeat (...)*N needs a whole number N after the '*'"
                                        : "a group (...) needs a repeat *N after it";
    }
    appendRepeated(out.text, std::string(1, text[i]), 1);
  }
  return out;
}

// Megatron's second substitution, (.)\*(\d+): any one character repeated N times, '|' too (so
// "t|*2" is "t||"), and N = 0 drops it, whatever it is ("(*0" is nothing, as in Python). A '*'
// or a stray '(' or ')' that is kept is refused; digits are kept for the caller to refuse.
std::string expandSymbols(const GroupsExpanded& in) {
  const std::string& text = in.text;
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    std::size_t repeat = 1, end = i + 1;
    if (repeatAt(text, i + 1)) repeat = repeatCount(text, i + 2, end);
    if (repeat > 0) {
      const auto stray = in.strays.find(i);
      if (stray != in.strays.end()) throw Error(stray->second);
      if (text[i] == '(') throw Error("groups (...) do not nest in a layout");
      if (text[i] == '*') {
        throw Error(repeatAt(text, i) ? "a repeat x*N needs a symbol before the '*'"
                                      : "a repeat x*N needs a whole number N after the '*'");
      }
    }
    appendRepeated(out, std::string(1, text[i]), repeat);
    i = end - 1;
  }
  return out;
}

}  // namespace

std::vector<std::string> expandMegatronLayout(const std::string& layout) {
  // Megatron's parse_str_to_list: commas are cosmetic, then "(group)*N", then "x*N", then each
  // '|' ends a stage.
  std::string text;
  for (char c : layout) {
    if (c != ',') text += c;
  }
  const std::string symbols = expandSymbols(expandGroups(text));
  std::vector<std::string> stages{""};
  for (char c : symbols) {
    if (c == '|') {
      stages.emplace_back();
    } else {
      stages.back() += c;
    }
  }
  return stages;
}

std::string megatronVirtualPipelineRefusal(int ranks, int chunks_per_rank) {
  if (chunks_per_rank < 2 || ranks >= 2) return "";
  return std::to_string(chunks_per_rank) + " model chunks on " + std::to_string(ranks) +
         " pipeline rank: Megatron runs a virtual pipeline only on --pipeline-model-parallel-size 2 or more (its "
         "arguments.py asserts it for the interleaved schedule)";
}

int megatronVirtualStagesFromLayers(int blocks, int stages, bool account_for_embedding, bool account_for_loss,
                                    bool uneven, int layers_per_virtual_stage) {
  const std::string flag = "--num-layers-per-virtual-pipeline-stage " + std::to_string(layers_per_virtual_stage);
  if (uneven) {
    throw Error(flag + " with --decoder-first/last-pipeline-num-layers: Megatron takes the virtual stages of an "
                       "uneven pipeline only as --num-virtual-stages-per-pipeline-rank");
  }
  if (layers_per_virtual_stage < 1) throw Error(flag + ": a virtual stage holds 1 layer or more");
  const int counted = blocks + (account_for_embedding ? 1 : 0) + (account_for_loss ? 1 : 0);
  const std::string counted_words = std::to_string(counted) + " layers" +
                                    (counted != blocks ? " (the accounted embedding and loss included)" : "");
  if (stages < 1 || counted % stages != 0) {
    throw Error(flag + ": Megatron divides the " + counted_words + " evenly over the " + std::to_string(stages) +
                " pipeline ranks first, and they do not divide");
  }
  const int per_rank = counted / stages;
  if (per_rank % layers_per_virtual_stage != 0) {
    throw Error(flag + ": each of the " + std::to_string(stages) + " ranks holds " + std::to_string(per_rank) +
                " layers, not a multiple of " + std::to_string(layers_per_virtual_stage));
  }
  return per_rank / layers_per_virtual_stage;
}

namespace {

// The embedding (loss) counts as one layer of an even split into `pieces` and the first (last)
// piece builds one transformer layer fewer; without either, the layers divide evenly.
std::vector<int> evenSplitAccounting(int blocks, int pieces, bool account_for_embedding, bool account_for_loss) {
  const int counted = blocks + (account_for_embedding ? 1 : 0) + (account_for_loss ? 1 : 0);
  if (counted % pieces != 0) return {};
  std::vector<int> result(static_cast<std::size_t>(pieces), counted / pieces);
  if (account_for_embedding) --result.front();
  if (account_for_loss) --result.back();
  if (result.front() < 0 || result.back() < 0) return {};
  return result;
}

// Blocks per pipeline rank, one chunk each.
std::vector<int> blocksPerRankFromFlags(int blocks, int stages, bool account_for_embedding, bool account_for_loss,
                                        std::optional<int> first, std::optional<int> last) {
  const bool uneven = first.has_value() || last.has_value();
  const bool accounted = account_for_embedding || account_for_loss;
  if (stages == 1) return uneven || accounted ? std::vector<int>{} : std::vector<int>{blocks};
  if (uneven) {
    if ((first && *first <= 0) || (last && *last <= 0)) return {};  // "must be larger than 0"
    int remaining = blocks - first.value_or(0) - last.value_or(0);
    const int middle_stages = stages - (first ? 1 : 0) - (last ? 1 : 0);
    if (remaining < 0 || (remaining > 0) != (middle_stages > 0)) return {};
    if (middle_stages > 0 && remaining % middle_stages != 0) return {};
    std::vector<int> result;
    if (first) result.push_back(*first);
    for (int s = 0; s < middle_stages; ++s) result.push_back(remaining / middle_stages);
    if (last) result.push_back(*last);
    return result;
  }
  return evenSplitAccounting(blocks, stages, account_for_embedding, account_for_loss);
}

}  // namespace

std::vector<int> megatronBlocksFromFlags(int blocks, int stages, bool account_for_embedding,
                                         bool account_for_loss, std::optional<int> first, std::optional<int> last,
                                         int virtual_stages) {
  if (stages < 1 || blocks < 0 || virtual_stages < 1) return {};
  // "num_layers_in_first_pipeline_stage ... cannot be set at the same time with
  // account_for_embedding_in_pipeline_split and account_for_loss_in_pipeline_split"
  if ((first || last) && (account_for_embedding || account_for_loss)) return {};
  if (virtual_stages == 1) {
    return blocksPerRankFromFlags(blocks, stages, account_for_embedding, account_for_loss, first, last);
  }
  if (stages == 1) return {};  // a virtual pipeline needs two ranks or more
  const int chunks = stages * virtual_stages;
  if (account_for_embedding || account_for_loss) {
    // Every chunk builds (B + e + l) / (N v); the embedding's slot is chunk 0's (rank 0's first),
    // the loss's the last chunk's (rank N - 1's last), not every chunk of those ranks.
    return evenSplitAccounting(blocks, chunks, account_for_embedding, account_for_loss);
  }
  // Even, or the first and last ranks' totals: each rank's blocks, as without chunks, divide
  // evenly over its v chunks (chunk c on rank c mod N).
  const std::vector<int> per_rank = blocksPerRankFromFlags(blocks, stages, false, false, first, last);
  if (per_rank.empty()) return {};
  std::vector<int> result;
  for (int chunk = 0; chunk < chunks; ++chunk) {
    const int rank_blocks = per_rank[static_cast<std::size_t>(chunk % stages)];
    if (rank_blocks % virtual_stages != 0) return {};
    result.push_back(rank_blocks / virtual_stages);
  }
  return result;
}

std::string megatronFlags(const MegatronGroups& groups, const std::vector<int>& layers_per_chunk, int virtual_stages) {
  bool expressible = false;
  const std::vector<int> blocks = blocksPerStage(groups, layers_per_chunk, &expressible);
  if (!expressible || groups.embedding_layers == 0 || groups.loss_layers == 0) return "";
  if (virtual_stages < 1 || blocks.size() % static_cast<std::size_t>(virtual_stages) != 0) return "";
  const int stages = static_cast<int>(blocks.size()) / virtual_stages;
  const std::string base =
      "--num-layers " + std::to_string(groups.block_layers) + " --pipeline-model-parallel-size " +
      std::to_string(stages) +
      (virtual_stages > 1 ? " --num-virtual-stages-per-pipeline-rank " + std::to_string(virtual_stages) : "");
  const auto builds = [&](bool embedding, bool loss, std::optional<int> first, std::optional<int> last) {
    return megatronBlocksFromFlags(groups.block_layers, stages, embedding, loss, first, last, virtual_stages) == blocks;
  };
  for (int accounted = 0; accounted < 4; ++accounted) {
    const bool embedding = (accounted & 1) != 0, loss = (accounted & 2) != 0;
    if (builds(embedding, loss, std::nullopt, std::nullopt)) {
      return base + (embedding ? " --account-for-embedding-in-pipeline-split" : "") +
             (loss ? " --account-for-loss-in-pipeline-split" : "");
    }
  }
  // The first and last ranks' totals, over all their chunks.
  const int first_blocks = blocks.front() * virtual_stages, last_blocks = blocks.back() * virtual_stages;
  const std::string first = " --decoder-first-pipeline-num-layers " + std::to_string(first_blocks);
  const std::string last = " --decoder-last-pipeline-num-layers " + std::to_string(last_blocks);
  if (builds(false, false, first_blocks, std::nullopt)) return base + first;
  if (builds(false, false, std::nullopt, last_blocks)) return base + last;
  if (builds(false, false, first_blocks, last_blocks)) return base + first + last;
  return "";
}

std::vector<int> bestFlagsSplit(const CostModel& model, const MegatronGroups& groups) {
  const int stages = model.stageCount();
  const int blocks = groups.block_layers;
  std::vector<int> best;
  SplitScore best_score;
  auto consider = [&](const std::vector<int>& blocks_per_stage) {
    if (static_cast<int>(blocks_per_stage.size()) != stages) return;
    std::vector<int> counts = blocks_per_stage;
    counts.front() += groups.embedding_layers;
    counts.back() += groups.loss_layers;
    if (std::any_of(counts.begin(), counts.end(), [](int c) { return c < 1; })) return;
    int last = -1;
    for (int s = 0; s + 1 < stages; ++s) {
      last += counts[s];
      if (!model.canEndAt(last)) return;
    }
    if (!splitFitsMemory(model, counts)) return;
    const SplitScore score = scoreSplit(model, counts);
    if (best.empty() || scoreBetter(score, best_score) || (!scoreBetter(best_score, score) && counts < best)) {
      best = counts;
      best_score = score;
    }
  };
  for (int accounted = 0; accounted < 4; ++accounted) {
    consider(megatronBlocksFromFlags(blocks, stages, (accounted & 1) != 0, (accounted & 2) != 0, std::nullopt,
                                     std::nullopt));
  }
  for (int end = 1; end <= blocks; ++end) {
    consider(megatronBlocksFromFlags(blocks, stages, false, false, end, std::nullopt));
    consider(megatronBlocksFromFlags(blocks, stages, false, false, std::nullopt, end));
  }
  if (stages == 2) {
    for (int first = 1; first < blocks; ++first) {
      consider(megatronBlocksFromFlags(blocks, stages, false, false, first, blocks - first));
    }
  } else if (stages > 2) {
    for (int middle = 1; middle * (stages - 2) < blocks; ++middle) {
      const int ends = blocks - middle * (stages - 2);
      for (int first = 1; first < ends; ++first) {
        consider(megatronBlocksFromFlags(blocks, stages, false, false, first, ends - first));
      }
    }
  }
  return best;
}

}  // namespace stagecut
