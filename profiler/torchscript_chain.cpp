#include "profiler/torchscript_chain.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/script.h>

#include "core/error.h"

namespace stagecut {

namespace {

const char* const kChainAdvice =
    "export a chain: an nn.Sequential, or a module whose forward calls its children one after "
    "another on one tensor";

std::string firstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

torch::ScalarType scalarType(const std::string& dtype) {
  if (dtype == "float64") return torch::kFloat64;
  if (dtype == "int64") return torch::kInt64;
  if (dtype == "int32") return torch::kInt32;
  return torch::kFloat32;
}

torch::Tensor callModule(torch::jit::Module& module, const torch::Tensor& input,
                         const std::string& path, const std::string& what) {
  torch::jit::IValue result;
  try {
    result = module.forward({input});
  } catch (const c10::Error& e) {
    throw Error(path + ": " + what + " failed on the sample input (" + firstLine(e.what_without_backtrace()) +
                "); check --input, or " + kChainAdvice);
  }
  if (!result.isTensor()) {
    throw Error(path + ": " + what + " returns " + result.tagKind() + ", not one tensor; " + kChainAdvice);
  }
  return result.toTensor();
}

}  // namespace

LayerChain loadTorchScriptChain(const std::string& path, const InputSpec& input, std::uint64_t seed) {
  auto module = std::make_shared<torch::jit::Module>();
  try {
    *module = torch::jit::load(path);
  } catch (const c10::Error& e) {
    throw Error(path + ": not a TorchScript module (" + firstLine(e.what_without_backtrace()) +
                "); save one with torch.jit.save(torch.jit.script(model), path)");
  }
  module->eval();

  LayerChain chain;
  const auto slash = path.find_last_of('/');
  chain.model_name = path.substr(slash == std::string::npos ? 0 : slash + 1);
  chain.source = "torchscript:" + path;
  chain.config = {{"input_shape", input.shape}, {"input_dtype", input.dtype}};
  if (input.high > input.low) chain.config["input_range"] = {input.low, input.high};
  for (const auto& child : module->named_children()) {
    auto child_module = std::make_shared<torch::jit::Module>(child.value);
    ChainLayer layer;
    layer.name = child.name;
    const auto type_name = child_module->type()->name();
    layer.kind = type_name ? type_name->name() : "Module";
    for (const auto& parameter : child_module->parameters()) {
      if (parameter.requires_grad()) layer.parameters.push_back(parameter);
    }
    layer.forward = [child_module, path, name = child.name](const torch::Tensor& x, const torch::Tensor&) {
      return callModule(*child_module, x, path, "child \"" + name + "\"");
    };
    layer.owner = child_module;
    chain.layers.push_back(std::move(layer));
  }
  if (chain.layers.empty()) {
    throw Error(path + ": the module has no child modules to use as layers; " + kChainAdvice);
  }

  chain.make_batch = [input, seed_offset = seed](int rows, std::uint64_t batch_seed) {
    auto generator = at::make_generator<at::CPUGeneratorImpl>(batch_seed + seed_offset);
    std::vector<int64_t> shape = input.shape;
    shape[0] = rows;
    const auto options = torch::TensorOptions().dtype(scalarType(input.dtype));
    ChainBatch batch;
    batch.input = input.dtype.rfind("int", 0) == 0
                      ? torch::randint(input.low, input.high, shape, generator, options)
                      : torch::randn(shape, generator, options);
    return batch;
  };

  // The split is only meaningful if running the children in order is running the model.
  const ChainBatch sample = chain.make_batch(static_cast<int>(input.shape[0]), 0);
  torch::NoGradGuard no_grad;
  const torch::Tensor whole = callModule(*module, sample.input, path, "the module's forward");
  const torch::Tensor composed = chain.forward(sample);
  if (whole.sizes() != composed.sizes() || !torch::allclose(whole, composed, 1e-4, 1e-5)) {
    const std::string difference =
        whole.sizes() != composed.sizes()
            ? "output shapes differ"
            : "largest difference " + std::to_string((whole - composed).abs().max().item<double>());
    throw Error(path + ": the module's forward is not its children run in order (" + difference +
                "); " + kChainAdvice);
  }
  return chain;
}

}  // namespace stagecut
