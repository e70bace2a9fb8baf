#include "runtime/model_from_profile.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include "core/error.h"
#include "profiler/input_spec.h"
#include "profiler/torchscript_chain.h"
#include "profiler/zoo.h"

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

ZooOptions zooOptionsFrom(const Profile& profile, const std::string& source_name) {
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
  options.ffn = configInt(config, "ffn", source_name);
  options.seq = configInt(config, "seq", source_name);
  options.vocab = configInt(config, "vocab", source_name);
  options.image_size = configInt(config, "image_size", source_name);
  options.classes = configInt(config, "classes", source_name);
  if (config.contains("seed")) {
    if (!config["seed"].is_number_unsigned() && !(config["seed"].is_number_integer() && config["seed"].get<std::int64_t>() >= 0)) {
      throw Error(source_name + ": model.config field \"seed\" must be a whole number 0 or more, got " +
                  config["seed"].dump() + "; profile the model again");
    }
    options.seed = config["seed"].get<std::uint64_t>();
  }
  return options;
}

InputSpec inputSpecFrom(const nlohmann::json& config, const std::string& source_name) {
  InputSpec spec;
  try {
    spec.shape = config.at("input_shape").get<std::vector<std::int64_t>>();
    spec.dtype = config.at("input_dtype").get<std::string>();
    if (config.contains("input_range")) {
      spec.low = config["input_range"][0].get<std::int64_t>();
      spec.high = config["input_range"][1].get<std::int64_t>();
    }
  } catch (const nlohmann::json::exception&) {
    throw Error(source_name + ": model.config lacks the TorchScript input (input_shape, input_dtype); "
                              "profile the module again with stagecut profile --torchscript");
  }
  return spec;
}

}  // namespace

void checkModelOfProfile(const Profile& profile, const std::string& source_name) {
  const std::string& source = profile.model.source;
  if (source.rfind("zoo:", 0) == 0) {
    try {
      checkZooOptions(zooOptionsFrom(profile, source_name));
    } catch (const Error& error) {
      const std::string message = error.what();
      if (message.rfind(source_name + ":", 0) == 0) throw;
      throw Error(source_name + ": model.config describes no model stagecut can build (" + message +
                  "); profile the model again");
    }
  } else if (source.rfind("torchscript:", 0) == 0) {
    inputSpecFrom(profile.model.config, source_name);
    const std::string path = source.substr(12);
    if (::access(path.c_str(), R_OK) != 0) {
      throw Error(source_name + ": its TorchScript model " + path + " cannot be read (" + std::strerror(errno) +
                  "); validate rebuilds the model from it");
    }
  } else {
    throw Error(source_name + ": model source \"" + source +
                "\" cannot be run here; validate needs a profile made by stagecut profile (a zoo model or a "
                "TorchScript chain)");
  }
}

LayerChain buildChainFromProfile(const Profile& profile, const std::string& source_name) {
  // The zoo seeds LibTorch's global generator (torch::manual_seed) and draws the weights from it:
  // ranks that are threads of one process (the in-process world) take turns, or their draws would
  // interleave and their weights differ.
  static std::mutex building;
  const std::lock_guard<std::mutex> lock(building);
  checkModelOfProfile(profile, source_name);
  const std::string& source = profile.model.source;
  const LayerChain chain =
      source.rfind("zoo:", 0) == 0
          ? buildZooModel(zooOptionsFrom(profile, source_name))
          : loadTorchScriptChain(source.substr(12), inputSpecFrom(profile.model.config, source_name), 0);
  if (chain.layers.size() != profile.layers.size()) {
    throw Error(source_name + ": the model rebuilt from the profile has " + std::to_string(chain.layers.size()) +
                " layers, the profile " + std::to_string(profile.layers.size()) + "; profile the model again");
  }
  for (std::size_t i = 0; i < chain.layers.size(); ++i) {
    if (chain.layers[i].name != profile.layers[i].name) {
      throw Error(source_name + ": layer " + std::to_string(i) + " of the rebuilt model is \"" +
                  chain.layers[i].name + "\", the profile's \"" + profile.layers[i].name +
                  "\"; profile the model again");
    }
  }
  return chain;
}

}  // namespace stagecut
