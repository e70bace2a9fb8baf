#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "core/error.h"

namespace stagecut {

/// The collectives a tensor-parallel shard runs beside its compute (Megatron's: an all-reduce, or
/// under sequence parallelism an all-gather and reduce-scatter pair, which moves the same bytes on
/// a ring), each of `elements_per_row` elements per row of the microbatch.
struct TensorParallelComm {
  int forward_collectives = 0;
  int backward_collectives = 0;
  std::int64_t elements_per_row = 0;
  bool float32 = false;  ///< the loss's statistics: float32 whatever the layers' precision
};

/// One layer of a chain: what the profiler times and a pipeline stage runs. `forward` takes the
/// previous layer's output and the batch's target (used only by a loss layer).
struct ChainLayer {
  std::string name;
  std::string kind;
  std::function<torch::Tensor(const torch::Tensor& input, const torch::Tensor& target)> forward;
  std::vector<torch::Tensor> parameters;  ///< leaves that receive gradients
  std::shared_ptr<void> owner;            ///< keeps the module behind `forward` alive
  /// The layer writes into its input (ReLU(inplace=True)). Autograd refuses that on a leaf that
  /// requires grad, as a stage input or a profiled layer's input is, and it would change an
  /// input the caller still holds: such a layer must be given a copy.
  bool modifies_input = false;
  /// Equal for layers that compute the same thing on the same shapes (a model's transformer
  /// blocks), so that timing a few of them times them all; empty: the layer is like no other.
  std::string signature;
  /// The layer's description made real: builds the module behind it (its weights drawn from the
  /// layer's own seed, so that it is built alike alone or in the whole model) and fills
  /// `forward`, `parameters` and `owner`. A zoo layer is described first and built when needed
  /// (buildLayer), then released (releaseLayer); empty for a layer that exists only built.
  std::function<void(ChainLayer&)> build;
  /// A tensor-parallel shard's collectives (none for a layer that is no shard).
  TensorParallelComm tensor_parallel_comm;

  bool built() const { return static_cast<bool>(forward); }
};

/// A microbatch (or the full batch): the first layer's input and the loss layer's target.
struct ChainBatch {
  torch::Tensor input;
  torch::Tensor target;  ///< undefined when the chain has no loss layer
};

/// A model as a chain of layers, with the way to make its seeded batches.
struct LayerChain {
  std::string model_name;
  std::string source;  ///< "zoo:gpt", "torchscript:model.pt"
  std::string fingerprint;  ///< what the profile records as model.fingerprint (model_fingerprint.h)
  nlohmann::json config = nlohmann::json::object();  ///< what the profile records as model.config
  /// Tokens per sample of a language model (the profile's run.seq_len); 0 for another model.
  int seq_len = 0;
  std::vector<ChainLayer> layers;
  /// Where placeChain put the chain: a layer built later goes there too.
  torch::Device device = torch::kCPU;
  torch::ScalarType floating = torch::kFloat32;
  /// Builds a batch of `rows` samples; the same (rows, seed) gives the same batch everywhere.
  std::function<ChainBatch(int rows, std::uint64_t seed)> make_batch;

  /// Runs every layer in order on `batch` (autograd as currently enabled); `batch` is left as it
  /// was even when the first layer writes into its input.
  torch::Tensor forward(const ChainBatch& batch) const;
  /// All parameters of all layers, in layer order.
  std::vector<torch::Tensor> parameters() const;
  /// How messages name the model: the TorchScript file's path, or "zoo model gpt".
  std::string displayName() const;
};

/// Moves the chain's parameters (in place, so the modules behind `forward` see them moved) and
/// the batches make_batch builds to `device`, and casts their floating-point tensors to
/// `floating` (integer inputs and targets, token ids and class labels, keep their type).
/// Buffers and tensors a layer's forward makes itself are the layer source's business: they must
/// follow their parameters' device and dtype.
void placeChain(LayerChain& chain, const torch::Device& device, torch::ScalarType floating);

/// The floating-point type of the chain's first floating parameter; for a chain with none built,
/// the one placeChain gave it (float32 unless placed).
torch::ScalarType chainFloatingType(const LayerChain& chain);

/// Builds layer `index` where the chain is placed, if it is not built yet.
void buildLayer(LayerChain& chain, std::size_t index);

/// Builds every layer not built yet: the whole model in memory, as validate's ranks hold it.
void buildAllLayers(LayerChain& chain);

/// Frees a described layer's module and weights (it can be built again, alike); a layer that
/// exists only built (no `build`) stays.
void releaseLayer(LayerChain& chain, std::size_t index);

/// The ScalarType of a canonical precision name (core/precision.h): "bfloat16" -> kBFloat16.
torch::ScalarType scalarTypeOfPrecision(const std::string& name);

/// The name a profile records for `type` (run.dtype); "float32" for a type it has no name for.
std::string precisionNameOf(torch::ScalarType type);

/// How messages name a layer: "layer 1 (features.1, ReLU)", its position, name and kind.
std::string describeLayer(std::size_t index, const ChainLayer& layer);

/// Runs `step` of layer `layer` (-1: the whole model); a LibTorch error it raises (a backward
/// autograd cannot run, memory that runs out) becomes one line naming the model and the layer,
/// input (exit code 2) for a user's TorchScript chain, a run-time failure for a zoo model.
template <typename Step>
auto namingLayerOnError(const LayerChain& chain, int layer, Step&& step) -> decltype(step());

/// The message and kind namingLayerOnError throws for `error` raised by `layer`.
[[noreturn]] void throwLayerError(const LayerChain& chain, int layer, const std::exception& error);

template <typename Step>
auto namingLayerOnError(const LayerChain& chain, int layer, Step&& step) -> decltype(step()) {
  try {
    return step();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& error) {  // c10::Error, the interpreter's errors, bad_alloc
    throwLayerError(chain, layer, error);
  }
}

}  // namespace stagecut
