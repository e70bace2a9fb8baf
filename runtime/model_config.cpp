#include "runtime/model_config.h"

#include "core/error.h"
#include "profiler/model_fingerprint.h"

namespace stagecut {

namespace {

// A shape field of model.config; absent: 0, the preset's.
int configInt(const nlohmann::json& config, const char* key, const std::string& source_name) {
  const auto it = config.find(key);
  if (it == config.end()) return 0;
  if (!it->is_number_integer() || it->get<std::int64_t>() < 1 || it->get<std::int64_t>() > (1 << 30)) {
    throw Error(source_name + ": model.config field \"" + key + "\" must be a whole number from 1 to " +
                std::to_string(1 << 30) + ", got " + it->dump() + "; profile the model again");
  }
  return it->get<int>();
}

// A real-valued setting of model.config (llama's rope_theta, norm_eps); absent: 0, the preset's.
// The zoo's check then holds it to its flag's range.
double configNumber(const nlohmann::json& config, const char* key, const std::string& source_name) {
  const auto it = config.find(key);
  if (it == config.end()) return 0;
  if (!it->is_number() || !(it->get<double>() > 0)) {
    throw Error(source_name + ": model.config field \"" + key + "\" must be a number above 0, got " + it->dump() +
                "; profile the model again");
  }
  return it->get<double>();
}

const char* const kTorchScriptAdvice = "; profile the module again with stagecut profile --torchscript";

}  // namespace

ZooOptions zooOptionsFromConfig(const Profile& profile, const std::string& source_name) {
  const nlohmann::json& config = profile.model.config;
  if (!config.is_object()) {
    throw Error(source_name + ": model.config must be an object with the zoo model's sizes; profile the model again");
  }
  ZooOptions options;
  options.family = profile.model.source.substr(4);
  // Every shape field is recorded, so the preset only has to be a valid name.
  options.preset = options.family == "gpt" ? "gpt2-small" : "";
  options.layers = configInt(config, "layers", source_name);
  options.hidden = configInt(config, "hidden", source_name);
  options.heads = configInt(config, "heads", source_name);
  options.kv_heads = configInt(config, "kv_heads", source_name);
  options.ffn = configInt(config, "ffn", source_name);
  options.seq = configInt(config, "seq", source_name);
  options.vocab = configInt(config, "vocab", source_name);
  options.image_size = configInt(config, "image_size", source_name);
  options.classes = configInt(config, "classes", source_name);
  options.rope_theta = configNumber(config, "rope_theta", source_name);
  options.norm_eps = configNumber(config, "norm_eps", source_name);
  if (config.contains("qkv_bias")) {
    if (!config["qkv_bias"].is_boolean()) {
      throw Error(source_name + ": model.config field \"qkv_bias\" must be true or false, got " +
                  config["qkv_bias"].dump() + "; profile the model again");
    }
    options.qkv_bias = config["qkv_bias"].get<bool>();
  }
  if (config.contains("seed")) {
    if (!config["seed"].is_number_unsigned() && !(config["seed"].is_number_integer() && config["seed"].get<std::int64_t>() >= 0)) {
      throw Error(source_name + ": model.config field \"seed\" must be a whole number 0 or more, got " +
                  config["seed"].dump() + "; profile the model again");
    }
    options.seed = config["seed"].get<std::uint64_t>();
  }
  return options;
}

InputSpec inputSpecFromConfig(const nlohmann::json& config, const std::string& source_name) {
  const auto shape = config.is_object() ? config.find("input_shape") : config.end();
  const auto dtype = config.is_object() ? config.find("input_dtype") : config.end();
  if (shape == config.end() || dtype == config.end()) {
    throw Error(source_name + ": model.config lacks the TorchScript input (input_shape, input_dtype)" +
                kTorchScriptAdvice);
  }
  // Written back as an --input spec, the recorded input is held to the same rules.
  std::string text;
  if (!shape->is_array() || shape->empty()) {
    throw Error(source_name + ": model.config field \"input_shape\" is not a list of dimensions" + kTorchScriptAdvice);
  }
  for (const auto& dim : *shape) {
    if (!dim.is_number_integer()) {
      throw Error(source_name + ": model.config field \"input_shape\" holds " + dim.dump() +
                  ", not a whole number" + kTorchScriptAdvice);
    }
    text += (text.empty() ? "" : "x") + dim.dump();
  }
  if (!dtype->is_string()) {
    throw Error(source_name + ": model.config field \"input_dtype\" is not text" + kTorchScriptAdvice);
  }
  text += ":" + dtype->get<std::string>();
  if (config.contains("input_range")) {
    const nlohmann::json& range = config["input_range"];
    if (!range.is_array() || range.size() != 2 || !range[0].is_number_integer() || !range[1].is_number_integer()) {
      throw Error(source_name + ": model.config field \"input_range\" is not [LOW, HIGH]" + kTorchScriptAdvice);
    }
    text += ":" + range[0].dump() + ".." + range[1].dump();
  }
  try {
    return parseInputSpec(text);
  } catch (const Error& error) {
    throw Error(source_name + ": model.config's TorchScript input is not one profile takes (" + error.what() + ")" +
                kTorchScriptAdvice);
  }
}

void checkModelConfig(const Profile& profile, const std::string& source_name) {
  const std::string& source = profile.model.source;
  if (source.rfind("zoo:", 0) == 0) {
    const auto tensor_parallel = profile.model.config.find("tensor_parallel");
    if (tensor_parallel != profile.model.config.end() && *tensor_parallel != 1) {
      throw Error(source_name + ": its layers are tensor-parallel shards (profiled with --tensor-parallel " +
                  tensor_parallel->dump() + "), and validate runs each stage on one device without tensor "
                  "parallelism; profile without --tensor-parallel to validate a split");
    }
    const ZooOptions options = zooOptionsFromConfig(profile, source_name);
    try {
      checkZooOptions(options);
    } catch (const Error& error) {
      throw Error(source_name + ": model.config describes no model stagecut can build (" + error.what() +
                  "); profile the model again");
    }
    if (!profile.model.fingerprint.empty() && zooFingerprint(source, profile.model.config) != profile.model.fingerprint) {
      throw Error(source_name + ": model.config is not the one that was profiled (it no longer matches "
                  "model.fingerprint); profile the model again");
    }
  } else if (source.rfind("torchscript:", 0) == 0) {
    inputSpecFromConfig(profile.model.config, source_name);
  } else {
    throw Error(source_name + ": model source \"" + source +
                "\" cannot be run here; validate needs a profile made by stagecut profile (a zoo model or a "
                "TorchScript chain)");
  }
}

}  // namespace stagecut
