#include "profiler/recorded_config.h"

#include "core/error.h"
#include "core/parallel_degrees.h"

namespace stagecut {

namespace {

const char* const kZooSourcePrefix = "zoo:";

// Beyond this a recorded size is no model's: the zoo's own bounds are lower.
constexpr std::int64_t kMaxRecordedSize = 1 << 30;

const char* const kProfileAgain = "; profile the model again";
const char* const kTorchScriptAdvice = "; profile the module again with stagecut profile --torchscript";

[[noreturn]] void refuseField(const std::string& where, const std::string& key, const std::string& problem,
                              const nlohmann::json& value) {
  throw Error(where + ": model.config field \"" + key + "\" must be " + problem + ", got " + value.dump() +
              kProfileAgain);
}

void readSetting(const ZooSetting& setting, const nlohmann::json& value, const std::string& where, ZooOptions& into) {
  if (setting.size != nullptr) {
    if (!value.is_number_integer() || value.get<std::int64_t>() < 1 || value.get<std::int64_t>() > kMaxRecordedSize) {
      refuseField(where, setting.key, "a whole number from 1 to " + std::to_string(kMaxRecordedSize), value);
    }
    into.*setting.size = value.get<int>();
  } else if (setting.number != nullptr) {
    // The family's check then holds it to its flag's range.
    if (!value.is_number() || !(value.get<double>() > 0)) refuseField(where, setting.key, "a number above 0", value);
    into.*setting.number = value.get<double>();
  } else {
    if (!value.is_boolean()) refuseField(where, setting.key, "true or false", value);
    into.*setting.choice = value.get<bool>();
  }
}

}  // namespace

const std::vector<ZooSetting>& zooSettings() {
  static const std::vector<ZooSetting> settings = {
      {"layers", "--layers", "Blocks or layers, overriding the preset", &ZooOptions::layers},
      {"hidden", "--hidden", "Model width", &ZooOptions::hidden},
      {"heads", "--heads", "Attention (query) heads", &ZooOptions::heads},
      {"kv_heads", "--kv-heads", "Key/value heads (grouped-query attention; divides --heads)", &ZooOptions::kv_heads},
      {"ffn", "--ffn", "Feed-forward width (gpt: 4 x hidden by default; llama: the SwiGLU width)", &ZooOptions::ffn},
      {"seq", "--seq", "Sequence length", &ZooOptions::seq},
      {"vocab", "--vocab", "Vocabulary size", &ZooOptions::vocab},
      {"rope_theta", "--rope-theta", "Rotary embedding base (e.g. 10000 or 500000)", nullptr, &ZooOptions::rope_theta},
      {"norm_eps", "--norm-eps", "RMSNorm epsilon (e.g. 1e-5)", nullptr, &ZooOptions::norm_eps},
      {"qkv_bias", nullptr, "Biases on the q, k and v projections (Qwen2)", nullptr, nullptr, &ZooOptions::qkv_bias},
      {"image_size", "--image-size", "Image height and width (default 224)", &ZooOptions::image_size},
      {"classes", "--classes", "Classes (default 1000)", &ZooOptions::classes},
  };
  return settings;
}

std::string zooSource(const std::string& family) { return kZooSourcePrefix + family; }

std::optional<std::string> zooFamilyOfSource(const std::string& source) {
  const std::string prefix = kZooSourcePrefix;
  if (source.rfind(prefix, 0) != 0) return std::nullopt;
  return source.substr(prefix.size());
}

nlohmann::json recordZooConfig(const ZooOptions& settings) {
  nlohmann::json config = nlohmann::json::object();
  for (const ZooSetting& setting : zooSettings()) {
    if (setting.size != nullptr && settings.*setting.size > 0) config[setting.key] = settings.*setting.size;
    if (setting.number != nullptr && settings.*setting.number > 0) config[setting.key] = settings.*setting.number;
    if (setting.choice != nullptr && (settings.*setting.choice).has_value()) {
      config[setting.key] = *(settings.*setting.choice);
    }
  }
  config["seed"] = settings.seed;
  writeParallelDegrees(settings.parallel, config);
  return config;
}

ZooOptions readZooConfig(const std::string& family, const nlohmann::json& config, const std::string& where) {
  if (!config.is_object()) {
    throw Error(where + ": model.config must be an object with the zoo model's sizes" + std::string(kProfileAgain));
  }
  ZooOptions options;
  options.family = family;
  for (const ZooSetting& setting : zooSettings()) {
    const auto found = config.find(setting.key);
    if (found != config.end()) readSetting(setting, *found, where, options);
  }
  if (const auto seed = config.find("seed"); seed != config.end()) {
    if (!seed->is_number_unsigned() && !(seed->is_number_integer() && seed->get<std::int64_t>() >= 0)) {
      refuseField(where, "seed", "a whole number 0 or more", *seed);
    }
    options.seed = seed->get<std::uint64_t>();
  }
  options.parallel = readParallelDegrees(config, where);
  return options;
}

nlohmann::json recordInputSpec(const InputSpec& input) {
  nlohmann::json config = {{"input_shape", input.shape}, {"input_dtype", input.dtype}};
  if (input.high > input.low) config["input_range"] = {input.low, input.high};
  return config;
}

InputSpec readInputSpec(const nlohmann::json& config, const std::string& where) {
  const auto shape = config.is_object() ? config.find("input_shape") : config.end();
  const auto dtype = config.is_object() ? config.find("input_dtype") : config.end();
  if (shape == config.end() || dtype == config.end()) {
    throw Error(where + ": model.config lacks the TorchScript input (input_shape, input_dtype)" + kTorchScriptAdvice);
  }
  // Written back as an --input spec, the recorded input is held to the same rules.
  std::string text;
  if (!shape->is_array() || shape->empty()) {
    throw Error(where + ": model.config field \"input_shape\" is not a list of dimensions" + kTorchScriptAdvice);
  }
  for (const auto& dim : *shape) {
    if (!dim.is_number_integer()) {
      throw Error(where + ": model.config field \"input_shape\" holds " + dim.dump() + ", not a whole number" +
                  kTorchScriptAdvice);
    }
    text += (text.empty() ? "" : "x") + dim.dump();
  }
  if (!dtype->is_string()) throw Error(where + ": model.config field \"input_dtype\" is not text" + kTorchScriptAdvice);
  text += ":" + dtype->get<std::string>();
  if (config.contains("input_range")) {
    const nlohmann::json& range = config["input_range"];
    if (!range.is_array() || range.size() != 2 || !range[0].is_number_integer() || !range[1].is_number_integer()) {
      throw Error(where + ": model.config field \"input_range\" is not [LOW, HIGH]" + kTorchScriptAdvice);
    }
    text += ":" + range[0].dump() + ".." + range[1].dump();
  }
  try {
    return parseInputSpec(text);
  } catch (const Error& error) {
    throw Error(where + ": model.config's TorchScript input is not one profile takes (" + error.what() + ")" +
                kTorchScriptAdvice);
  }
}

}  // namespace stagecut
