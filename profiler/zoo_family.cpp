#include "profiler/zoo_family.h"

#include <algorithm>

#include "core/error.h"
#include "core/suggest.h"

namespace stagecut {

bool ModelFamily::takes(const std::string& key) const {
  return std::find(settings.begin(), settings.end(), key) != settings.end();
}

std::string joinedNames(const std::vector<std::string>& names, const std::string& last_separator) {
  std::string text;
  for (std::size_t i = 0; i < names.size(); ++i) {
    text += (i == 0 ? "" : i + 1 == names.size() ? last_separator : ", ") + names[i];
  }
  return text;
}

const ModelFamily& findModelFamily(const std::vector<ModelFamily>& families, const std::string& name) {
  std::vector<std::string> names;
  for (const ModelFamily& family : families) {
    if (family.name == name) return family;
    names.push_back(family.name);
  }
  throw Error("--model " + name + ": not a built-in model" + unknownNameHint(name, names));
}

void checkZooOptions(const std::vector<ModelFamily>& families, const ZooOptions& options) {
  const ModelFamily& family = findModelFamily(families, options.family);
  // A preset the family has none of would be ignored, and the profile not the model asked for.
  if (family.presets.empty() && !options.preset.empty()) {
    throw Error("--preset " + options.preset + ": --model " + family.name + " has no presets (" +
                familyNamesWhere(families, [](const ModelFamily& f) { return !f.presets.empty(); }) +
                " have them); size it with its own flags, or leave --preset out");
  }
  if (!family.tensor_parallel && options.parallel != ParallelDegrees{}) {
    throw Error("--tensor-parallel: --model " + family.name + " has no tensor-parallel shards; " +
                familyNamesWhere(families, [](const ModelFamily& f) { return f.tensor_parallel; }) + " have");
  }
  family.check(options);
}

}  // namespace stagecut
