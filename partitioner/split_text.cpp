#include "partitioner/split_text.h"

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

// Checks a layout's syntax before it is expanded: each x*N after a symbol, N whole and at most
// the chain's length.
void checkLayoutSyntax(const std::string& layout, const Profile& profile, const std::string& flag,
                       const std::string& text) {
  for (std::size_t i = 0; i < layout.size(); ++i) {
    if (layout[i] != '*') continue;
    if (i == 0 || layout[i - 1] == '|' || layout[i - 1] == '*') {
      fail(flag, text, "a repeat x*N needs a symbol before the '*'");
    }
    std::size_t end = i + 1;
    while (end < layout.size() && std::isdigit(static_cast<unsigned char>(layout[end]))) ++end;
    if (end == i + 1 || end - i - 1 > 6) fail(flag, text, "a repeat x*N needs a whole number N after the '*'");
    const long repeat = std::atol(layout.substr(i + 1, end - i - 1).c_str());
    if (repeat < 1 || repeat > static_cast<long>(profile.layerCount())) {
      fail(flag, text, "a repeat of " + std::to_string(repeat) + " layers; the profile has " +
                           std::to_string(profile.layerCount()));
    }
  }
}

std::vector<int> fromLayout(const std::string& layout, const Profile& profile, const std::string& flag,
                            const std::string& text) {
  checkLayoutSyntax(layout, profile, flag, text);
  const MegatronGroups groups = megatronGroups(profile);
  std::vector<int> counts;
  const std::vector<std::string> stages = expandMegatronLayout(layout);
  for (std::size_t s = 0; s < stages.size(); ++s) {
    int layers = 0;
    for (std::size_t i = 0; i < stages[s].size(); ++i) {
      const char symbol = stages[s][i];
      if (symbol == 'E') {
        if (s != 0 || i != 0) fail(flag, text, "the embedding E must be the first layer of the first stage");
        layers += groups.embedding_layers;
      } else if (symbol == 'L') {
        if (s + 1 != stages.size() || i + 1 != stages[s].size()) {
          fail(flag, text, "the loss L must be the last layer of the last stage");
        }
        layers += groups.loss_layers;
      } else if (symbol == 't') {
        ++layers;
      } else {
        fail(flag, text, std::string("a layout holds E, t and L only, not '") + symbol + "'");
      }
    }
    counts.push_back(layers);
  }
  return counts;
}

std::vector<int> fromMegatronFlags(const std::string& text, const Profile& profile, int stages,
                                   const std::string& flag) {
  std::istringstream words(text);
  std::string word;
  bool embedding = false, loss = false;
  std::optional<int> first, last, num_layers, size;
  auto number = [&](const std::string& name) {
    std::string value;
    if (!(words >> value) || value.find_first_not_of("0123456789") != std::string::npos || value.size() > 6) {
      fail(flag, text, name + " needs a whole number");
    }
    return std::atoi(value.c_str());
  };
  while (words >> word) {
    if (word == "--account-for-embedding-in-pipeline-split") embedding = true;
    else if (word == "--account-for-loss-in-pipeline-split") loss = true;
    else if (word == "--decoder-first-pipeline-num-layers") first = number(word);
    else if (word == "--decoder-last-pipeline-num-layers") last = number(word);
    else if (word == "--num-layers") num_layers = number(word);
    else if (word == "--pipeline-model-parallel-size") size = number(word);
    else fail(flag, text, "unknown Megatron flag '" + word + "'; " + kForms);
  }
  const MegatronGroups groups = megatronGroups(profile);
  if (num_layers && *num_layers != groups.block_layers) {
    fail(flag, text, "--num-layers " + std::to_string(*num_layers) + ", the profile has " +
                         std::to_string(groups.block_layers) + " transformer layers");
  }
  if (size && stages > 0 && *size != stages) {
    fail(flag, text, "--pipeline-model-parallel-size " + std::to_string(*size) + " but --stages " + std::to_string(stages));
  }
  const int pipeline = size ? *size : stages;
  if (!size && stages <= 0) fail(flag, text, "add --pipeline-model-parallel-size N (or --stages N)");
  if (pipeline < 1 || pipeline > static_cast<int>(profile.layerCount())) {
    fail(flag, text, std::to_string(pipeline) + " stages for the profile's " + std::to_string(profile.layerCount()) +
                         " layers");
  }
  std::vector<int> blocks = megatronBlocksFromFlags(groups.block_layers, pipeline, embedding, loss, first, last);
  if (blocks.empty()) {
    fail(flag, text, "Megatron refuses these flags for " + std::to_string(groups.block_layers) +
                         " transformer layers on " + std::to_string(pipeline) +
                         " stages (uneven middle stages, a flag below 1, or both kinds of flag)");
  }
  blocks.front() += groups.embedding_layers;
  blocks.back() += groups.loss_layers;
  return blocks;
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
    std::size_t end = at + size_flag.size();
    while (end < text.size() && text[end] == ' ') ++end;
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

std::vector<int> parseSplitText(const std::string& raw, const Profile& profile, int stages, const std::string& flag) {
  const std::string text = trimmed(withoutTensorParallelFlags(raw, profile, flag));
  const int layers = static_cast<int>(profile.layerCount());
  const int modules = layers - trailingLossLayers(profile);
  if (text.empty()) fail(flag, "''", std::string("is empty; ") + kForms);
  std::vector<int> counts;
  bool over_modules_possible = false;  // parts and balance may leave the loss out
  const std::string layout_flag = "--pipeline-model-parallel-layout";
  if (text.compare(0, layout_flag.size(), layout_flag) == 0) {
    std::string layout = trimmed(text.substr(layout_flag.size()));
    if (layout.size() >= 2 && (layout.front() == '"' || layout.front() == '\'') && layout.back() == layout.front()) {
      layout = layout.substr(1, layout.size() - 2);
    }
    counts = fromLayout(layout, profile, flag, text);
  } else if (text.compare(0, 2, "--") == 0) {
    counts = fromMegatronFlags(text, profile, stages, flag);
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
  } else if (text.find_first_not_of("Et*0123456789|L") == std::string::npos && text.find_first_of("EtL") != std::string::npos) {
    counts = fromLayout(text, profile, flag, text);
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
  if (stages > 0 && static_cast<int>(counts.size()) != stages) {
    fail(flag, text, std::to_string(counts.size()) + " stages, --stages is " + std::to_string(stages));
  }
  return counts;
}

}  // namespace stagecut
