#pragma once

// Pieces shared by the zoo families (internal to the profiler).

#include <string>

#include <ATen/CPUGeneratorImpl.h>

#include "core/error.h"
#include "profiler/layer_chain.h"
#include "profiler/zoo.h"
#include "profiler/zoo_checks.h"

namespace stagecut {

/// A chain layer over a module holder with `forward(Tensor)`.
template <typename ModuleHolder>
ChainLayer moduleLayer(std::string name, std::string kind, ModuleHolder module) {
  ChainLayer layer;
  layer.name = std::move(name);
  layer.kind = std::move(kind);
  layer.parameters = module->parameters();
  layer.forward = [module](const torch::Tensor& input, const torch::Tensor&) mutable {
    return module->forward(input);
  };
  layer.owner = module.ptr();
  return layer;
}

/// A parameter-free layer that compares its input with the batch's target.
template <typename LossFn>
ChainLayer lossLayer(std::string name, std::string kind, LossFn loss) {
  ChainLayer layer;
  layer.name = std::move(name);
  layer.kind = std::move(kind);
  layer.forward = [loss](const torch::Tensor& input, const torch::Tensor& target) {
    return loss(input, target);
  };
  return layer;
}

/// A CPU generator of its own, so that batches do not depend on (or disturb) the global RNG.
inline at::Generator seededGenerator(std::uint64_t seed) {
  return at::make_generator<at::CPUGeneratorImpl>(seed);
}

/// Each family's builder, which expects options its check (zoo_checks.h) passed
/// (buildZooModel runs checkZooOptions first).
LayerChain buildGpt(const ZooOptions& options);
LayerChain buildMlp(const ZooOptions& options);
LayerChain buildVgg16(const ZooOptions& options);

}  // namespace stagecut
