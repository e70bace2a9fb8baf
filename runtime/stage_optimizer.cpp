#include "runtime/stage_optimizer.h"

#include "core/error.h"
#include "core/precision.h"
#include "prediction/stage_memory.h"

namespace stagecut {

namespace {

std::uint64_t bytesOf(const torch::Tensor& tensor) {
  return tensor.defined() ? static_cast<std::uint64_t>(tensor.numel()) * tensor.element_size() : 0;
}

}  // namespace

std::string defaultOptimizerFor(const std::string& precision) {
  return isSixteenBitPrecision(precision) ? "adam-mixed" : "adam";
}

void checkRunnableOptimizer(const std::string& name, const std::string& precision) {
  optimizerMemory(name);  // an unknown name: the one message, with the nearest name
  const bool low = isSixteenBitPrecision(precision);
  if (name == "adam-mixed" && !low) {
    throw Error("--optimizer adam-mixed: keeps float32 masters of bfloat16 or float16 weights, and this profile's "
                "weights are " + (precision.empty() ? std::string("float32") : precision) +
                "; use --optimizer adam, or profile with --dtype bfloat16 to run mixed precision");
  }
  // The memory model's other optimizers keep float32 weights: it has no figure for them here.
  if (low && name != "adam-mixed") {
    throw Error("--optimizer " + name + ": a " + precision + " profile trains with float32 master weights and "
                "gradients, as Megatron's --" + (precision == "bfloat16" ? "bf16" : "fp16") +
                " does; use --optimizer adam-mixed (its default)");
  }
}

StageOptimizer::StageOptimizer(const std::string& name, std::vector<torch::Tensor> weights,
                               MainGradients* main_gradients)
    : main_gradients_(main_gradients) {
  optimizerMemory(name);
  if (weights.empty() || name == "none") return;
  if (name == "adam-mixed") {
    if (!main_gradients) {
      throw Error("--optimizer adam-mixed: the stage's weights are float32; use --optimizer adam");
    }
    torch::NoGradGuard no_grad;
    for (const auto& weight : weights) masters_.push_back(weight.detach().to(torch::kFloat32, false, true));
    weights_ = std::move(weights);
    optimizer_ = std::make_unique<torch::optim::Adam>(masters_, torch::optim::AdamOptions(0.0));
  } else if (name == "adam") {
    optimizer_ = std::make_unique<torch::optim::Adam>(std::move(weights), torch::optim::AdamOptions(0.0));
  } else {
    optimizer_ = std::make_unique<torch::optim::SGD>(
        std::move(weights), torch::optim::SGDOptions(0.0).momentum(name == "sgd-momentum" ? 0.9 : 0.0));
  }
}

StageOptimizer::~StageOptimizer() = default;

void StageOptimizer::step() {
  if (!optimizer_) return;
  if (masters_.empty()) {
    optimizer_->step();
    return;
  }
  // The masters step on the float32 gradients (shared, not copied), and the weights take the
  // masters' new values, rounded to their precision.
  for (std::size_t i = 0; i < masters_.size(); ++i) masters_[i].mutable_grad() = main_gradients_->of(weights_[i]);
  optimizer_->step();
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < masters_.size(); ++i) {
    weights_[i].copy_(masters_[i]);
    masters_[i].mutable_grad().reset();
  }
}

std::uint64_t StageOptimizer::stateBytes() const {
  if (!optimizer_) return 0;
  std::uint64_t bytes = 0;
  for (const auto& master : masters_) bytes += bytesOf(master);
  for (const auto& entry : optimizer_->state()) {
    const torch::optim::OptimizerParamState* state = entry.second.get();
    if (const auto* adam = dynamic_cast<const torch::optim::AdamParamState*>(state)) {
      bytes += bytesOf(adam->exp_avg()) + bytesOf(adam->exp_avg_sq()) + bytesOf(adam->max_exp_avg_sq());
    } else if (const auto* sgd = dynamic_cast<const torch::optim::SGDParamState*>(state)) {
      bytes += bytesOf(sgd->momentum_buffer());
    }
  }
  return bytes;
}

}  // namespace stagecut
