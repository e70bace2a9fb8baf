#include "runtime/model_from_profile.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "profiler/model_families.h"
#include "profiler/recorded_config.h"
#include "profiler/torchscript_chain.h"
#include "profiler/zoo.h"
#include "runtime/model_config.h"

namespace stagecut {

namespace {

// A TorchScript file whose fingerprint is now `fingerprint` must be the one profiled (a profile
// from before fingerprints were recorded is not checked).
void requireProfiledFile(const Profile& profile, const std::string& fingerprint, const std::string& source_name) {
  if (profile.model.fingerprint.empty() || fingerprint == profile.model.fingerprint) return;
  throw Error(source_name + ": its TorchScript model " + profile.model.source.substr(12) +
              " has changed since it was profiled (its fingerprint differs from model.fingerprint); profile "
              "the model again, or validate with the file that was profiled");
}

// The rebuilt model must be the profiled one layer for layer: a profile whose names were edited
// (two swapped) would pin one layer's costs on another.
void requireLayersOfProfile(const LayerChain& chain, const Profile& profile, const std::string& source_name) {
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
}

// The model of the profile, described (nothing built) or built whole. A TorchScript chain is
// loaded either way: its layers are what the file holds.
LayerChain chainOfProfile(const Profile& profile, const std::string& source_name, bool build) {
  checkModelConfig(profile, source_name, modelFamilies());
  const std::string& source = profile.model.source;
  if (const std::optional<std::string> family = zooFamilyOfSource(source)) {
    const ZooOptions options = readZooConfig(*family, profile.model.config, source_name);
    return build ? buildZooModel(options) : describeZooModel(options);
  }
  const std::string path = source.substr(12);
  if (::access(path.c_str(), R_OK) != 0) {
    throw Error(source_name + ": its TorchScript model " + path + " cannot be read (" + std::strerror(errno) +
                "); validate rebuilds the model from it");
  }
  LayerChain chain = loadTorchScriptChain(path, readInputSpec(profile.model.config, source_name), 0);
  requireProfiledFile(profile, chain.fingerprint, source_name);
  return chain;
}

}  // namespace

void checkModelOfProfile(const Profile& profile, const std::string& source_name) {
  requireLayersOfProfile(chainOfProfile(profile, source_name, false), profile, source_name);
}

LayerChain buildChainFromProfile(const Profile& profile, const std::string& source_name) {
  LayerChain chain = chainOfProfile(profile, source_name, true);
  requireLayersOfProfile(chain, profile, source_name);
  return chain;
}

}  // namespace stagecut
