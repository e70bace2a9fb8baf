#include "runtime/model_config.h"

#include "core/error.h"
#include "core/parallel_degrees.h"
#include "profiler/model_fingerprint.h"
#include "profiler/recorded_config.h"

namespace stagecut {

namespace {

void checkZooModelConfig(const Profile& profile, const std::string& family, const std::string& source_name,
                         const std::vector<ModelFamily>& families) {
  const ParallelDegrees degrees = readParallelDegrees(profile.model.config, source_name);
  if (degrees.tensor_parallel != 1) {
    throw Error(source_name + ": its layers are tensor-parallel shards (profiled with --tensor-parallel " +
                std::to_string(degrees.tensor_parallel) + "), and validate runs each stage on one device without "
                "tensor parallelism; profile without --tensor-parallel to validate a split");
  }
  const ZooOptions options = readZooConfig(family, profile.model.config, source_name);
  try {
    checkZooOptions(families, options);
  } catch (const Error& error) {
    throw Error(source_name + ": model.config describes no model stagecut can build (" + error.what() +
                "); profile the model again");
  }
  if (!profile.model.fingerprint.empty() &&
      zooFingerprint(profile.model.source, profile.model.config) != profile.model.fingerprint) {
    throw Error(source_name + ": model.config is not the one that was profiled (it no longer matches "
                "model.fingerprint); profile the model again");
  }
}

}  // namespace

void checkModelConfig(const Profile& profile, const std::string& source_name,
                      const std::vector<ModelFamily>& families) {
  const std::string& source = profile.model.source;
  if (const std::optional<std::string> family = zooFamilyOfSource(source)) {
    checkZooModelConfig(profile, *family, source_name, families);
  } else if (source.rfind("torchscript:", 0) == 0) {
    readInputSpec(profile.model.config, source_name);
  } else {
    throw Error(source_name + ": model source \"" + source +
                "\" cannot be run here; validate needs a profile made by stagecut profile (a zoo model or a "
                "TorchScript chain)");
  }
}

}  // namespace stagecut
