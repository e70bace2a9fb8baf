#pragma once

#include <functional>
#include <memory>
#include <vector>

#include <torch/torch.h>

namespace stagecut {

/// One backward split into B and W at the level of operations, as zero-bubble pipelines split it
/// (torch.distributed.pipelining's stage_backward_input and stage_backward_weight). B computes
/// the gradients of its targets (the stage input, each layer output) and no weight gradient. The
/// operations where a weight's gradient path leaves B's path (a Linear's addmm, a LayerNorm) keep
/// the gradient they received during B. W starts from those operations with those gradients and
/// computes the weights' gradients alone: for a transformer block, its weight GEMMs, where the
/// gradient of the weights from the block's output would run the block's backward a second time.
class WeightGradientSplit {
 public:
  /// Finds those operations in the graph under `root` and hooks them; call before B runs.
  /// `targets` are the tensors B differentiates for, `weights` the parameters W fills.
  WeightGradientSplit(const torch::Tensor& root, const std::vector<torch::Tensor>& targets,
                      const std::vector<torch::Tensor>& weights);
  ~WeightGradientSplit();
  WeightGradientSplit(const WeightGradientSplit&) = delete;
  WeightGradientSplit& operator=(const WeightGradientSplit&) = delete;

  /// Where W puts a weight's gradient: `add_gradient(weight, grad)`.
  using GradientSink = std::function<void(torch::Tensor& weight, const torch::Tensor& grad)>;

  /// W, after B: `root_grad` is the gradient B started from and `target_grads` what B returned,
  /// in the order of `targets`. Adds each weight's gradient to its .grad(), or hands it to
  /// `add_gradient` where given (float32 buffers of low-precision weights). The graph is kept.
  void runWeightBackward(const torch::Tensor& root_grad, const std::vector<torch::Tensor>& target_grads,
                         const GradientSink& add_gradient = {});

  /// How many operations W starts from (a test's handle on the split; 0 when B does it all).
  int joinCount() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace stagecut
