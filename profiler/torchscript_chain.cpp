#include "profiler/torchscript_chain.h"

#include <sys/stat.h>
#include <unistd.h>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/script.h>

#include <cerrno>
#include <cstring>

#include "core/chain_metadata.h"
#include "core/error.h"
#include "profiler/machine_memory.h"
#include "profiler/model_fingerprint.h"
#include "profiler/recorded_config.h"
#include "profiler/torch_error.h"

namespace stagecut {

namespace {

const char* const kChainAdvice =
    "export a chain: an nn.Sequential, or a module whose forward calls its children one after "
    "another on one tensor";

std::string dtypeName(const torch::Tensor& tensor) {
  switch (tensor.scalar_type()) {
    case torch::kFloat32: return "float32";
    case torch::kFloat64: return "float64";
    case torch::kFloat16: return "float16";
    case torch::kBFloat16: return "bfloat16";
    case torch::kInt64: return "int64";
    case torch::kInt32: return "int32";
    case torch::kBool: return "bool";
    default: return "non-float";
  }
}

torch::ScalarType scalarType(const std::string& dtype) {
  if (dtype == "float64") return torch::kFloat64;
  if (dtype == "int64") return torch::kInt64;
  if (dtype == "int32") return torch::kInt32;
  return torch::kFloat32;
}

// What a module returned, in Python's words.
std::string valueKind(const torch::jit::IValue& value) {
  if (value.isTuple()) return "a tuple";
  if (value.isGenericDict()) return "a dict";
  if (value.isList()) return "a list";
  if (value.isNone()) return "None";
  if (value.isTensorList()) return "a list of tensors";
  return "a " + value.tagKind();
}

torch::Tensor callModule(torch::jit::Module& module, const torch::Tensor& input,
                         const std::string& path, const std::string& what) {
  torch::jit::IValue result;
  try {
    result = module.forward({input});
  } catch (const std::exception& e) {  // c10::Error, or the interpreter's own errors
    throw Error(path + ": " + what + " failed on the sample input (" + torchErrorLine(e) + "); check --input, or " +
                kChainAdvice);
  }
  if (!result.isTensor()) {
    throw Error(path + ": " + what + " returns " + valueKind(result) + ", not one tensor; " + kChainAdvice);
  }
  return result.toTensor();
}

// The exporter's names and kinds for the children, where the file carries them; they must
// describe exactly these children, in this order.
void applyMetadata(const std::string& text, const std::string& path, LayerChain& chain,
                   const std::vector<std::string>& children) {
  const ChainMetadata metadata = parseChainMetadata(text, path);
  if (metadata.layers.size() != children.size()) {
    throw Error(path + ": its stagecut.json describes " + std::to_string(metadata.layers.size()) +
                " layers, the module has " + std::to_string(children.size()) +
                " children; export the model again with tools/stagecut_export.py");
  }
  for (std::size_t i = 0; i < children.size(); ++i) {
    if (metadata.layers[i].child != children[i]) {
      throw Error(path + ": its stagecut.json names child " + std::to_string(i) + " \"" + metadata.layers[i].child +
                  "\", the module's is \"" + children[i] + "\"; export the model again with tools/stagecut_export.py");
    }
    chain.layers[i].name = metadata.layers[i].name;
    if (!metadata.layers[i].kind.empty()) chain.layers[i].kind = metadata.layers[i].kind;
  }
}

// The module at `path`, loaded on the CPU in eval mode, and the exporter's stagecut.json it
// carries ("" when none), once the sample input is known to fit in memory.
std::shared_ptr<torch::jit::Module> loadModule(const std::string& path, const InputSpec& input, std::string& metadata) {
  std::string input_shape;
  for (std::int64_t dim : input.shape) input_shape += (input_shape.empty() ? "" : "x") + std::to_string(dim);
  requireFitsInMemory(inputBytes(input), path, "its sample input " + input_shape + ":" + input.dtype + " alone",
                      "give a smaller --input");
  struct stat file {};
  if (::stat(path.c_str(), &file) != 0 || ::access(path.c_str(), R_OK) != 0) {
    throw Error(path + ": cannot be read (" + std::strerror(errno) + "); give the TorchScript file's path");
  }
  if (S_ISDIR(file.st_mode)) throw Error(path + ": is a folder; give the TorchScript file saved in it");
  auto module = std::make_shared<torch::jit::Module>();
  torch::jit::ExtraFilesMap extra_files{{"stagecut.json", ""}};
  try {
    *module = torch::jit::load(path, torch::Device(torch::kCPU), extra_files);
  } catch (const std::exception& e) {  // c10::Error, or the unpickler's own errors
    throw Error(path + ": not a TorchScript module (" + torchErrorLine(e) +
                "); save one with torch.jit.save(torch.jit.script(model), path)");
  }
  module->eval();
  metadata = extra_files["stagecut.json"];
  return module;
}

// The module's top-level children as the chain's layers, named and kinded by the exporter's
// metadata where there is some.
void addChildLayers(LayerChain& chain, const torch::jit::Module& module, const std::string& path,
                    const std::string& metadata) {
  std::vector<std::string> children;
  for (const auto& child : module.named_children()) {
    children.push_back(child.name);
    auto child_module = std::make_shared<torch::jit::Module>(child.value);
    ChainLayer layer;
    layer.name = child.name;
    const auto type_name = child_module->type()->name();
    layer.kind = type_name ? type_name->name() : "Module";
    for (const auto& parameter : child_module->parameters()) {
      if (parameter.requires_grad()) layer.parameters.push_back(parameter);
    }
    layer.owner = child_module;
    chain.layers.push_back(std::move(layer));
  }
  if (chain.layers.empty()) {
    throw Error(path + ": the module has no child modules to use as layers; " + kChainAdvice);
  }
  if (!metadata.empty()) applyMetadata(metadata, path, chain, children);
  for (std::size_t i = 0; i < chain.layers.size(); ++i) {
    ChainLayer& layer = chain.layers[i];
    auto child_module = std::static_pointer_cast<torch::jit::Module>(layer.owner);
    layer.forward = [child_module, path, what = describeLayer(i, layer)](const torch::Tensor& x, const torch::Tensor&) {
      return callModule(*child_module, x, path, what);
    };
  }
}

// Batches like the sample input, `rows` of them, from the batch's seed offset by `seed`.
std::function<ChainBatch(int, std::uint64_t)> inputBatches(const InputSpec& input, std::uint64_t seed) {
  return [input, seed](int rows, std::uint64_t batch_seed) {
    auto generator = at::make_generator<at::CPUGeneratorImpl>(batch_seed + seed);
    std::vector<int64_t> shape = input.shape;
    shape[0] = rows;
    const auto options = torch::TensorOptions().dtype(scalarType(input.dtype));
    ChainBatch batch;
    batch.input = input.dtype.rfind("int", 0) == 0
                      ? torch::randint(input.low, input.high, shape, generator, options)
                      : torch::randn(shape, generator, options);
    return batch;
  };
}

// Each child once on the sample, without autograd: a failing child is named, and one that
// writes into its input (its version counter moves) is marked so that callers give it a copy.
// The split is only meaningful if running the children in order is running the model.
void checkChildrenComposeModule(LayerChain& chain, torch::jit::Module& module, const ChainBatch& sample,
                                const std::string& path) {
  torch::NoGradGuard no_grad;
  torch::Tensor activation = sample.input.clone();
  for (auto& layer : chain.layers) {
    const auto version = activation._version();
    torch::Tensor output = layer.forward(activation, torch::Tensor());
    layer.modifies_input = activation._version() != version;
    activation = output;
  }
  const torch::Tensor whole = callModule(module, sample.input.clone(), path, "the module's forward");
  if (whole.sizes() != activation.sizes() || !torch::allclose(whole, activation, 1e-4, 1e-5)) {
    const std::string difference =
        whole.sizes() != activation.sizes()
            ? "output shapes differ"
            : "largest difference " + std::to_string((whole - activation).abs().max().item<double>());
    throw Error(path + ": the module's forward is not its children run in order (" + difference + "); " +
                kChainAdvice);
  }
}

// Each child once more with autograd, forward and backward, on a leaf input of its own, as
// training runs it: a pipeline trains through every layer, so each must return a tensor with a
// gradient wherever its input or weights have one, and its backward must run.
void checkChildrenTrain(const LayerChain& chain, const ChainBatch& sample, const std::string& path) {
  torch::Tensor activation = sample.input;
  for (std::size_t i = 0; i < chain.layers.size(); ++i) {
    const ChainLayer& layer = chain.layers[i];
    torch::Tensor leaf = activation.detach();
    if (leaf.is_floating_point()) leaf.requires_grad_(true);
    std::vector<torch::Tensor> differentiable = layer.parameters;
    if (leaf.requires_grad()) differentiable.push_back(leaf);
    const torch::Tensor output = layer.forward(layer.modifies_input ? leaf.clone() : leaf, torch::Tensor());
    if (!differentiable.empty() && !output.requires_grad()) {
      throw Error(path + ": " + describeLayer(i, layer) + " returns a tensor without a gradient (" + dtypeName(output) +
                  "; made by detach(), argmax or another step autograd cannot follow); a pipeline trains "
                  "through every layer, so keep such steps out of the chain");
    }
    if (!differentiable.empty()) {
      try {
        torch::autograd::grad({output}, differentiable, {torch::ones_like(output)}, false, false, true);
      } catch (const std::exception& e) {
        throw Error(path + ": the backward of " + describeLayer(i, layer) + " fails on the sample input (" +
                    torchErrorLine(e) + "); fix the module, or leave that step out of the chain");
      }
    }
    activation = output.detach();
  }
}

}  // namespace

LayerChain loadTorchScriptChain(const std::string& path, const InputSpec& input, std::uint64_t seed) {
  std::string metadata;
  const std::shared_ptr<torch::jit::Module> module = loadModule(path, input, metadata);
  LayerChain chain;
  const auto slash = path.find_last_of('/');
  chain.model_name = path.substr(slash == std::string::npos ? 0 : slash + 1);
  chain.source = "torchscript:" + path;
  chain.fingerprint = torchScriptFingerprint(path);
  chain.config = recordInputSpec(input);
  addChildLayers(chain, *module, path, metadata);
  chain.make_batch = inputBatches(input, seed);
  const ChainBatch sample = chain.make_batch(static_cast<int>(input.shape[0]), 0);
  checkChildrenComposeModule(chain, *module, sample, path);
  checkChildrenTrain(chain, sample, path);
  return chain;
}

}  // namespace stagecut
