#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "runtime/main_gradients.h"

namespace stagecut {

/// The optimizer `stagecut validate` runs at the end of each step on a rank's weights: "none",
/// "sgd", "sgd-momentum" or "adam" (partition's names) on float32 weights, "adam-mixed" on
/// bfloat16 and float16 ones. It steps with a learning rate of 0: its state and
/// the temporaries of its step are training's, while the weights stay as built, so every step's
/// gradients still equal the full batch's.
class StageOptimizer {
 public:
  /// `main_gradients`: the float32 gradients of low-precision `weights` (nullptr for float32
  /// ones); adam-mixed steps float32 master copies of the weights on them, as Megatron's
  /// distributed optimizer does, and copies the masters back. Throws Error (input) for a name it
  /// cannot run on these weights, naming the ones it can.
  StageOptimizer(const std::string& name, std::vector<torch::Tensor> weights, MainGradients* main_gradients);
  ~StageOptimizer();
  StageOptimizer(const StageOptimizer&) = delete;
  StageOptimizer& operator=(const StageOptimizer&) = delete;

  /// One step on the gradients there are (none: nothing).
  void step();
  /// Bytes of the optimizer's state tensors: the moments (0 before the first step and for none
  /// and sgd) and adam-mixed's master weights.
  std::uint64_t stateBytes() const;

 private:
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::vector<torch::Tensor> weights_;  // adam-mixed: the low-precision weights the masters are of
  std::vector<torch::Tensor> masters_;  // adam-mixed: their float32 copies, the optimizer's
  MainGradients* main_gradients_ = nullptr;
};

/// Throws Error (input) unless `name` is one StageOptimizer runs on weights of `precision` (a
/// profile's run.dtype: "float32", "bfloat16", ...): "--optimizer adam-mixed: ...".
void checkRunnableOptimizer(const std::string& name, const std::string& precision);

/// The optimizer validate runs when --optimizer is not given: adam on a float32 profile,
/// adam-mixed on a bfloat16 or float16 one.
std::string defaultOptimizerFor(const std::string& precision);

}  // namespace stagecut
