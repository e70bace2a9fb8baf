#pragma once

// The reader of a profile's model.config, free of LibTorch: what validate rebuilds the model
// from. Its fuzz target (fuzz/fuzz_model_config.cpp) compiles it alone.

#include <string>

#include "core/profile.h"
#include "profiler/input_spec.h"
#include "profiler/zoo.h"

namespace stagecut {

/// The zoo request a "zoo:<family>" profile's model.config records. Throws Error (input) naming
/// `source_name` and the field when a size is not a whole number from 1 to 2^30 or the seed is
/// not a whole number 0 or more.
ZooOptions zooOptionsFromConfig(const Profile& profile, const std::string& source_name);

/// The sample input a "torchscript:" profile's model.config records (input_shape, input_dtype,
/// input_range), held to --input's rules. Throws Error (input) naming `source_name` otherwise.
InputSpec inputSpecFromConfig(const nlohmann::json& config, const std::string& source_name);

/// Everything about a profile's model that can be checked without its files: a source that can
/// run, a model.config that reads and (for the zoo) describes a buildable model matching
/// model.fingerprint. Throws Error (input) naming `source_name`.
void checkModelConfig(const Profile& profile, const std::string& source_name);

}  // namespace stagecut
