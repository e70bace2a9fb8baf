#pragma once

// What a zoo model family is, and the checks every family's options pass before its own: a
// known family, a preset it has, tensor parallelism only where it shards. Free of LibTorch (the
// fuzz build compiles it alone); the registry of families is model_families.h.

#include <string>
#include <vector>

#include "profiler/zoo.h"

namespace stagecut {

struct LayerChain;

/// One zoo model family: what `profile --model NAME` builds, and what validate rebuilds from a
/// profile whose model.source is "zoo:NAME" (docs/extending.md, "Adding a model family").
struct ModelFamily {
  std::string name;                   ///< --model's value, "zoo:<name>" in a profile
  /// Its named shapes (--preset); none: it is sized by its settings alone, and --preset is refused.
  std::vector<std::string> presets;
  std::string default_preset;         ///< the preset no --preset means; "" when it has none
  /// The settings it takes (zooSettings() keys, recorded_config.h); a setting of another
  /// family's given to it is refused by name.
  std::vector<std::string> settings;
  bool tensor_parallel = false;       ///< its layers can be tensor-parallel shards (ZooOptions::parallel)
  /// Its own checks (sizes, shapes, memory) of options whose family, preset and degrees
  /// checkZooOptions passed. Throws Error (input) naming the flag. It allocates nothing: validate
  /// runs it on a profile before any rank starts (the built-in families' are also free of
  /// LibTorch, for the fuzz target of that check).
  void (*check)(const ZooOptions& options) = nullptr;
  /// Its chain, every layer described and none built (addLayer, zoo_builders.h), from options
  /// `check` passed; it records its model.config with recordZooConfig (recorded_config.h).
  LayerChain (*describe)(const ZooOptions& options) = nullptr;

  /// Whether it takes the setting recorded under `key` ("kv_heads").
  bool takes(const std::string& key) const;
};

/// The family named `name` among `families`. Throws Error (input) naming --model and the families:
/// "--model resnet: not a built-in model; use one of: mlp, gpt, llama, vgg16".
const ModelFamily& findModelFamily(const std::vector<ModelFamily>& families, const std::string& name);

/// The names of the families `holds` is true for, as a sentence: "gpt and llama", "gpt, llama
/// and mlp" (or "gpt, llama or mlp" with last_separator " or "); "" for none.
template <typename Predicate>
std::string familyNamesWhere(const std::vector<ModelFamily>& families, Predicate holds,
                             const std::string& last_separator = " and ");

/// The checks before a zoo model is described or built: options.family among `families`, a
/// preset only for a family with presets, tensor parallelism only for one whose layers shard,
/// then the family's own check. Throws Error (input) naming the flag.
void checkZooOptions(const std::vector<ModelFamily>& families, const ZooOptions& options);

/// "a, b and c" ("a" alone, "" for none).
std::string joinedNames(const std::vector<std::string>& names, const std::string& last_separator = " and ");

template <typename Predicate>
std::string familyNamesWhere(const std::vector<ModelFamily>& families, Predicate holds,
                             const std::string& last_separator) {
  std::vector<std::string> names;
  for (const ModelFamily& family : families) {
    if (holds(family)) names.push_back(family.name);
  }
  return joinedNames(names, last_separator);
}

}  // namespace stagecut
