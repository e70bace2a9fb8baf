#include "runtime/stage_executor.h"

#include "core/error.h"
#include "runtime/rank_device.h"

namespace stagecut {

namespace {

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

StageExecutor::StageExecutor(const LayerChain& chain, std::vector<PlacedChunk> chunks, StageTransport& transport,
                             const RankClock& clock, ReplicaGroup* replicas)
    : chain_(chain), chunks_(std::move(chunks)), transport_(transport), clock_(clock), replicas_(replicas) {
  if (chunks_.empty()) throw Error("a pipeline rank needs at least one model chunk", ErrorKind::kInput);
  const std::vector<torch::Tensor> weights = parameters();
  if (needsMainGradients(weights)) main_gradients_ = std::make_unique<MainGradients>(weights);
}

std::vector<torch::Tensor> StageExecutor::chunkParameters(int chunk) const {
  const PlacedChunk& placement = chunks_.at(static_cast<std::size_t>(chunk));
  std::vector<torch::Tensor> all;
  for (int i = placement.first_layer; i <= placement.last_layer; ++i) {
    const auto& layer_parameters = chain_.layers[i].parameters;
    all.insert(all.end(), layer_parameters.begin(), layer_parameters.end());
  }
  return all;
}

std::vector<torch::Tensor> StageExecutor::parameters() const {
  std::vector<torch::Tensor> all;
  for (std::size_t c = 0; c < chunks_.size(); ++c) {
    const std::vector<torch::Tensor> chunk = chunkParameters(static_cast<int>(c));
    all.insert(all.end(), chunk.begin(), chunk.end());
  }
  return all;
}

int StageExecutor::chunkIndexOf(const PipelineOp& op) const {
  if (op.chunk < 0 || op.chunk >= static_cast<int>(chunks_.size())) {
    throw Error("rank " + std::to_string(transport_.rank()) + ": the op list holds " + describeOp(op, Placement::loop(1, 2)) +
                    " but this rank runs " + std::to_string(chunks_.size()) + " chunk(s)",
                ErrorKind::kInput);
  }
  return op.chunk;
}

const PlacedChunk& StageExecutor::chunkOf(const PipelineOp& op) const {
  return chunks_[static_cast<std::size_t>(chunkIndexOf(op))];
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

void StageExecutor::send(const torch::Tensor& tensor, int peer, int tag) {
  if (peer != transport_.rank()) {
    transport_.sendAsync(tensor, peer, tag);
    return;
  }
  // Detached, as a message would arrive: the receiving chunk's graph starts at its own input.
  handed_over_[tag] = tensor.detach();
}

torch::Tensor StageExecutor::receive(const TensorSpec& spec, int peer, int tag, const std::string& what) {
  if (peer != transport_.rank()) return transport_.recv(spec, peer, tag, what);
  const auto kept = handed_over_.find(tag);
  if (kept == handed_over_.end()) {
    throw Error("rank " + std::to_string(peer) + ": " + what + " is needed before this rank made it; the op list "
                    "runs a chunk before the one that feeds it",
                ErrorKind::kInput);
  }
  torch::Tensor tensor = kept->second;
  handed_over_.erase(kept);
  return tensor;
}

void StageExecutor::runLayers(const PlacedChunk& chunk, MicrobatchState& state, const torch::Tensor& target) {
  if (state.input.is_floating_point()) state.input.requires_grad_(true);
  state.outputs.clear();
  torch::Tensor activation = state.input;
  for (int i = chunk.first_layer; i <= chunk.last_layer; ++i) {
    activation = runLayer(chain_.layers[i], activation, target);
    // Only a split backward needs the inner outputs; held otherwise, they would outlive the
    // layers that free them, as no framework's stage keeps them.
    if (splits_backward_) state.outputs.push_back(activation);
  }
  state.root = chunk.computesLoss() ? microbatchLoss(activation, microbatch_count_) : activation;
}

void StageExecutor::forward(const PipelineOp& op, const ChainBatch& batch) {
  const PlacedChunk& chunk = chunkOf(op);
  const int microbatch = op.microbatch;
  MicrobatchState state;
  if (chunk.readsBatch()) {
    state.input = batch.input;
  } else {
    state.input = receive(chunk.input, chunk.previous_rank, activationTagOf(chunk.index - 1, microbatch),
                          describeOp(op, Placement::loop(1, static_cast<int>(chunks_.size()))) + "'s activation");
  }
  compute_start_ns_ = clock_.nowNs();
  if (recompute_) {
    // Checkpointing: no graph and no saved activations now; B runs this forward again with grad.
    state.target = batch.target;
    torch::NoGradGuard no_grad;
    torch::Tensor activation = state.input;
    for (int i = chunk.first_layer; i <= chunk.last_layer; ++i) {
      activation = runLayer(chain_.layers[i], activation, batch.target);
    }
    if (chunk.computesLoss()) {
      last_loss_ += microbatchLoss(activation, microbatch_count_).item<double>();
    } else {
      send(activation, chunk.next_rank, activationTagOf(chunk.index, microbatch));
    }
    live_[{op.chunk, microbatch}] = std::move(state);
    return;
  }
  runLayers(chunk, state, batch.target);
  if (chunk.computesLoss()) {
    last_loss_ += state.root.item<double>();
  } else {
    send(state.root, chunk.next_rank, activationTagOf(chunk.index, microbatch));
  }
  live_[{op.chunk, microbatch}] = std::move(state);
}

void StageExecutor::backward(const PipelineOp& op, bool splits_backward) {
  const PlacedChunk& chunk = chunkOf(op);
  const int microbatch = op.microbatch;
  MicrobatchState& state = live_.at({op.chunk, microbatch});
  torch::Tensor grad;
  if (!chunk.computesLoss()) {
    grad = receive(chunk.output, chunk.next_rank, gradientTagOf(chunk.index, microbatch),
                   describeOp(op, Placement::loop(1, static_cast<int>(chunks_.size()))) + "'s gradient");
  }
  compute_start_ns_ = clock_.nowNs();
  if (!chunk.computesLoss() && chunk.next_rank != transport_.rank()) {
    // The next rank answered this microbatch: it has our activation, whose buffer can go.
    transport_.releaseSend(chunk.next_rank, activationTagOf(chunk.index, microbatch));
  }
  if (recompute_) runLayers(chunk, state, state.target);
  if (chunk.computesLoss()) grad = torch::ones_like(state.root);
  const bool input_needs_grad = state.input.requires_grad();
  torch::Tensor input_grad;
  if (!splits_backward) {
    torch::autograd::backward({state.root}, {grad});
    if (input_needs_grad) input_grad = state.input.grad();
  } else {
    // B: gradients of the chunk input and of every layer output inside the chunk, and no
    // weight gradient; the graph is kept, and the operations where W will start keep theirs.
    std::vector<torch::Tensor> targets;
    if (input_needs_grad) targets.push_back(state.input);
    const std::size_t inner = state.outputs.size() - 1;
    for (std::size_t j = 0; j < inner; ++j) targets.push_back(state.outputs[j]);
    state.weight_split = std::make_shared<WeightGradientSplit>(state.root, targets, chunkParameters(op.chunk));
    if (!targets.empty()) {
      state.target_grads = torch::autograd::grad({state.root}, targets, {grad}, true, false, true);
    }
    state.root_grad = grad;
    if (input_needs_grad) input_grad = state.target_grads[0];
  }
  if (!chunk.readsBatch()) {
    if (!input_grad.defined()) {
      const auto options = torch::TensorOptions().dtype(chunk.input.dtype).device(device_);
      input_grad = torch::zeros(chunk.input.sizes, options);
    }
    send(input_grad, chunk.previous_rank, gradientTagOf(chunk.index - 1, microbatch));
  }
  if (!splits_backward) live_.erase({op.chunk, microbatch});
}

void StageExecutor::weightBackward(const PipelineOp& op) {
  compute_start_ns_ = clock_.nowNs();
  MicrobatchState& state = live_.at({op.chunk, op.microbatch});
  WeightGradientSplit::GradientSink add_gradient;
  if (main_gradients_) {
    add_gradient = [this](torch::Tensor& weight, const torch::Tensor& grad) { main_gradients_->add(weight, grad); };
  }
  state.weight_split->runWeightBackward(state.root_grad, state.target_grads, add_gradient);
  live_.erase({op.chunk, op.microbatch});
}

void StageExecutor::allReduceGradients(const PipelineOp& op) {
  const std::string op_name = describeOp(op, Placement::loop(1, static_cast<int>(chunks_.size())));
  if (!replicas_) {
    throw Error("rank " + std::to_string(transport_.rank()) + ": the op list holds " + op_name +
                    " but this stage has no data-parallel replicas",
                ErrorKind::kInput);
  }
  // As a receive is not part of its op, waiting for replicas that are behind is not part of A:
  // its clock starts once every replica is there, so it measures what the ring all-reduce costs.
  replicas_->barrier(op_name);
  compute_start_ns_ = clock_.nowNs();
  // One flat buffer for all of the op's chunk's gradients (each chunk has its own A, after its
  // last W): one collective instead of one per tensor (Gloo's allreduce also wants tensors of
  // one size).
  if (main_gradients_) main_gradients_->all();  // a buffer for every weight, zeros where none reached
  std::vector<torch::Tensor> grads;
  for (auto& parameter : chunkParameters(chunkIndexOf(op))) {
    if (main_gradients_) {
      grads.push_back(main_gradients_->of(parameter));
      continue;
    }
    if (!parameter.grad().defined()) parameter.mutable_grad() = torch::zeros_like(parameter);
    grads.push_back(parameter.grad());
  }
  if (grads.empty()) return;
  std::vector<torch::Tensor> flat_parts;
  for (const auto& grad : grads) flat_parts.push_back(grad.reshape({-1}));
  torch::Tensor flat = torch::cat(flat_parts);
  replicas_->allReduceSum(flat, op_name);
  // Each replica's gradient is the mean over its own microbatches; their mean is the full batch's.
  flat.div_(static_cast<double>(replicas_->size()));
  std::int64_t offset = 0;
  for (auto& grad : grads) {
    grad.copy_(flat.narrow(0, offset, grad.numel()).view_as(grad));
    offset += grad.numel();
  }
}

bool StageExecutor::postReceive(const PipelineOp& op) {
  if (op.kind != OpKind::kForward && op.kind != OpKind::kBackward) return false;
  const PlacedChunk& chunk = chunkOf(op);
  if (op.kind == OpKind::kForward && !chunk.readsBatch() && chunk.previous_rank != transport_.rank()) {
    transport_.postRecv(chunk.input, chunk.previous_rank, activationTagOf(chunk.index - 1, op.microbatch));
    return true;
  }
  if (op.kind == OpKind::kBackward && !chunk.computesLoss() && chunk.next_rank != transport_.rank()) {
    transport_.postRecv(chunk.output, chunk.next_rank, gradientTagOf(chunk.index, op.microbatch));
    return true;
  }
  return false;
}

std::vector<OpRecord> StageExecutor::runStep(const RankOps& ops, const std::vector<ChainBatch>& microbatches,
                                             bool splits_backward) {
  live_.clear();
  handed_over_.clear();
  last_loss_ = 0.0;
  splits_backward_ = splits_backward;
  microbatch_count_ = static_cast<int>(microbatches.size());
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
        forward(op, microbatches.at(op.microbatch));
        break;
      case OpKind::kBackward:
        backward(op, splits_backward);
        break;
      case OpKind::kWeight:
        weightBackward(op);
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
