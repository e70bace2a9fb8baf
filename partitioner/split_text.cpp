#include "partitioner/split_text.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <numeric>
#include <optional>
#include <sstream>

#include "core/error.h"
#include "core/units.h"
#include "partitioner/megatron_layout.h"
#include "partitioner/split_rules.h"
#include "prediction/tensor_parallel_comm.h"

namespace stagecut {

namespace {

constexpr const char* kForms =
    "give layers per stage (4,3,1,1), a Megatron layout or its flags, parts=[...], balance=[...], "
    "split_spec={...} or module_fqns_per_model_part=[...]";

[[noreturn]] void fail(const std::string& flag, const std::string& text, const std::string& why) {
  throw Error(flag + " " + text + ": " + why);
}

std::string trimmed(const std::string& text);

// Non-negative integers separated by commas (spaces around them allowed); nullopt for
// anything else.
std::optional<std::vector<int>> integerList(const std::string& text) {
  std::vector<int> values;
  std::istringstream items(text);
  std::string item;
  while (std::getline(items, item, ',')) {
    item = trimmed(item);
    if (item.empty() || item.size() > 6 || item.find_first_not_of("0123456789") != std::string::npos) {
      return std::nullopt;
    }
    values.push_back(std::atoi(item.c_str()));
  }
  if (values.empty() || text.back() == ',') return std::nullopt;
  return values;
}

std::string trimmed(const std::string& text) {
  const std::size_t first = text.find_first_not_of(" \t\n");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\n") - first + 1);
}

// The inside of `name=[...]`, or nullopt when the text is not that form.
std::optional<std::string> bracketed(const std::string& text, const std::string& name) {
  const std::string head = name + "=[";
  if (text.compare(0, head.size(), head) != 0 || text.back() != ']') return std::nullopt;
  return text.substr(head.size(), text.size() - head.size() - 1);
}

// A layout's symbols by Megatron's rules (PipelineParallelLayerLayout.validate_layer_layout):
// E, t, L (and m, its multi-token-prediction layer) only; E the first layer of the whole layout
// and L its last, each once; stages may be empty. Then stagecut's own: a stage with no symbol
// has no layer to give a split.
void checkLayoutSymbols(const std::vector<std::string>& stages, const std::string& flag, const std::string& text) {
  std::string symbols;
  for (const std::string& stage : stages) symbols += stage;
  for (char symbol : symbols) {
    if (symbol != 'E' && symbol != 't' && symbol != 'L' && symbol != 'm') {
      fail(flag, text, std::string("a layout holds E, t and L only, not '") + symbol + "'");
    }
  }
  if (symbols.empty() || symbols.front() != 'E') {
    fail(flag, text, "the layout's first layer must be the embedding E, as Megatron requires");
  }
  if (symbols.back() != 'L') fail(flag, text, "the layout's last layer must be the loss L, as Megatron requires");
  for (char symbol : {'E', 'L'}) {
    const auto count = std::count(symbols.begin(), symbols.end(), symbol);
    if (count != 1) {
      fail(flag, text, std::string("the layout holds ") + symbol + " " + std::to_string(count) +
                           " times; Megatron takes the " + (symbol == 'E' ? "embedding" : "loss") + " once");
    }
  }
  if (symbols.find('m') != std::string::npos) {
    fail(flag, text, "the layout holds m, a multi-token-prediction layer, which the profile does not have "
                     "(Megatron counts m against --mtp-num-layers)");
  }
  for (std::size_t s = 0; s < stages.size(); ++s) {
    if (!stages[s].empty()) continue;
    fail(flag, text, "stage " + std::to_string(s) + " of the layout's " + std::to_string(stages.size()) +
                         " is empty, which Megatron runs (a stage that builds no layer) but a stagecut split "
                         "cannot: every stage holds at least one layer; move a layer into it");
  }
}

std::vector<int> fromLayout(const std::string& layout, const Profile& profile, const std::string& flag,
                            const std::string& text) {
  std::vector<std::string> stages;
  try {
    stages = expandMegatronLayout(layout);
  } catch (const Error& error) {
    fail(flag, text, error.what());
  }
  checkLayoutSymbols(stages, flag, text);
  const MegatronGroups groups = megatronGroups(profile);
  std::vector<int> counts;
  for (const std::string& stage : stages) {
    int layers = 0;
    for (char symbol : stage) {
      layers += symbol == 'E' ? groups.embedding_layers : symbol == 'L' ? groups.loss_layers : 1;
    }
    counts.push_back(layers);
  }
  return counts;
}

// Megatron's command-line words: "--flag value" and "--flag=value" alike, a value in quotes or not.
std::vector<std::string> commandWords(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  char quote = 0;
  const auto end_word = [&] {
    if (!word.empty()) words.push_back(word);
    word.clear();
  };
  for (char c : text) {
    if (quote) {
      if (c == quote) quote = 0;
      else word += c;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      end_word();
    } else if (c == '=' && word.rfind("--", 0) == 0) {
      end_word();
    } else {
      word += c;
    }
  }
  end_word();
  return words;
}

// Reads the whole number after words[at] (a flag's value); `at` moves onto it.
int flagNumber(const std::vector<std::string>& words, std::size_t& at, const std::string& flag,
               const std::string& text) {
  const std::string& name = words[at];
  if (++at >= words.size() || words[at].find_first_not_of("0123456789") != std::string::npos || words[at].size() > 6) {
    fail(flag, text, name + " needs a whole number");
  }
  return std::atoi(words[at].c_str());
}

// --num-layers, when given, must be the profile's transformer layers.
void requireBlockCount(std::optional<int> num_layers, const MegatronGroups& groups, const std::string& flag,
                       const std::string& text) {
  if (num_layers && *num_layers != groups.block_layers) {
    fail(flag, text, "--num-layers " + std::to_string(*num_layers) + ", the profile has " +
                         std::to_string(groups.block_layers) + " transformer layers");
  }
}

// What a text of Megatron's flags says about the split, each flag as its argparse reads it (the
// last of a flag given twice holds).
struct MegatronWords {
  std::optional<std::string> layout;
  std::optional<int> size, num_layers, virtual_stages, layers_per_virtual_stage, first, last;
  bool embedding = false, loss = false;
};

MegatronWords readMegatronWords(const std::vector<std::string>& words, const std::string& flag,
                                const std::string& text) {
  MegatronWords read;
  const std::pair<const char*, std::optional<int> MegatronWords::*> numbers[] = {
      {"--pipeline-model-parallel-size", &MegatronWords::size},
      {"--num-layers", &MegatronWords::num_layers},
      {"--num-virtual-stages-per-pipeline-rank", &MegatronWords::virtual_stages},
      {"--num-layers-per-virtual-pipeline-stage", &MegatronWords::layers_per_virtual_stage},
      {"--decoder-first-pipeline-num-layers", &MegatronWords::first},
      {"--decoder-last-pipeline-num-layers", &MegatronWords::last},
  };
  for (std::size_t at = 0; at < words.size(); ++at) {
    const std::string& word = words[at];
    const auto number = std::find_if(std::begin(numbers), std::end(numbers),
                                      [&](const auto& entry) { return word == entry.first; });
    if (number != std::end(numbers)) {
      read.*(number->second) = flagNumber(words, at, flag, text);
    } else if (word == "--pipeline-model-parallel-layout") {
      if (++at >= words.size() || words[at].rfind("--", 0) == 0) fail(flag, text, word + " needs its layout");
      read.layout = words[at];
    } else if (word == "--account-for-embedding-in-pipeline-split") {
      read.embedding = true;
    } else if (word == "--account-for-loss-in-pipeline-split") {
      read.loss = true;
    } else {
      fail(flag, text, "unknown Megatron flag '" + word + "'; " + kForms);
    }
  }
  return read;
}

// The checks Megatron makes of the flags together before it builds a layer: at most one way to
// give the virtual stages (arguments.py), and a layout with no other flag of the split
// (TransformerConfig: "pipeline_model_parallel_layout cannot be set with other pipeline layout
// arguments").
void checkMegatronFlagSet(const MegatronWords& read, const std::string& flag, const std::string& text) {
  std::vector<std::string> ways;
  if (read.layout) ways.push_back("--pipeline-model-parallel-layout");
  if (read.virtual_stages) ways.push_back("--num-virtual-stages-per-pipeline-rank");
  if (read.layers_per_virtual_stage) ways.push_back("--num-layers-per-virtual-pipeline-stage");
  if (ways.size() > 1) {
    fail(flag, text, ways[0] + " with " + ways[1] + ": Megatron takes at most one of "
                     "--pipeline-model-parallel-layout, --num-virtual-stages-per-pipeline-rank and "
                     "--num-layers-per-virtual-pipeline-stage (a layout's length gives its virtual stages); keep one");
  }
  if (!read.layout) return;
  const char* other = read.first ? "--decoder-first-pipeline-num-layers"
                      : read.last ? "--decoder-last-pipeline-num-layers"
                      : read.embedding ? "--account-for-embedding-in-pipeline-split"
                      : read.loss ? "--account-for-loss-in-pipeline-split"
                                  : nullptr;
  if (other) {
    fail(flag, text, std::string("'") + other + "' beside a layout; Megatron takes the layout with "
                     "--pipeline-model-parallel-size and --num-layers only");
  }
}

// A layout of `layout_stages` stages on the --pipeline-model-parallel-size (`size`), --stages
// or, without either, as many ranks: Megatron's virtual pipeline puts layout_stages / ranks
// chunks on each rank, chunk i on rank i mod ranks. Sets `placement` to that; a caller that
// reads no chunks (nullptr) is refused a layout of several chunks per rank.
void placeLayout(int layout_stages, std::optional<int> size, int stages, Placement* placement,
                 const std::string& flag, const std::string& text) {
  if (size && stages > 0 && *size != stages) {
    fail(flag, text,
         "--pipeline-model-parallel-size " + std::to_string(*size) + " but --stages " + std::to_string(stages));
  }
  const int ranks = size ? *size : stages > 0 ? stages : layout_stages;
  if (ranks < 1) fail(flag, text, "--pipeline-model-parallel-size needs 1 rank or more");
  if (layout_stages % ranks != 0) {
    fail(flag, text, "the layout has " + std::to_string(layout_stages) + " stages, which Megatron puts on " +
                         std::to_string(ranks) + " ranks only as equal numbers of chunks; give " +
                         std::to_string(ranks) + " x v stages");
  }
  const int chunks = layout_stages / ranks;
  const std::string refusal = megatronVirtualPipelineRefusal(ranks, chunks);
  if (!refusal.empty()) fail(flag, text, "a layout of " + std::to_string(layout_stages) + " stages, " + refusal);
  if (chunks > 1 && placement == nullptr) {
    fail(flag, text, "a virtual-pipeline layout, " + std::to_string(layout_stages) + " stages on " +
                         std::to_string(ranks) + " ranks (" + std::to_string(chunks) +
                         " model chunks each): this command takes one chunk per rank; give a layout of " +
                         std::to_string(ranks) + " stages");
  }
  if (placement) *placement = Placement::loop(ranks, chunks);
}

std::vector<int> fromLayoutFlags(const MegatronWords& read, const Profile& profile, int stages,
                                 Placement* placement, const std::string& flag, const std::string& text) {
  requireBlockCount(read.num_layers, megatronGroups(profile), flag, text);
  std::vector<int> counts = fromLayout(*read.layout, profile, flag, text);
  placeLayout(static_cast<int>(counts.size()), read.size, stages, placement, flag, text);
  return counts;
}

// The virtual stages per rank the flags give: --num-virtual-stages-per-pipeline-rank as it is,
// --num-layers-per-virtual-pipeline-stage as Megatron converts it, else 1.
int virtualStagesOf(const MegatronWords& read, const MegatronGroups& groups, int pipeline, const std::string& flag,
                    const std::string& text) {
  if (read.virtual_stages) {
    if (*read.virtual_stages < 1) {
      fail(flag, text, "--num-virtual-stages-per-pipeline-rank needs 1 chunk per rank or more");
    }
    return *read.virtual_stages;
  }
  if (!read.layers_per_virtual_stage) return 1;
  try {
    return megatronVirtualStagesFromLayers(groups.block_layers, pipeline, read.embedding, read.loss,
                                           read.first || read.last, *read.layers_per_virtual_stage);
  } catch (const Error& error) {
    fail(flag, text, error.what());
  }
}

std::vector<int> fromMegatronFlags(const MegatronWords& read, const Profile& profile, int stages,
                                   Placement* placement, const std::string& flag, const std::string& text) {
  const MegatronGroups groups = megatronGroups(profile);
  requireBlockCount(read.num_layers, groups, flag, text);
  if (read.size && stages > 0 && *read.size != stages) {
    fail(flag, text, "--pipeline-model-parallel-size " + std::to_string(*read.size) + " but --stages " +
                         std::to_string(stages));
  }
  if (!read.size && stages <= 0) fail(flag, text, "add --pipeline-model-parallel-size N (or --stages N)");
  const int pipeline = read.size ? *read.size : stages;
  if (pipeline < 1) fail(flag, text, "--pipeline-model-parallel-size needs 1 rank or more");
  const int chunks = virtualStagesOf(read, groups, pipeline, flag, text);
  const std::string refusal = megatronVirtualPipelineRefusal(pipeline, chunks);
  if (!refusal.empty()) fail(flag, text, refusal);
  if (chunks > 1 && placement == nullptr) {
    const std::string given = read.virtual_stages ? "--num-virtual-stages-per-pipeline-rank " + std::to_string(chunks)
                                                  : "--num-layers-per-virtual-pipeline-stage " +
                                                        std::to_string(*read.layers_per_virtual_stage) + " (" +
                                                        std::to_string(chunks) + " virtual stages per rank)";
    fail(flag, text, given + ": a virtual pipeline, several model chunks per rank; this command takes one chunk per rank");
  }
  if (static_cast<std::size_t>(pipeline) * static_cast<std::size_t>(chunks) > profile.layerCount()) {
    fail(flag, text, std::to_string(pipeline) + " stages" +
                         (chunks > 1 ? " x " + std::to_string(chunks) + " chunks" : std::string()) +
                         " for the profile's " + std::to_string(profile.layerCount()) + " layers");
  }
  std::vector<int> blocks =
      megatronBlocksFromFlags(groups.block_layers, pipeline, read.embedding, read.loss, read.first, read.last, chunks);
  if (blocks.empty()) {
    fail(flag, text, "Megatron refuses these flags for " + std::to_string(groups.block_layers) +
                         " transformer layers on " + std::to_string(pipeline) + " stages" +
                         (chunks > 1 ? " of " + std::to_string(chunks) + " chunks each" : std::string()) +
                         " (uneven middle stages, a flag below 1, or both kinds of flag" +
                         (chunks > 1 ? ", or a rank's layers not a multiple of its chunks" : "") + ")");
  }
  blocks.front() += groups.embedding_layers;
  blocks.back() += groups.loss_layers;
  if (placement && chunks > 1) *placement = Placement::loop(pipeline, chunks);
  return blocks;
}

// Megatron's flags, with a layout or without.
std::vector<int> fromMegatronText(const std::string& text, const Profile& profile, int stages, Placement* placement,
                                  const std::string& flag) {
  const MegatronWords read = readMegatronWords(commandWords(text), flag, text);
  checkMegatronFlagSet(read, flag, text);
  return read.layout ? fromLayoutFlags(read, profile, stages, placement, flag, text)
                     : fromMegatronFlags(read, profile, stages, placement, flag, text);
}

// The quoted names in `text`, in order.
std::vector<std::string> quotedNames(const std::string& text) {
  std::vector<std::string> names;
  for (std::size_t i = text.find('"'); i != std::string::npos; i = text.find('"', i + 1)) {
    std::string name;
    for (++i; i < text.size() && text[i] != '"'; ++i) {
      if (text[i] == '\\' && i + 1 < text.size()) ++i;
      name += text[i];
    }
    names.push_back(name);
  }
  return names;
}

int layerNamed(const Profile& profile, const std::string& name, const std::string& flag, const std::string& text) {
  for (std::size_t k = 0; k < profile.layerCount(); ++k) {
    if (profile.layers[k].name == name) return static_cast<int>(k);
  }
  fail(flag, text, "the profile has no layer named \"" + name + "\"");
}

// PiPPy's split_spec: each split point begins a stage.
std::vector<int> fromSplitSpec(const std::string& text, const Profile& profile, const std::string& flag) {
  std::vector<int> starts{0};
  for (const std::string& name : quotedNames(text)) {
    const int start = layerNamed(profile, name, flag, text);
    if (start <= starts.back()) fail(flag, text, "split points must name layers in chain order, after the first");
    starts.push_back(start);
  }
  starts.push_back(static_cast<int>(profile.layerCount()));
  std::vector<int> counts;
  for (std::size_t s = 0; s + 1 < starts.size(); ++s) counts.push_back(starts[s + 1] - starts[s]);
  return counts;
}

// torchtitan's module_fqns_per_model_part: each part's modules, in chain order.
std::vector<int> fromModuleLists(const std::string& text, const Profile& profile, const std::string& flag) {
  const std::string body = text.substr(text.find('[') + 1);
  std::vector<int> counts;
  int next = 0;
  std::size_t open = body.find('[');
  while (open != std::string::npos) {
    const std::size_t close = body.find(']', open);
    if (close == std::string::npos) fail(flag, text, "a model part's list is not closed");
    int count = 0;
    for (const std::string& name : quotedNames(body.substr(open, close - open))) {
      if (layerNamed(profile, name, flag, text) != next) {
        fail(flag, text, "\"" + name + "\" is not the next layer of the chain (" +
                             (next < static_cast<int>(profile.layerCount()) ? profile.layers[next].name
                                                                             : std::string("the chain has ended")) +
                             ")");
      }
      ++next;
      ++count;
    }
    counts.push_back(count);
    open = body.find('[', close);
  }
  return counts;
}

// Megatron's tensor-parallel flags, as printed beside its split: they say nothing of the split,
// but a degree must be the profile's, whose layers are the shards of that degree.
std::string withoutTensorParallelFlags(const std::string& raw, const Profile& profile, const std::string& flag) {
  std::string text = raw;
  const std::string size_flag = "--tensor-model-parallel-size";
  if (const auto at = text.find(size_flag); at != std::string::npos) {
    // argparse reads "--flag value" and "--flag=value" alike.
    std::size_t end = at + size_flag.size();
    if (end < text.size() && text[end] == '=') {
      ++end;
    } else {
      while (end < text.size() && text[end] == ' ') ++end;
    }
    const std::size_t digits = text.find_first_not_of("0123456789", end);
    const std::string value = text.substr(end, (digits == std::string::npos ? text.size() : digits) - end);
    if (value.empty() || value.size() > 4) fail(flag, raw, size_flag + " needs a whole number");
    const int ranks = profileTensorParallel(profile);
    if (std::stoi(value) != ranks) {
      fail(flag, raw, size_flag + " " + value + " but the profile's layers are shards of tensor parallel " +
                          std::to_string(ranks) + "; profile with --tensor-parallel " + value);
    }
    text.erase(at, end + value.size() - at);
  }
  const std::string sequence_flag = "--sequence-parallel";
  if (const auto at = text.find(sequence_flag); at != std::string::npos) text.erase(at, sequence_flag.size());
  return text;
}

}  // namespace

std::vector<int> parseSplitText(const std::string& raw, const Profile& profile, int stages, const std::string& flag,
                                Placement* placement) {
  if (placement) *placement = Placement{};
  const std::string text = trimmed(withoutTensorParallelFlags(raw, profile, flag));
  const int layers = static_cast<int>(profile.layerCount());
  const int modules = layers - trailingLossLayers(profile);
  if (text.empty()) fail(flag, "''", std::string("is empty; ") + kForms);
  std::vector<int> counts;
  bool over_modules_possible = false;  // parts and balance may leave the loss out
  if (text.compare(0, 2, "--") == 0) {
    counts = fromMegatronText(text, profile, stages, placement, flag);
  } else if (text.rfind("split_spec={", 0) == 0) {
    counts = fromSplitSpec(text, profile, flag);
    over_modules_possible = true;
  } else if (text.rfind("module_fqns_per_model_part=[", 0) == 0) {
    counts = fromModuleLists(text, profile, flag);
    over_modules_possible = true;
  } else if (const auto parts = bracketed(text.substr(0, text.find('\n')), "parts")) {
    const auto bounds = integerList(*parts);
    if (!bounds || bounds->size() < 2 || bounds->front() != 0) {
      fail(flag, text, "parts=[...] lists stage boundaries from 0, e.g. parts=[0, 4, 7, 8]");
    }
    for (std::size_t s = 0; s + 1 < bounds->size(); ++s) counts.push_back((*bounds)[s + 1] - (*bounds)[s]);
    over_modules_possible = true;
  } else if (const auto balance = bracketed(text, "balance")) {
    const auto values = integerList(*balance);
    if (!values) fail(flag, text, "balance=[...] lists layers per stage, e.g. balance=[4, 3, 1]");
    counts = *values;
    over_modules_possible = true;
  } else if (text.find_first_not_of("Etm*0123456789|L(),") == std::string::npos &&
             text.find_first_of("EtL") != std::string::npos) {
    counts = fromLayout(text, profile, flag, text);
    placeLayout(static_cast<int>(counts.size()), std::nullopt, stages, placement, flag, text);
  } else {
    const auto values = integerList(text);
    if (!values) fail(flag, text, std::string("not a split stagecut reads; ") + kForms);
    counts = *values;
  }
  for (std::size_t s = 0; s < counts.size(); ++s) {
    if (counts[s] <= 0) fail(flag, text, "stage " + std::to_string(s) + " has no layers; every stage needs at least one");
  }
  long long total = std::accumulate(counts.begin(), counts.end(), 0LL);
  if (over_modules_possible && total == modules && modules < layers) {
    counts.back() += layers - modules;  // the frameworks' loss_fn runs on the last stage
    total = layers;
  }
  if (total != layers) {
    fail(flag, text, std::to_string(total) + " layers, the profile has " + std::to_string(layers) +
                         (modules < layers && over_modules_possible
                              ? " (" + std::to_string(modules) + " before the loss)"
                              : ""));
  }
  const bool chunked = placement && placement->chunked();
  if (stages > 0 && !chunked && static_cast<int>(counts.size()) != stages) {
    fail(flag, text, std::to_string(counts.size()) + " stages, --stages is " + std::to_string(stages));
  }
  if (placement && !chunked) *placement = Placement::loop(static_cast<int>(counts.size()), 1);
  return counts;
}

}  // namespace stagecut
