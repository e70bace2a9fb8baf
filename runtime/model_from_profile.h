#pragma once

#include <string>

#include "core/profile.h"
#include "profiler/layer_chain.h"

namespace stagecut {

/// Rebuilds the model a profile was measured on, from its metadata: a zoo model from
/// model.source "zoo:<family>" and model.config (weights from the seed recorded there), or a
/// TorchScript chain from "torchscript:<path>" and the recorded input. Every process that calls
/// it gets identical weights; threads calling it take turns (the weights come from LibTorch's global
/// generator). Throws Error (input) naming `source_name` when the profile was
/// imported (nothing to run) or its layers do not match the rebuilt model's.
LayerChain buildChainFromProfile(const Profile& profile, const std::string& source_name);

/// What buildChainFromProfile would refuse, found without building a zoo model's weights: a
/// source that cannot run, a model.config whose fields are not sizes or describe no buildable
/// model (heads that do not divide the width, weights beyond this machine's memory), a
/// TorchScript file that cannot be read or has changed, and layers (count or names) other than
/// the profile's. Throws Error (input) naming `source_name` and the field, so validate refuses the profile
/// before any rank starts.
void checkModelOfProfile(const Profile& profile, const std::string& source_name);

}  // namespace stagecut
