#include "profiler/model_families.h"

#include <mutex>

#include "core/error.h"
#include "profiler/layer_chain.h"
#include "profiler/model_fingerprint.h"
#include "profiler/recorded_config.h"

namespace stagecut {

namespace {

// The families a program added: its own, beside the library's, for the process's life.
struct AddedFamilies {
  std::mutex lock;
  std::vector<ModelFamily> families;
};

AddedFamilies& addedFamilies() {
  static AddedFamilies added;
  return added;
}

}  // namespace

// The built-in families' entries, each defined in its zoo file.
ModelFamily mlpFamily();
ModelFamily gptFamily();
ModelFamily llamaFamily();
ModelFamily vgg16Family();

namespace {

// The registry: one line a family.
std::vector<ModelFamily> builtInFamilies() {
  return {
      mlpFamily(),
      gptFamily(),
      llamaFamily(),
      vgg16Family(),
  };
}

}  // namespace

std::vector<ModelFamily> modelFamilies() {
  std::vector<ModelFamily> families = builtInFamilies();
  AddedFamilies& added = addedFamilies();
  const std::lock_guard<std::mutex> guard(added.lock);
  families.insert(families.end(), added.families.begin(), added.families.end());
  return families;
}

void addModelFamily(const ModelFamily& family) {
  if (family.name.empty() || family.check == nullptr || family.describe == nullptr) {
    throw Error("addModelFamily: the family \"" + family.name + "\" needs a name, a check and a describe function");
  }
  AddedFamilies& added = addedFamilies();
  const std::lock_guard<std::mutex> guard(added.lock);
  std::vector<ModelFamily> known = builtInFamilies();
  known.insert(known.end(), added.families.begin(), added.families.end());
  for (const ModelFamily& other : known) {
    if (other.name == family.name) {
      throw Error("addModelFamily: a family named \"" + family.name + "\" exists already; give yours another name");
    }
  }
  added.families.push_back(family);
}

void checkZooOptions(const ZooOptions& options) { checkZooOptions(modelFamilies(), options); }

LayerChain describeZooModel(const ZooOptions& options) {
  const std::vector<ModelFamily> families = modelFamilies();
  checkZooOptions(families, options);
  LayerChain chain = findModelFamily(families, options.family).describe(options);
  chain.source = zooSource(options.family);
  chain.fingerprint = zooFingerprint(chain.source, chain.config);
  return chain;
}

LayerChain buildZooModel(const ZooOptions& options) {
  ZooOptions whole = options;
  whole.one_layer_at_a_time = false;
  LayerChain chain = describeZooModel(whole);
  buildAllLayers(chain);
  return chain;
}

}  // namespace stagecut
