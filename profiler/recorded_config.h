#pragma once

// The model.config a profile records, and its one writer and reader: a zoo model's settings
// (the sizes its family resolved, the seed, the parallel degrees of core/parallel_degrees.h), or
// a TorchScript chain's sample input. The profiler writes it, validate reads it back to rebuild
// the model, and the profile command takes its zoo flags from the same table. Free of LibTorch:
// the fuzz build compiles it alone.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiler/input_spec.h"
#include "profiler/zoo.h"

namespace stagecut {

/// One setting of a zoo model: the key model.config records it under, the profile flag that
/// sets it, and its field in ZooOptions (exactly one of the three member pointers is set).
struct ZooSetting {
  const char* key;   ///< "kv_heads"
  const char* flag;  ///< "--kv-heads"; nullptr for a setting only a preset gives (qkv_bias)
  const char* help;  ///< the flag's help, before the families that take it
  int ZooOptions::*size = nullptr;                    ///< a whole number from 1 to 2^30
  double ZooOptions::*number = nullptr;               ///< a finite number above 0
  std::optional<bool> ZooOptions::*choice = nullptr;  ///< on or off
};

/// Every setting a zoo family may take, in --help's order. A family names the ones it takes
/// (ModelFamily::settings); a setting no family has yet is a field of ZooOptions and a row here.
const std::vector<ZooSetting>& zooSettings();

/// "zoo:<family>": a zoo model's model.source.
std::string zooSource(const std::string& family);

/// The family of a zoo model's model.source ("zoo:gpt" -> "gpt"); nullopt for another source.
std::optional<std::string> zooFamilyOfSource(const std::string& source);

/// The model.config of a zoo model whose family resolved its shape into `settings`: every
/// setting given there (a size or number above 0, a choice made), its seed and its parallel
/// degrees. A family passes the sizes it built, not its preset's name, so that validate rebuilds
/// the model from this alone; facts of the build it adds after (llama's "attention") are not
/// read back.
nlohmann::json recordZooConfig(const ZooOptions& settings);

/// The request a zoo model's model.config records, for `family`: its settings, seed and parallel
/// degrees (the rest 0: the family's defaults). Throws Error (input) naming `where` and the field
/// when a size is not a whole number from 1 to 2^30, a number not above 0, a choice not true or
/// false, the seed not a whole number 0 or more, or the degrees not degrees.
ZooOptions readZooConfig(const std::string& family, const nlohmann::json& config, const std::string& where);

/// The model.config of a TorchScript chain profiled on `input`: input_shape, input_dtype and,
/// for integers, input_range.
nlohmann::json recordInputSpec(const InputSpec& input);

/// The sample input a TorchScript chain's model.config records, held to --input's rules.
/// Throws Error (input) naming `where` and the field otherwise.
InputSpec readInputSpec(const nlohmann::json& config, const std::string& where);

}  // namespace stagecut
