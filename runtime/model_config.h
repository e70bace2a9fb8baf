#pragma once

// validate's checks of a profile's model.config before any rank starts, free of LibTorch: its
// fuzz target (fuzz/fuzz_model_config.cpp) compiles it alone. The config itself is written and
// read by one owner (profiler/recorded_config.h); the families come from the registry
// (profiler/model_families.h) or, in the fuzz target, from their checks alone.

#include <string>
#include <vector>

#include "core/profile.h"
#include "profiler/zoo_family.h"

namespace stagecut {

/// Everything about a profile's model that can be checked without its files: a source that can
/// run; for a zoo model, unsharded layers (validate runs no tensor parallelism), a model.config
/// that reads and describes a model its family among `families` can build, and that matches
/// model.fingerprint; for a TorchScript chain, a recorded input --input would take. Throws Error
/// (input) naming `source_name`.
void checkModelConfig(const Profile& profile, const std::string& source_name,
                      const std::vector<ModelFamily>& families);

}  // namespace stagecut
