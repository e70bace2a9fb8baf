#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <torch/torch.h>

namespace stagecut {

/// Float32 gradients of a stage's bfloat16 or float16 weights, as Megatron keeps them (its
/// main_grad buffers, --accumulate-allreduce-grads-in-fp32): each weight's gradient is added into
/// its float32 buffer as soon as autograd has made it, and the low-precision gradient is freed at
/// once. Microbatches therefore sum in float32, and no low-precision gradient outlives the
/// operation that made it.
class MainGradients {
 public:
  /// Hooks the gradient accumulator of every weight (leaves that require grad); `weights` stay
  /// the caller's. Buffers are made at the first gradient of each weight, as .grad would be.
  explicit MainGradients(const std::vector<torch::Tensor>& weights);
  /// The hooks stay on accumulators that a live graph still holds, and do nothing from then on.
  ~MainGradients();
  MainGradients(const MainGradients&) = delete;
  MainGradients& operator=(const MainGradients&) = delete;

  /// Adds `grad`, a gradient of `weight` made outside autograd's accumulator (a split backward's
  /// W), into its buffer.
  void add(const torch::Tensor& weight, const torch::Tensor& grad);
  /// The float32 gradient of `weight` (one of the constructor's); undefined before its first.
  torch::Tensor of(const torch::Tensor& weight) const;
  /// Every weight's buffer, made as zeros where no gradient reached it yet (for a collective
  /// that needs all of them), in the constructor's order.
  std::vector<torch::Tensor> all();
  /// Sets every buffer to zero (the start of a step); the buffers stay.
  void zero();
  /// Bytes of the buffers there are.
  std::uint64_t bytes() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
};

/// Whether a stage's gradients need float32 buffers: some weight is bfloat16 or float16.
bool needsMainGradients(const std::vector<torch::Tensor>& weights);

}  // namespace stagecut
