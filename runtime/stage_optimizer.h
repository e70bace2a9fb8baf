#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace stagecut {

/// The optimizer `stagecut validate` runs at the end of each step on a rank's weights: "none",
/// "sgd", "sgd-momentum" or "adam" (partition's names; adam-mixed is not runnable in fp32). It
/// steps with a learning rate of 0: its state and the temporaries of its step are training's,
/// while the weights stay as built, so every step's gradients still equal the full batch's.
class StageOptimizer {
 public:
  /// Throws Error (input) for a name it cannot run, naming the ones it can.
  StageOptimizer(const std::string& name, std::vector<torch::Tensor> weights);
  ~StageOptimizer();
  StageOptimizer(const StageOptimizer&) = delete;
  StageOptimizer& operator=(const StageOptimizer&) = delete;

  /// One step on the gradients there are (none: nothing).
  void step();
  /// Bytes of the optimizer's state tensors (0 before the first step and for none and sgd).
  std::uint64_t stateBytes() const;

 private:
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
};

/// Throws Error (input) unless `name` is one StageOptimizer runs: "--optimizer adam-mixed: ...".
void checkRunnableOptimizer(const std::string& name);

}  // namespace stagecut
