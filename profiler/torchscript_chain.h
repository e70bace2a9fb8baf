#pragma once

#include <cstdint>
#include <string>

#include "profiler/input_spec.h"
#include "profiler/layer_chain.h"

namespace stagecut {

/// Loads a module saved with torch.jit.save and makes its top-level children, in order, the
/// layers of a chain; batches follow `input` with the first dimension as the row count.
/// Checks on a sample input that the module's forward equals the composition of its children.
/// Throws Error (input) naming the file when it is not a TorchScript module, has no children,
/// a child does not return one tensor, or the children do not compose to the module.
LayerChain loadTorchScriptChain(const std::string& path, const InputSpec& input, std::uint64_t seed);

}  // namespace stagecut
