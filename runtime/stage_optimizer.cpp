#include "runtime/stage_optimizer.h"

#include "core/error.h"
#include "prediction/stage_memory.h"

namespace stagecut {

namespace {

std::uint64_t bytesOf(const torch::Tensor& tensor) {
  return tensor.defined() ? static_cast<std::uint64_t>(tensor.numel()) * tensor.element_size() : 0;
}

}  // namespace

void checkRunnableOptimizer(const std::string& name) {
  optimizerMemory(name);  // an unknown name: the one message, with the nearest name
  if (name == "adam-mixed") {
    throw Error("--optimizer adam-mixed: validate runs the model in float32 and cannot keep bf16 weights with "
                "fp32 master copies; use --optimizer adam (and partition with --optimizer adam to compare)");
  }
}

StageOptimizer::StageOptimizer(const std::string& name, std::vector<torch::Tensor> weights) {
  checkRunnableOptimizer(name);
  if (weights.empty() || name == "none") return;
  if (name == "adam") {
    optimizer_ = std::make_unique<torch::optim::Adam>(std::move(weights), torch::optim::AdamOptions(0.0));
  } else {
    optimizer_ = std::make_unique<torch::optim::SGD>(
        std::move(weights), torch::optim::SGDOptions(0.0).momentum(name == "sgd-momentum" ? 0.9 : 0.0));
  }
}

StageOptimizer::~StageOptimizer() = default;

void StageOptimizer::step() {
  if (optimizer_) optimizer_->step();
}

std::uint64_t StageOptimizer::stateBytes() const {
  if (!optimizer_) return 0;
  std::uint64_t bytes = 0;
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
