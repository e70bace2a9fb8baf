#include "runtime/stage_executor.h"

#include "core/error.h"
#include "runtime/rank_device.h"

namespace stagecut {

namespace {

std::string opName(const char* kind, int microbatch) {
  return std::string(kind) + "(" + std::to_string(microbatch) + ")";
}

// A layer that writes into its input gets a copy: the stage input is a leaf autograd must not
// see changed (and recomputation runs on it again), and a W split needs each output as it was.
torch::Tensor runLayer(const ChainLayer& layer, const torch::Tensor& input, const torch::Tensor& target) {
  return layer.forward(layer.modifies_input ? input.clone() : input, target);
}

}  // namespace

torch::Tensor microbatchLoss(const torch::Tensor& output, int microbatches) {
  const torch::Tensor loss = output.numel() == 1 ? output : output.mean();
  return microbatches == 1 ? loss : loss / static_cast<double>(microbatches);
}

StageExecutor::StageExecutor(const LayerChain& chain, StagePlacement placement, StageTransport& transport,
                             const RankClock& clock, ReplicaGroup* replicas)
    : chain_(chain),
      placement_(std::move(placement)),
      transport_(transport),
      clock_(clock),
      replicas_(replicas),
      first_stage_(transport.rank() == 0),
      last_stage_(transport.rank() == transport.worldSize() - 1) {
  const std::vector<torch::Tensor> weights = parameters();
  if (needsMainGradients(weights)) main_gradients_ = std::make_unique<MainGradients>(weights);
}

std::vector<torch::Tensor> StageExecutor::parameters() const {
  std::vector<torch::Tensor> all;
  for (int i = placement_.first_layer; i <= placement_.last_layer; ++i) {
    const auto& layer_parameters = chain_.layers[i].parameters;
    all.insert(all.end(), layer_parameters.begin(), layer_parameters.end());
  }
  return all;
}

void StageExecutor::zeroGradients() {
  if (main_gradients_) main_gradients_->zero();
  for (auto& parameter : parameters()) {
    if (parameter.grad().defined()) parameter.mutable_grad().zero_();
  }
}

torch::Tensor StageExecutor::gradientOf(const torch::Tensor& weight) const {
  return main_gradients_ ? main_gradients_->of(weight) : weight.grad();
}

std::uint64_t StageExecutor::gradientBytes() const {
  if (main_gradients_) return main_gradients_->bytes();
  std::uint64_t bytes = 0;
  for (const auto& weight : parameters()) {
    if (weight.grad().defined()) bytes += static_cast<std::uint64_t>(weight.grad().nbytes());
  }
  return bytes;
}

void StageExecutor::runLayers(MicrobatchState& state, const torch::Tensor& target) {
  if (state.input.is_floating_point()) state.input.requires_grad_(true);
  state.outputs.clear();
  torch::Tensor activation = state.input;
  for (int i = placement_.first_layer; i <= placement_.last_layer; ++i) {
    activation = runLayer(chain_.layers[i], activation, target);
    // Only a split backward needs the inner outputs; held otherwise, they would outlive the
    // layers that free them, as no framework's stage keeps them.
    if (splits_backward_) state.outputs.push_back(activation);
  }
  if (last_stage_) {
    state.root = microbatchLoss(activation, microbatch_count_);
  } else {
    state.root = activation;
  }
}

void StageExecutor::forward(int microbatch, const ChainBatch& batch, int microbatch_count) {
  MicrobatchState state;
  if (first_stage_) {
    state.input = batch.input;
  } else {
    state.input = transport_.recv(placement_.input, transport_.rank() - 1, activationTag(microbatch),
                                  opName("F", microbatch) + "'s activation");
  }
  compute_start_ns_ = clock_.nowNs();
  microbatch_count_ = microbatch_count;
  if (recompute_) {
    // Checkpointing: no graph and no saved activations now; B runs this forward again with grad.
    state.target = batch.target;
    torch::NoGradGuard no_grad;
    torch::Tensor activation = state.input;
    for (int i = placement_.first_layer; i <= placement_.last_layer; ++i) {
      activation = runLayer(chain_.layers[i], activation, batch.target);
    }
    if (last_stage_) {
      last_loss_ += microbatchLoss(activation, microbatch_count).item<double>();
    } else {
      transport_.sendAsync(activation, transport_.rank() + 1, activationTag(microbatch));
    }
    live_[microbatch] = std::move(state);
    return;
  }
  runLayers(state, batch.target);
  if (last_stage_) {
    last_loss_ += state.root.item<double>();
  } else {
    transport_.sendAsync(state.root, transport_.rank() + 1, activationTag(microbatch));
  }
  live_[microbatch] = std::move(state);
}

void StageExecutor::backward(int microbatch, bool splits_backward) {
  MicrobatchState& state = live_.at(microbatch);
  torch::Tensor grad;
  if (!last_stage_) {
    grad = transport_.recv(placement_.output, transport_.rank() + 1, gradientTag(microbatch),
                           opName("B", microbatch) + "'s gradient");
  }
  compute_start_ns_ = clock_.nowNs();
  if (!last_stage_) {
    // The next rank answered this microbatch: it has our activation, whose buffer can go.
    transport_.releaseSend(transport_.rank() + 1, activationTag(microbatch));
  }
  if (recompute_) runLayers(state, state.target);
  if (last_stage_) grad = torch::ones_like(state.root);
  const bool input_needs_grad = state.input.requires_grad();
  torch::Tensor input_grad;
  if (!splits_backward) {
    torch::autograd::backward({state.root}, {grad});
    if (input_needs_grad) input_grad = state.input.grad();
  } else {
    // B: gradients of the stage input and of every layer output inside the stage, and no
    // weight gradient; the graph is kept, and the operations where W will start keep theirs.
    std::vector<torch::Tensor> targets;
    if (input_needs_grad) targets.push_back(state.input);
    const std::size_t inner = state.outputs.size() - 1;
    for (std::size_t j = 0; j < inner; ++j) targets.push_back(state.outputs[j]);
    state.weight_split = std::make_shared<WeightGradientSplit>(state.root, targets, parameters());
    if (!targets.empty()) {
      state.target_grads = torch::autograd::grad({state.root}, targets, {grad}, true, false, true);
    }
    state.root_grad = grad;
    if (input_needs_grad) input_grad = state.target_grads[0];
  }
  if (!first_stage_) {
    if (!input_grad.defined()) {
      const auto options = torch::TensorOptions().dtype(placement_.input.dtype).device(device_);
      input_grad = torch::zeros(placement_.input.sizes, options);
    }
    transport_.sendAsync(input_grad, transport_.rank() - 1, gradientTag(microbatch));
  }
  if (!splits_backward) live_.erase(microbatch);
}

void StageExecutor::weightBackward(int microbatch) {
  compute_start_ns_ = clock_.nowNs();
  MicrobatchState& state = live_.at(microbatch);
  WeightGradientSplit::GradientSink add_gradient;
  if (main_gradients_) {
    add_gradient = [this](torch::Tensor& weight, const torch::Tensor& grad) { main_gradients_->add(weight, grad); };
  }
  state.weight_split->runWeightBackward(state.root_grad, state.target_grads, add_gradient);
  live_.erase(microbatch);
}

void StageExecutor::allReduceGradients(const PipelineOp& op) {
  if (!replicas_) {
    throw Error("rank " + std::to_string(transport_.rank()) + ": the op list holds " + describeOp(op, 1) +
                    " but this stage has no data-parallel replicas",
                ErrorKind::kInput);
  }
  // As a receive is not part of its op, waiting for replicas that are behind is not part of A:
  // its clock starts once every replica is there, so it measures what the ring all-reduce costs.
  replicas_->barrier(describeOp(op, 1));
  compute_start_ns_ = clock_.nowNs();
  // One flat buffer for all of the stage's gradients: one collective instead of one per tensor
  // (Gloo's allreduce also wants tensors of one size).
  std::vector<torch::Tensor> grads;
  if (main_gradients_) {
    grads = main_gradients_->all();
  } else {
    for (auto& parameter : parameters()) {
      if (!parameter.grad().defined()) parameter.mutable_grad() = torch::zeros_like(parameter);
      grads.push_back(parameter.grad());
    }
  }
  if (grads.empty()) return;
  std::vector<torch::Tensor> flat_parts;
  for (const auto& grad : grads) flat_parts.push_back(grad.reshape({-1}));
  torch::Tensor flat = torch::cat(flat_parts);
  replicas_->allReduceSum(flat, describeOp(op, 1));
  // Each replica's gradient is the mean over its own microbatches; their mean is the full batch's.
  flat.div_(static_cast<double>(replicas_->size()));
  std::int64_t offset = 0;
  for (auto& grad : grads) {
    grad.copy_(flat.narrow(0, offset, grad.numel()).view_as(grad));
    offset += grad.numel();
  }
}

bool StageExecutor::postReceive(const PipelineOp& op) {
  if (op.kind == OpKind::kForward && !first_stage_) {
    transport_.postRecv(placement_.input, transport_.rank() - 1, activationTag(op.microbatch));
    return true;
  }
  if (op.kind == OpKind::kBackward && !last_stage_) {
    transport_.postRecv(placement_.output, transport_.rank() + 1, gradientTag(op.microbatch));
    return true;
  }
  return false;
}

std::vector<OpRecord> StageExecutor::runStep(const RankOps& ops, const std::vector<ChainBatch>& microbatches,
                                             bool splits_backward) {
  live_.clear();
  last_loss_ = 0.0;
  splits_backward_ = splits_backward;
  const int microbatch_count = static_cast<int>(microbatches.size());
  std::vector<OpRecord> records;
  records.reserve(ops.size());
  // Each op's receive is posted when the receiving op before it starts, so that the peer's send
  // goes out as it is made and the op finds its input there (StageTransport::postRecv): one
  // receive beyond the current op's is posted at any time.
  std::size_t considered = 0;         // ops[0, considered) have had their receives posted
  std::ptrdiff_t last_posted = -1;    // the last op whose receive is posted
  const auto postThroughNextReceive = [&](std::size_t current) {
    while (static_cast<std::ptrdiff_t>(current) >= last_posted && considered < ops.size()) {
      const std::size_t index = considered++;
      if (postReceive(ops[index])) last_posted = static_cast<std::ptrdiff_t>(index);
    }
  };
  for (std::size_t index = 0; index < ops.size(); ++index) {
    const PipelineOp& op = ops[index];
    postThroughNextReceive(index);
    OpRecord record;
    record.op = op;
    if (memory_) memory_->resetPeak();
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
      case OpKind::kAllReduce:
        allReduceGradients(op);
        break;
    }
    waitForDevice(device_);
    record.start_ns = compute_start_ns_;
    record.end_ns = clock_.nowNs();
    if (memory_) record.peak_bytes = memory_->peakBytes();
    records.push_back(record);
  }
  transport_.flushSends();
  return records;
}

}  // namespace stagecut
