#include "prediction/stage_memory.h"

#include <algorithm>

#include "core/error.h"
#include "core/precision.h"
#include "core/suggest.h"

namespace stagecut {

namespace {

double bytesOr(const std::optional<std::uint64_t>& value, double fallback) {
  return value ? static_cast<double>(*value) : fallback;
}

struct NamedOptimizer {
  const char* name;
  OptimizerMemory memory;
};

// LibTorch's Adam builds sqrt(v) and its quotient by sqrt(bias correction) per tensor; SGD, with
// or without momentum, updates in place. adam-mixed's are of the float32 master of a 16-bit
// weight: twice its bytes each.
constexpr NamedOptimizer kOptimizers[] = {{"none", {8.0, 0.0, {}}},
                                          {"sgd", {8.0, 0.0, {}}},
                                          {"sgd-momentum", {12.0, 0.0, {}}},
                                          {"adam", {16.0, 2.0, {}}},
                                          {"adam-mixed", {18.0, 4.0, {}}}};

}  // namespace

const std::vector<std::string>& optimizerNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> list;
    for (const auto& optimizer : kOptimizers) list.push_back(optimizer.name);
    return list;
  }();
  return names;
}

OptimizerMemory optimizerMemory(const std::string& name) {
  for (const auto& optimizer : kOptimizers) {
    if (name == optimizer.name) return optimizer.memory;
  }
  throw Error("--optimizer: unknown optimizer '" + name + "'" + unknownNameHint(name, optimizerNames()));
}

std::vector<LayerMemoryTerms> layerMemoryTerms(const Profile& profile) {
  // 16-bit weights' gradients add up in float32 buffers, as Megatron's --bf16 keeps them
  // (validate's MainGradients): 4 bytes a parameter, whatever the profile's .grad was.
  const bool float32_gradients = isSixteenBitPrecision(profile.run.dtype);
  std::vector<LayerMemoryTerms> terms(profile.layers.size());
  for (std::size_t i = 0; i < profile.layers.size(); ++i) {
    const LayerCost& layer = profile.layers[i];
    LayerMemoryTerms& term = terms[i];
    term.params = static_cast<double>(layer.params);
    term.weights = static_cast<double>(layer.param_bytes);
    term.gradients = float32_gradients ? 4.0 * term.params : bytesOr(layer.gradient_bytes, term.weights);
    term.largest_parameter = bytesOr(layer.largest_parameter_bytes, 0.0);
    term.kept = static_cast<double>(layer.activation_bytes);
    term.input = i > 0 ? static_cast<double>(profile.layers[i - 1].output_bytes) : 0.0;
    // Not measured: most layers save their input, and counting it twice would be worse.
    term.input_kept = bytesOr(layer.input_kept_bytes, std::min(term.input, term.kept));
    term.output = i + 1 < profile.layers.size() ? static_cast<double>(layer.output_bytes) : 0.0;
    term.forward_transient = bytesOr(layer.forward_transient_bytes, 0.0);
    term.backward_transient = bytesOr(layer.backward_transient_bytes, 0.0);
    term.weight_pending = bytesOr(layer.weight_pending_bytes, 0.0);
  }
  return terms;
}

std::vector<std::string> missingMemoryFields(const Profile& profile) {
  std::vector<std::string> missing;
  const auto note = [&](bool lacks, const char* field) {
    if (lacks && std::find(missing.begin(), missing.end(), field) == missing.end()) missing.push_back(field);
  };
  for (const LayerCost& layer : profile.layers) {
    note(!layer.forward_transient_bytes, "forward_transient_bytes");
    note(!layer.backward_transient_bytes, "backward_transient_bytes");
    note(!layer.input_kept_bytes, "input_kept_bytes");
    note(!layer.weight_pending_bytes, "weight_pending_bytes");
    note(!layer.largest_parameter_bytes && layer.params > 0, "largest_parameter_bytes");
  }
  return missing;
}

bool recomputesSome(const RecomputeOption* option, int first, int last) {
  if (option == nullptr || option->recomputed.empty()) return false;
  for (int i = first; i <= last; ++i) {
    if (option->recomputed[static_cast<std::size_t>(i)]) return true;
  }
  return false;
}

namespace {

std::vector<double> prefixOf(const std::vector<double>& values) {
  std::vector<double> prefix(values.size() + 1, 0.0);
  for (std::size_t i = 0; i < values.size(); ++i) prefix[i + 1] = prefix[i] + values[i];
  return prefix;
}

// A bottom-up segment tree of maxima: 2L doubles.
std::vector<double> maxTreeOf(const std::vector<double>& values) {
  const std::size_t n = values.size();
  std::vector<double> tree(2 * n, 0.0);
  for (std::size_t i = 0; i < n; ++i) tree[n + i] = values[i];
  for (std::size_t i = n - 1; i > 0; --i) tree[i] = std::max(tree[2 * i], tree[2 * i + 1]);
  return tree;
}

}  // namespace

double StageMemoryTable::largest(const std::vector<double>& tree, int first, int last) const {
  double best = 0.0;
  std::size_t lo = static_cast<std::size_t>(first) + layers_.size();
  std::size_t hi = static_cast<std::size_t>(last) + layers_.size() + 1;
  for (; lo < hi; lo /= 2, hi /= 2) {
    if (lo & 1) best = std::max(best, tree[lo++]);
    if (hi & 1) best = std::max(best, tree[--hi]);
  }
  return best;
}

StageMemoryTable::StageMemoryTable(std::vector<LayerMemoryTerms> layers, const StageMemoryRules& rules)
    : layers_(std::move(layers)), splits_backward_(rules.splits_backward), optimizer_(rules.optimizer) {
  const std::size_t n = layers_.size();
  recomputed_.assign(n, 0);
  if (rules.recompute != nullptr && rules.recompute->recomputed.size() == n) recomputed_ = rules.recompute->recomputed;
  full_recompute_ = n > 0 && std::all_of(recomputed_.begin(), recomputed_.end(), [](char on) { return on != 0; });
  std::vector<double> weights(n), gradients(n), state(n), kept(n), run_inputs(n), recomputed_kept(n), held(n),
      pending(n), largest_parameter(n), forward(n), backward(n), weight(n), largest_recomputed(n), forward_walk(n),
      backward_walk(n);
  double activations_before = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const LayerMemoryTerms& layer = layers_[i];
    const bool again = recomputed_[i] != 0;
    weights[i] = layer.weights * optimizer_.sharding.weights;
    gradients[i] = layer.gradients * optimizer_.sharding.gradients;
    // Per layer, so that the state of a range only grows with it.
    state[i] = std::max(0.0, optimizer_.bytes_per_param * layer.params - layer.weights - layer.gradients) *
               optimizer_.sharding.state;
    // keptBytesOfLayer in prefix form: a run's start inside the range keeps its input; the
    // stage's first layer, when recomputed, always starts one (terms() adds it).
    kept[i] = keptBytesOfLayer(again, false, layer.kept, layer.input);
    run_inputs[i] = again && (i == 0 || !recomputed_[i - 1]) ? layer.input : 0.0;
    recomputed_kept[i] = again ? layer.kept : 0.0;
    largest_recomputed[i] = again ? layer.kept : 0.0;
    // A split backward differentiates for every layer output inside the stage: each is held,
    // once, even where the next layer does not save it, and so is its gradient, from B to W.
    held[i] = i + 1 < n ? std::max(0.0, layer.output - layers_[i + 1].input_kept) : 0.0;
    pending[i] = layer.weight_pending + layer.output;
    largest_parameter[i] = layer.largest_parameter;
    forward[i] = layer.forward_transient;
    backward[i] = layer.backward_transient;
    weight[i] = layer.weights > 0 ? layer.backward_transient : 0.0;
    activations_before += layer.kept;
    // Layer i's forward holds the activations of the layers up to it, its input (until it ends,
    // saved or not), its output and its temporaries; its backward, the activations up to it,
    // the gradient of its output and its temporaries. terms() takes the first and last layer
    // of a stage apart: the received input and gradient are the stage's buffers.
    forward_walk[i] = layer.forward_transient + std::max(0.0, layer.input - layer.input_kept) + layer.output +
                      activations_before;
    backward_walk[i] = layer.backward_transient + layer.output + activations_before;
  }
  std::vector<double> split_backward(n);
  for (std::size_t i = 0; i < n; ++i) {
    split_backward[i] = std::max(0.0, layers_[i].backward_transient - layers_[i].input);
  }
  split_backward_ = maxTreeOf(split_backward);
  std::vector<double> activations(n);
  for (std::size_t i = 0; i < n; ++i) activations[i] = layers_[i].kept;
  activation_prefix_ = prefixOf(activations);
  forward_walk_ = maxTreeOf(forward_walk);
  backward_walk_ = maxTreeOf(backward_walk);
  weights_ = prefixOf(weights);
  gradients_ = prefixOf(gradients);
  optimizer_state_ = prefixOf(state);
  kept_ = prefixOf(kept);
  run_inputs_ = prefixOf(run_inputs);
  recomputed_kept_ = prefixOf(recomputed_kept);
  held_outputs_ = prefixOf(held);
  pending_ = prefixOf(pending);
  largest_parameter_ = maxTreeOf(largest_parameter);
  forward_transient_ = maxTreeOf(forward);
  backward_transient_ = maxTreeOf(backward);
  weight_transient_ = maxTreeOf(weight);
  largest_recomputed_ = maxTreeOf(largest_recomputed);
}

StageMemoryTerms StageMemoryTable::terms(int first, int last) const {
  StageMemoryTerms terms;
  const LayerMemoryTerms& front = layers_[static_cast<std::size_t>(first)];
  const LayerMemoryTerms& back = layers_[static_cast<std::size_t>(last)];
  const bool first_recomputed = recomputed_[static_cast<std::size_t>(first)] != 0;
  terms.weights = sum(weights_, first, last);
  terms.gradients = sum(gradients_, first, last);
  terms.optimizer = sum(optimizer_state_, first, last);
  // Outputs inside the stage (first..last-1), as held by a split backward and their gradients.
  const double held = last > first ? sum(held_outputs_, first, last - 1) : 0.0;
  // The received input is held by the stage until B, once, whether the first layer saves it or
  // not (a recomputed run starting there keeps it as its input); the sent output until the next
  // rank's gradient comes back.
  double kept = sum(kept_, first, last) + (last > first ? sum(run_inputs_, first + 1, last) : 0.0);
  kept += first_recomputed ? front.input : front.input - front.input_kept;
  terms.kept = kept + back.output;
  if (full_recompute_) {
    terms.recomputed = sum(recomputed_kept_, first, last) - front.input_kept + (splits_backward_ ? held : 0.0);
  } else {
    terms.recomputed = largest(largest_recomputed_, first, last);
    if (splits_backward_) terms.kept += held;
  }
  if (splits_backward_) {
    // What W starts from: the gradients at its joins, of each output (the inner ones and the
    // stage's own, which B started from), and B's rebuilt graph.
    terms.pending = sum(pending_, first, last) + terms.recomputed;
  }
  terms.received_gradient = back.output;
  terms.sent_gradient = front.input;
  // The walks: layer i's forward runs with the activations of first..i-1 there, its backward
  // after those of i+1..last were freed; both against all of them (activation_prefix_ up to last).
  const double through_first = activation_prefix_[static_cast<std::size_t>(first + 1)];
  const double through_last = activation_prefix_[static_cast<std::size_t>(last + 1)];
  if (full_recompute_) {
    terms.forward_transient = largest(forward_transient_, first, last);  // F keeps nothing
  } else {
    double walk = front.forward_transient + front.output + through_first;
    if (last > first) walk = std::max(walk, largest(forward_walk_, first + 1, last));
    terms.forward_transient = std::max(0.0, walk - through_last - back.output);
  }
  if (splits_backward_) {
    // Nothing is freed: the graph waits for W. What B returns (the gradients of the layer
    // inputs inside the stage) is pending, counted whole from B's start; the stage input's
    // gradient is sent, and counted here.
    terms.backward_transient = front.backward_transient;
    if (last > first) terms.backward_transient = std::max(terms.backward_transient, largest(split_backward_, first + 1, last));
  } else {
    double walk = back.backward_transient + through_last;
    if (last > first) walk = std::max(walk, largest(backward_walk_, first, last - 1));
    terms.backward_transient = std::max(0.0, walk - through_last);
  }
  terms.weight_transient = largest(weight_transient_, first, last);
  terms.allreduce_transient = terms.gradients;
  terms.optimizer_transient = optimizer_.step_temporaries * largest(largest_parameter_, first, last);
  return terms;
}

StageMemoryTerms stageMemoryTerms(const std::vector<LayerMemoryTerms>& layers, int first, int last,
                                  const StageMemoryRules& rules) {
  return StageMemoryTable(layers, rules).terms(first, last);
}

bool MemoryState::operator==(const MemoryState& other) const {
  return kept == other.kept && pending == other.pending && sent == other.sent && gradients == other.gradients &&
         received == other.received && posted_input == other.posted_input &&
         posted_gradient == other.posted_gradient && recomputes == other.recomputes && transient == other.transient;
}

MemoryParts memoryStateParts(const MemoryState& state, const StageMemoryTerms& terms) {
  MemoryParts parts;
  parts.weights = terms.weights;
  parts.gradients = state.gradients ? terms.gradients : 0.0;
  parts.optimizer = terms.optimizer;
  parts.activations = state.kept * terms.kept + state.pending * terms.pending;
  // The input's gradient and the input have one size (S), as have the output and its gradient (R).
  parts.buffers = state.sent * terms.sent_gradient + (state.received ? terms.received_gradient : 0.0) +
                  state.posted_input * terms.sent_gradient + state.posted_gradient * terms.received_gradient;
  switch (state.transient) {
    case MemoryState::Transient::kNone: break;
    case MemoryState::Transient::kForward: parts.transient = terms.forward_transient; break;
    case MemoryState::Transient::kBackward: parts.transient = terms.backward_transient; break;
    case MemoryState::Transient::kWeight: parts.transient = terms.weight_transient; break;
    case MemoryState::Transient::kAllReduce: parts.transient = terms.allreduce_transient; break;
    case MemoryState::Transient::kOptimizer: parts.transient = terms.optimizer_transient; break;
  }
  if (state.recomputes) parts.transient += terms.recomputed;
  return parts;
}

double memoryStateBytes(const MemoryState& state, const StageMemoryTerms& terms) {
  return memoryStateParts(state, terms).total();
}

namespace {

// How each local chunk of a rank meets its neighbours: whether its input, and its output's
// gradient, come by message, and the local chunk its output is handed over to in memory (-1:
// none); and for each op the first later op that receives (ops.size(): none).
struct ChunkMessages {
  std::vector<bool> input_by_message, gradient_by_message;
  std::vector<int> hands_over_to;
  std::vector<std::size_t> next_receive;

  bool receivesInput(const PipelineOp& op) const {
    return op.kind == OpKind::kForward && input_by_message[static_cast<std::size_t>(op.chunk)];
  }
  bool receivesGradient(const PipelineOp& op) const {
    return op.kind == OpKind::kBackward && gradient_by_message[static_cast<std::size_t>(op.chunk)];
  }
};

ChunkMessages chunkMessages(const RankOps& ops, const Placement& placement, int rank, int v) {
  const std::size_t chunks = static_cast<std::size_t>(v);
  ChunkMessages messages{std::vector<bool>(chunks), std::vector<bool>(chunks), std::vector<int>(chunks, -1), {}};
  for (int local = 0; local < v; ++local) {
    const int chunk = placement.chunkAt(rank, local);
    const bool has_next = chunk + 1 < placement.chunkCount();
    messages.input_by_message[static_cast<std::size_t>(local)] = chunk > 0 && placement.crossesRanks(chunk - 1);
    messages.gradient_by_message[static_cast<std::size_t>(local)] = has_next && placement.crossesRanks(chunk);
    if (has_next && !placement.crossesRanks(chunk)) {
      messages.hands_over_to[static_cast<std::size_t>(local)] = placement.localOf(chunk + 1);
    }
  }
  messages.next_receive.assign(ops.size(), ops.size());
  for (std::size_t i = ops.size(); i-- > 1;) {
    messages.next_receive[i - 1] =
        messages.receivesInput(ops[i]) || messages.receivesGradient(ops[i]) ? i : messages.next_receive[i];
  }
  return messages;
}

}  // namespace

std::vector<std::vector<MemoryState>> rankChunkMemoryStates(const RankOps& ops, const Placement& placement, int rank,
                                                            bool splits_backward, bool recomputes) {
  const int v = std::max(placement.chunks_per_rank, 1);
  const std::size_t chunks = static_cast<std::size_t>(v);
  std::vector<std::vector<MemoryState>> states;
  states.reserve(ops.size() + 1);
  std::vector<double> kept(chunks, 0.0), pending(chunks, 0.0), sent(chunks, 0.0);
  const ChunkMessages messages = chunkMessages(ops, placement, rank, v);
  const std::vector<int>& hands_over_to = messages.hands_over_to;
  const std::vector<std::size_t>& next_receive = messages.next_receive;
  const auto receivesInput = [&](const PipelineOp& op) { return messages.receivesInput(op); };
  const auto receivesGradient = [&](const PipelineOp& op) { return messages.receivesGradient(op); };
  for (std::size_t index = 0; index < ops.size(); ++index) {
    const PipelineOp& op = ops[index];
    const std::size_t own = static_cast<std::size_t>(op.chunk);
    std::vector<MemoryState> chunk_states(chunks);
    for (MemoryState& state : chunk_states) state.transient = MemoryState::Transient::kNone;
    MemoryState& state = chunk_states[own];
    if (next_receive[index] < ops.size()) {
      const PipelineOp& next = ops[next_receive[index]];
      MemoryState& posted = chunk_states[static_cast<std::size_t>(next.chunk)];
      posted.posted_input = receivesInput(next) ? 1.0 : 0.0;
      posted.posted_gradient = receivesGradient(next) ? 1.0 : 0.0;
    }
    switch (op.kind) {
      case OpKind::kForward:
        kept[own] += 1.0;  // the microbatch's kept bytes build up during F: counted whole
        state.transient = MemoryState::Transient::kForward;
        break;
      case OpKind::kBackward:
        state.transient = MemoryState::Transient::kBackward;
        state.received = receivesGradient(op) || hands_over_to[own] >= 0;
        // The gradient handed over is this op's now, no longer the chunk's that made it.
        if (hands_over_to[own] >= 0) sent[static_cast<std::size_t>(hands_over_to[own])] -= 1.0;
        // What B leaves for W (its rebuilt graph too, when it recomputes) is there at its end.
        state.recomputes = recomputes && !splits_backward;
        if (splits_backward) pending[own] += 1.0;
        break;
      case OpKind::kWeight:
        state.transient = MemoryState::Transient::kWeight;
        break;
      case OpKind::kAllReduce:
        state.transient = MemoryState::Transient::kAllReduce;
        break;
    }
    // Gradient buffers outlive the step (zeroed, not freed, as Megatron's and DeepSpeed's are):
    // from the first backward of training on, so in every step from its start.
    for (std::size_t c = 0; c < chunks; ++c) {
      chunk_states[c].kept = kept[c];
      chunk_states[c].pending = pending[c];
      chunk_states[c].sent = sent[c];
      chunk_states[c].gradients = true;
    }
    states.push_back(std::move(chunk_states));
    if (op.kind == OpKind::kBackward) {
      if (placement.chunkAt(rank, op.chunk) > 0) sent[own] += 1.0;
      if (!splits_backward) kept[own] -= 1.0;
    } else if (op.kind == OpKind::kWeight) {
      kept[own] -= 1.0;
      pending[own] -= 1.0;
    }
  }
  MemoryState step;  // every send delivered, every microbatch done: the optimizer's turn
  step.gradients = true;
  step.transient = MemoryState::Transient::kOptimizer;
  states.emplace_back(chunks, step);
  return states;
}

std::vector<MemoryState> rankMemoryStates(const RankOps& ops, const Placement& placement, int rank,
                                          bool splits_backward, bool recomputes) {
  const double share = 1.0 / std::max(placement.chunks_per_rank, 1);
  std::vector<MemoryState> folded;
  for (const std::vector<MemoryState>& chunk_states :
       rankChunkMemoryStates(ops, placement, rank, splits_backward, recomputes)) {
    MemoryState state;
    state.transient = MemoryState::Transient::kNone;
    for (const MemoryState& chunk : chunk_states) {
      state.kept += chunk.kept * share;
      state.pending += chunk.pending * share;
      state.sent += chunk.sent;
      state.posted_input += chunk.posted_input;
      state.posted_gradient += chunk.posted_gradient;
      state.gradients = state.gradients || chunk.gradients;
      state.received = state.received || chunk.received;
      state.recomputes = state.recomputes || chunk.recomputes;
      if (chunk.transient != MemoryState::Transient::kNone) state.transient = chunk.transient;
    }
    folded.push_back(state);
  }
  return folded;
}

MemoryParts rankStateParts(const std::vector<MemoryState>& states, const std::vector<StageMemoryTerms>& terms) {
  MemoryParts total;
  for (std::size_t c = 0; c < states.size(); ++c) {
    const MemoryParts parts = memoryStateParts(states[c], terms[c]);
    total.weights += parts.weights;
    total.gradients += parts.gradients;
    total.optimizer += parts.optimizer;
    total.activations += parts.activations;
    total.buffers += parts.buffers;
    total.transient = std::max(total.transient, parts.transient);
  }
  return total;
}

namespace {

// b never exceeds a, whatever the terms (all of them are >= 0); nor b's temporaries a's when b
// holds none.
bool dominates(const MemoryState& a, const MemoryState& b) {
  return (a.transient == b.transient || b.transient == MemoryState::Transient::kNone) &&
         (a.received || !b.received) && (a.recomputes || !b.recomputes) && a.kept >= b.kept &&
         a.pending >= b.pending && a.sent >= b.sent && a.posted_input >= b.posted_input &&
         a.posted_gradient >= b.posted_gradient && (a.gradients || !b.gradients);
}

}  // namespace

std::vector<std::vector<MemoryState>> rankPeakCandidates(const std::vector<std::vector<MemoryState>>& states) {
  const auto dominatesRow = [](const std::vector<MemoryState>& a, const std::vector<MemoryState>& b) {
    for (std::size_t c = 0; c < a.size(); ++c) {
      if (!dominates(a[c], b[c])) return false;
    }
    return true;
  };
  std::vector<std::vector<MemoryState>> front;
  for (const std::vector<MemoryState>& row : states) {
    bool dominated = false;
    for (const std::vector<MemoryState>& kept : front) dominated = dominated || dominatesRow(kept, row);
    if (dominated) continue;
    front.erase(std::remove_if(front.begin(), front.end(),
                               [&](const std::vector<MemoryState>& kept) { return dominatesRow(row, kept); }),
                front.end());
    front.push_back(row);
  }
  return front;
}

std::vector<MemoryState> peakCandidates(const std::vector<MemoryState>& states) {
  std::vector<MemoryState> sorted = states;
  std::sort(sorted.begin(), sorted.end(), [](const MemoryState& a, const MemoryState& b) {
    if (a.kept != b.kept) return a.kept > b.kept;
    if (a.pending != b.pending) return a.pending > b.pending;
    if (a.sent != b.sent) return a.sent > b.sent;
    if (a.posted_input != b.posted_input) return a.posted_input > b.posted_input;
    if (a.posted_gradient != b.posted_gradient) return a.posted_gradient > b.posted_gradient;
    return a.gradients && !b.gradients;
  });
  // A state is dominated only by one sorted before it; the front stays small (a handful per kind).
  std::vector<MemoryState> front;
  for (const MemoryState& state : sorted) {
    bool dominated = false;
    for (const MemoryState& kept : front) dominated = dominated || dominates(kept, state);
    if (!dominated) front.push_back(state);
  }
  return front;
}

}  // namespace stagecut
