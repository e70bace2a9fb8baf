#include "runtime/stage_executor.h"

#include <chrono>

#include "core/error.h"

namespace stagecut {

namespace {

std::int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string opName(const char* kind, int microbatch) {
  return std::string(kind) + "(" + std::to_string(microbatch) + ")";
}

}  // namespace

StageExecutor::StageExecutor(const LayerChain& chain, StagePlacement placement, StageTransport& transport)
    : chain_(chain),
      placement_(std::move(placement)),
      transport_(transport),
      first_stage_(transport.rank() == 0),
      last_stage_(transport.rank() == transport.worldSize() - 1) {}

std::vector<torch::Tensor> StageExecutor::parameters() const {
  std::vector<torch::Tensor> all;
  for (int i = placement_.first_layer; i <= placement_.last_layer; ++i) {
    const auto& layer_parameters = chain_.layers[i].parameters;
    all.insert(all.end(), layer_parameters.begin(), layer_parameters.end());
  }
  return all;
}

void StageExecutor::zeroGradients() {
  for (auto& parameter : parameters()) {
    if (parameter.grad().defined()) parameter.mutable_grad().zero_();
  }
}

void StageExecutor::forward(int microbatch, const ChainBatch& batch, int microbatch_count) {
  MicrobatchState state;
  if (first_stage_) {
    state.input = batch.input;
  } else {
    state.input = transport_.recv(placement_.input_shape, transport_.rank() - 1, activationTag(microbatch),
                                  opName("F", microbatch) + "'s activation");
  }
  compute_start_ns_ = nowNs();
  if (state.input.is_floating_point()) state.input.requires_grad_(true);
  torch::Tensor activation = state.input;
  for (int i = placement_.first_layer; i <= placement_.last_layer; ++i) {
    activation = chain_.layers[i].forward(activation, batch.target);
    state.outputs.push_back(activation);
  }
  if (last_stage_) {
    // Chains without a loss layer train on the mean of their output.
    const torch::Tensor loss = activation.numel() == 1 ? activation : activation.mean();
    state.root = loss / static_cast<double>(microbatch_count);
    last_loss_ += state.root.item<double>();
  } else {
    state.root = activation;
    transport_.sendAsync(activation, transport_.rank() + 1, activationTag(microbatch));
  }
  live_[microbatch] = std::move(state);
}

void StageExecutor::backward(int microbatch, bool splits_backward) {
  MicrobatchState& state = live_.at(microbatch);
  const torch::Tensor grad =
      last_stage_ ? torch::ones_like(state.root)
                  : transport_.recv(placement_.output_shape, transport_.rank() + 1, gradientTag(microbatch),
                                    opName("B", microbatch) + "'s gradient");
  compute_start_ns_ = nowNs();
  const bool input_needs_grad = state.input.requires_grad();
  torch::Tensor input_grad;
  if (!splits_backward) {
    torch::autograd::backward({state.root}, {grad});
    if (input_needs_grad) input_grad = state.input.grad();
  } else {
    // B: gradients of the stage input and of every layer output inside the stage (the latter
    // seed W), keeping the graph for W.
    std::vector<torch::Tensor> targets;
    if (input_needs_grad) targets.push_back(state.input);
    const std::size_t inner = state.outputs.size() - 1;
    for (std::size_t j = 0; j < inner; ++j) targets.push_back(state.outputs[j]);
    std::vector<torch::Tensor> grads;
    if (!targets.empty()) grads = torch::autograd::grad({state.root}, targets, {grad}, true, false, true);
    std::size_t next = 0;
    if (input_needs_grad) input_grad = grads[next++];
    state.output_grads.clear();
    for (std::size_t j = 0; j < inner; ++j) state.output_grads.push_back(grads[next++]);
    state.output_grads.push_back(grad);
  }
  if (!first_stage_) {
    if (!input_grad.defined()) input_grad = torch::zeros(placement_.input_shape);
    transport_.sendAsync(input_grad, transport_.rank() - 1, gradientTag(microbatch));
  }
  if (!splits_backward) live_.erase(microbatch);
}

void StageExecutor::weightBackward(int microbatch) {
  compute_start_ns_ = nowNs();
  MicrobatchState& state = live_.at(microbatch);
  const std::size_t layer_count = state.outputs.size();
  for (std::size_t j = 0; j < layer_count; ++j) {
    const auto& layer_parameters = chain_.layers[placement_.first_layer + static_cast<int>(j)].parameters;
    if (layer_parameters.empty()) continue;
    const torch::Tensor root = j + 1 == layer_count ? state.root : state.outputs[j];
    const torch::Tensor grad = state.output_grads[j];
    if (!grad.defined()) continue;
    torch::autograd::backward({root}, {grad}, /*retain_graph=*/true, /*create_graph=*/false, layer_parameters);
  }
  live_.erase(microbatch);
}

std::vector<OpRecord> StageExecutor::runStep(const RankOps& ops, const std::vector<ChainBatch>& microbatches,
                                             bool splits_backward) {
  live_.clear();
  last_loss_ = 0.0;
  const int microbatch_count = static_cast<int>(microbatches.size());
  std::vector<OpRecord> records;
  records.reserve(ops.size());
  for (const PipelineOp& op : ops) {
    OpRecord record;
    record.op = op;
    // The receive inside an op is waiting, not work: the op's clock starts once its input is here.
    switch (op.kind) {
      case OpKind::kForward:
        forward(op.microbatch, microbatches.at(op.microbatch), microbatch_count);
        break;
      case OpKind::kBackward:
        backward(op.microbatch, splits_backward);
        break;
      case OpKind::kWeight:
        weightBackward(op.microbatch);
        break;
    }
    record.start_ns = compute_start_ns_;
    record.end_ns = nowNs();
    records.push_back(record);
  }
  transport_.flushSends();
  return records;
}

}  // namespace stagecut
