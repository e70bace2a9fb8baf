#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "profiler/layer_chain.h"
#include "profiler/memory_counter.h"
#include "runtime/main_gradients.h"
#include "runtime/rank_world.h"
#include "runtime/stage_transport.h"
#include "profiler/weight_gradient_split.h"
#include "schedule/pipeline_schedule.h"

namespace stagecut {

/// When one op of a rank ran, in nanoseconds of the rank's clock (the steady clock for real runs:
/// one clock for all processes of a machine). A receive's wait is not part of the op: the op
/// starts once its input is there.
struct OpRecord {
  PipelineOp op;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  /// With a MemoryCounter (setMemoryCounter): the most bytes alive during the op, its receive
  /// included, as the counter counts them (from where it started).
  std::int64_t peak_bytes = 0;
};

/// One chunk of what a rank runs: the layers [first_layer, last_layer] of a chain, chunk `index`
/// of the split (in chain order), and the tensors it receives (its input, from the rank of chunk
/// index - 1) and sends (its output, whose gradient comes back from the rank of chunk index + 1),
/// of one microbatch. A rank runs one such chunk in an N-stage pipeline, several under
/// interleaved 1F1B, ZB-V and DualPipeV.
struct PlacedChunk {
  int first_layer = 0;
  int last_layer = 0;
  int index = 0;
  /// The rank running chunk `index` - 1, or -1 for the chain's first (it reads the
  /// microbatches' inputs); this rank itself where the chain turns on it (a V's turn).
  int previous_rank = -1;
  /// The rank running chunk `index` + 1, or -1 for the chain's last (it computes
  /// the loss); this rank itself where the chain turns on it.
  int next_rank = -1;
  TensorSpec input;   ///< unused on the chain's first chunk
  TensorSpec output;  ///< unused on the chain's last chunk

  bool readsBatch() const { return previous_rank < 0; }
  bool computesLoss() const { return next_rank < 0; }
};

/// The rule by which microbatches add up to the full batch: the loss a chain trains on (its
/// output when that is one number, a loss layer's; else the mean of its output, for chains without
/// a loss layer), divided by the `microbatches` of the step. Each microbatch's loss is a mean over
/// its equal share of the rows, so the gradients accumulated over the step equal the full batch's;
/// `microbatches` = 1 gives the full batch's own loss.
torch::Tensor microbatchLoss(const torch::Tensor& output, int microbatches);

/// Runs one rank's op list of a pipeline step on its model chunks (an op's `chunk` indexes
/// them), exchanging activations and gradients through a StageTransport; between two chunks of
/// the same rank they are handed over in memory, as no message is needed. Gradients accumulate in the parameters' .grad as in
/// training, or, for bfloat16 and float16 weights, in float32 buffers (MainGradients); the loss
/// of each microbatch is microbatchLoss(output, M), so the step's gradient equals the full
/// batch's. With `splits_backward`, B computes only input gradients (and those of the
/// layer outputs inside the stage) and W the weight gradients, layer by layer.
/// With recomputation (activation checkpointing), F runs under no-grad and keeps only the stage
/// input of each microbatch; B first runs the stage forward again with grad, then backward through
/// it. With a ReplicaGroup, an all-reduce op (A) averages the stage's gradients over the replicas.
class StageExecutor {
 public:
  /// `chunks`: the rank's model chunks in local order (one or more); `clock` times the op
  /// records; `replicas`: the data-parallel group of this rank's chunks, or nullptr (then A ops
  /// are refused). All must outlive the executor.
  StageExecutor(const LayerChain& chain, std::vector<PlacedChunk> chunks, StageTransport& transport,
                const RankClock& clock, ReplicaGroup* replicas = nullptr);

  /// Turns activation recomputation on or off for the following steps.
  void setRecompute(bool recompute) { recompute_ = recompute; }
  /// The device the stage's tensors live on (the CPU unless set): each op's end is read once
  /// the work it queued there has run, and the zero input gradients it sends are made there.
  void setDevice(const torch::Device& device) { device_ = device; }
  /// Samples `counter` at every op (OpRecord::peak_bytes); nullptr: no sampling.
  void setMemoryCounter(MemoryCounter* counter) { memory_ = counter; }

  /// Runs `ops` for `microbatches` (the first stage reads their inputs, the last their
  /// targets). Returns when every op ran and every send was delivered. Throws Error (kRuntime)
  /// from the transport, e.g. a timeout naming the op and the peer.
  std::vector<OpRecord> runStep(const RankOps& ops, const std::vector<ChainBatch>& microbatches,
                                bool splits_backward);

  /// Sum of the microbatches' scaled losses of the last step (the full batch's loss); only on
  /// the rank of the chain's last stage, else 0.
  double lastStepLoss() const { return last_loss_; }
  /// The parameters of all of this rank's chunks, in local chunk order, each in layer order.
  std::vector<torch::Tensor> parameters() const;
  /// Sets every parameter's gradient to zero (the start of a step). The buffers stay, as
  /// Megatron's and DeepSpeed's do: the memory model counts them from the first backward on.
  void zeroGradients();
  /// The gradient the steps accumulated for `weight` (one of parameters()): its .grad, or its
  /// float32 buffer where the weights are low-precision; undefined before the first backward.
  torch::Tensor gradientOf(const torch::Tensor& weight) const;
  /// Bytes of the gradients held: the parameters' .grad, or the float32 buffers.
  std::uint64_t gradientBytes() const;
  /// The float32 gradient buffers of a low-precision stage; nullptr for a float32 one.
  MainGradients* mainGradients() const { return main_gradients_.get(); }

 private:
  struct MicrobatchState {
    torch::Tensor input;                 // leaf that receives the input gradient
    std::vector<torch::Tensor> outputs;  // with a split backward: each layer's output, for B's targets
    torch::Tensor root;                  // what the backward starts from (scaled loss on the last stage)
    std::shared_ptr<WeightGradientSplit> weight_split;  // set by B when W is apart
    torch::Tensor root_grad;                   // what B started from, kept for W
    std::vector<torch::Tensor> target_grads;   // what B returned, kept for W
    torch::Tensor target;                // the microbatch's target, for the last stage's recomputation
  };

  using LiveKey = std::pair<int, int>;  // (local chunk, microbatch)

  void forward(const PipelineOp& op, const ChainBatch& batch);
  // Runs the chunk's layers on state.input with grad, filling outputs and root.
  void runLayers(const PlacedChunk& chunk, MicrobatchState& state, const torch::Tensor& target);
  void backward(const PipelineOp& op, bool splits_backward);
  void weightBackward(const PipelineOp& op);
  void allReduceGradients(const PipelineOp& op);
  // Posts the receive `op` starts with, if it has one from another rank; whether it has.
  bool postReceive(const PipelineOp& op);
  // The parameters of local chunk `chunk`, in layer order.
  std::vector<torch::Tensor> chunkParameters(int chunk) const;
  // The op's local chunk, checked against the rank's chunks.
  int chunkIndexOf(const PipelineOp& op) const;
  const PlacedChunk& chunkOf(const PipelineOp& op) const;
  // What a chunk sends to `peer`: over the transport, or kept for this rank's own chunk.
  void send(const torch::Tensor& tensor, int peer, int tag);
  // What a chunk receives from `peer`: from the transport, or what this rank's own chunk kept.
  torch::Tensor receive(const TensorSpec& spec, int peer, int tag, const std::string& what);
  int activationTagOf(int boundary, int microbatch) const {
    return activationTag(boundary, microbatch, microbatch_count_);
  }
  int gradientTagOf(int boundary, int microbatch) const { return gradientTag(boundary, microbatch, microbatch_count_); }

  const LayerChain& chain_;
  std::vector<PlacedChunk> chunks_;
  StageTransport& transport_;
  const RankClock& clock_;
  ReplicaGroup* replicas_;
  bool recompute_ = false;
  bool splits_backward_ = false;
  MemoryCounter* memory_ = nullptr;
  torch::Device device_ = torch::kCPU;
  int microbatch_count_ = 1;
  std::map<LiveKey, MicrobatchState> live_;
  std::map<int, torch::Tensor> handed_over_;  // by tag: what one of this rank's chunks sent another
  std::unique_ptr<MainGradients> main_gradients_;  // low-precision weights only
  double last_loss_ = 0.0;
  std::int64_t compute_start_ns_ = 0;  // set by each op once its input has arrived
};

}  // namespace stagecut
