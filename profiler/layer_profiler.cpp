#include "profiler/layer_profiler.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <map>
#include <set>

#include "core/error.h"
#include "core/sample_stats.h"
#include "profiler/kept_layers_guard.h"
#include "profiler/layer_memory.h"
#include "profiler/memory_counter.h"
#include "profiler/torch_runtime.h"
#include "profiler/weight_gradient_split.h"
#include "profiler/whole_model_window.h"

namespace stagecut {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// One layer's fixed setting: its input (the previous layer's output, detached) and the upstream
// gradient its backward receives (1 for a scalar loss, else a seeded random tensor).
struct LayerBench {
  torch::Tensor input;
  torch::Tensor upstream_grad;
  bool input_has_grad = false;
  std::vector<std::int64_t> output_shape;
  std::uint64_t output_bytes = 0;
};

// Whether a timed unit (a layer or the whole model) needs more samples.
bool isActive(const UnitSampleLog& samples, const MeasureOptions& options) {
  const int repeats = static_cast<int>(samples.forward.size());
  if (repeats < options.min_repeats) return true;
  if (repeats >= options.max_repeats || samples.spent_s >= options.budget_s_per_layer) return false;
  return summarizeSamples(samples.forward).cv > options.cv_target ||
         summarizeSamples(samples.backward).cv > options.cv_target;
}

void checkStop(const MeasureOptions& options, const SizeCheckpoint& progress) {
  if (!options.stop_signal) return;
  const int signal_number = options.stop_signal();
  if (signal_number != 0) {
    throw Error::interrupted("at microbatch size " + std::to_string(progress.microbatch_size), signal_number);
  }
}

UnitSampleLog pooledSamples(const std::vector<UnitSampleLog>& logs, const std::vector<int>& sample) {
  UnitSampleLog pooled;
  for (int from : sample) {
    const UnitSampleLog& log = logs[static_cast<std::size_t>(from)];
    const auto append = [](std::vector<double>& into, const std::vector<double>& more) {
      into.insert(into.end(), more.begin(), more.end());
    };
    append(pooled.forward, log.forward);
    append(pooled.backward, log.backward);
    append(pooled.backward_input, log.backward_input);
    append(pooled.backward_weight, log.backward_weight);
    append(pooled.recompute, log.recompute);
  }
  return pooled;
}

TimeStatsMs statsOf(const std::vector<double>& samples) {
  TimeStatsMs stats = summarizeSamples(samples);
  stats.repeats = static_cast<int>(samples.size());
  return stats;
}

// A round's input: a fresh leaf, as a stage's input would be.
torch::Tensor freshInput(const LayerBench& bench) {
  auto input = bench.input.detach();
  if (bench.input_has_grad) input = input.requires_grad_(true);
  return input;
}

// Runs the chain once, building each layer that is not built and releasing it after unless
// `keep_built` says so: one layer at a time, every layer's input as in the whole model. The
// layers `measures` flags run their forward and backward counted on the way (`memories`); the
// others only pass their output on. A copy of an identical layer that is neither kept nor
// measured is not even built: it hands its input on as its output, which has that shape (the
// layer after a copy is one like it), and the values a layer runs on do not move its time or
// memory. Built and run, llama3-70b's 77 copies were two thirds of the profile's time.
std::vector<LayerBench> prepareInputs(LayerChain& chain, const ChainBatch& batch, std::uint64_t seed,
                                      const std::vector<bool>& keep_built, const std::vector<bool>& measures,
                                      std::vector<LayerMemoryBytes>& memories) {
  std::vector<LayerBench> benches;
  memories.assign(chain.layers.size(), {});
  auto generator = at::make_generator<at::CPUGeneratorImpl>(seed + 1);
  torch::Tensor activation = batch.input;
  KeptLayersGuard guard(!batch.input.is_cuda());
  for (std::size_t i = 0; i < chain.layers.size(); ++i) {
    const bool was_built = chain.layers[i].built();
    const bool passes_input_on = !keep_built[i] && !measures[i] && !chain.layers[i].signature.empty();
    if (!passes_input_on && !was_built) guard.beforeBuilding(chain, i);
    if (!passes_input_on) namingLayerOnError(chain, static_cast<int>(i), [&] { buildLayer(chain, i); });
    const ChainLayer& layer = chain.layers[i];
    LayerBench bench;
    bench.input = activation.detach();
    bench.input_has_grad = activation.is_floating_point();
    CountedForward counted;
    namingLayerOnError(chain, static_cast<int>(i), [&] {
      if (passes_input_on) {
        counted.output = bench.input;
      } else if (measures[i]) {
        counted = countedForward(layer, activation, batch.target);
      } else {
        torch::NoGradGuard no_grad;
        counted.output = layer.forward(layerInput(layer, bench.input), batch.target);
      }
    });
    const torch::Tensor& output = counted.output;
    bench.output_shape = output.sizes().vec();
    bench.output_bytes = tensorBytes(output);
    bench.upstream_grad = output.numel() == 1
                              ? torch::ones_like(output)
                              // Drawn on the CPU generator, then moved: the same upstream
                              // gradient on every device, and no CUDA generator needed.
                              : torch::randn(output.sizes(), generator, output.options().device(torch::kCPU))
                                    .to(output.device());
    if (measures[i]) {
      memories[i] = namingLayerOnError(chain, static_cast<int>(i), [&] {
        return measureForwardBackwardMemory(layer, counted, bench.upstream_grad);
      });
    }
    benches.push_back(bench);
    activation = output.detach();
    if (!was_built && !keep_built[i] && !passes_input_on) releaseLayer(chain, i);
    if (!was_built && keep_built[i]) guard.kept(layer, memories[i].gradients);
  }
  return benches;
}

// The B/W split of one layer's graph, kept after its whole backward (the split's hooks would
// otherwise sit on the graph that backward runs): B finds where W will start and computes the
// input's gradient, W then runs from there and adds into the weights' .grad, as every
// microbatch after a step's first does. Timed alone instead, the weights' gradient re-runs the
// layer's backward and B + W misses what the split itself costs (docs/profiler.md).
// Where `weight_pending` is given and not yet known, B's memory is counted on the way (an
// atomic addition per allocation: nothing the timer sees).
void timeWeightGradientSplit(const ChainLayer& layer, const torch::Tensor& output, const torch::Tensor& input,
                             const torch::Tensor& upstream_grad, RegionTimer& timer, UnitSampleLog& samples,
                             std::optional<std::uint64_t>* weight_pending) {
  const std::vector<torch::Tensor> targets = {input};
  std::optional<MemoryCounter> counter;
  if (weight_pending != nullptr && !weight_pending->has_value()) counter.emplace(output.device().type());
  timer.start();
  WeightGradientSplit split(output, targets, layer.parameters);
  const std::vector<torch::Tensor> input_grads =
      torch::autograd::grad({output}, targets, {upstream_grad}, true, false, true);
  const double input_ms = timer.stopMs();
  if (counter) {
    *weight_pending = pendingForWeights(*counter, input_grads);
    counter.reset();
  }
  samples.backward_input.push_back(input_ms);
  timer.start();
  split.runWeightBackward(upstream_grad, input_grads);
  samples.backward_weight.push_back(timer.stopMs());
}

// A backward with nothing to split: a layer without weights is all B, and one whose input takes
// no gradient (an embedding's token ids) all W, its whole backward. Split, such a W re-made the
// embedding's gradient table where the heap had to grow each time, 20 times its backward on the
// CPU, while a stage's W of that layer is the backward it runs anyway.
void recordUnsplitBackward(UnitSampleLog& samples, double backward_ms, bool has_weights) {
  samples.backward_input.push_back(has_weights ? 0.0 : backward_ms);
  samples.backward_weight.push_back(has_weights ? backward_ms : 0.0);
}

// Times F, B, W and the whole backward of one layer alone, on one graph (retained between the
// three backward passes), so each round costs one forward instead of four. For a timed layer
// outside the whole-model window; the window's layers are timed inside the chain.
void timeLayer(const ChainLayer& layer, const LayerBench& bench, const torch::Tensor& target,
               bool recompute, RegionTimer& timer, UnitSampleLog& samples,
               std::optional<std::uint64_t>* weight_pending) {
  const auto started = Clock::now();
  const torch::Tensor input = freshInput(bench);
  if (recompute) {
    // Checkpointing's first forward: no graph is kept, so its cost is apart from the one below.
    torch::NoGradGuard no_grad;
    const torch::Tensor given = layerInput(layer, input);
    timer.start();
    layer.forward(given, target);
    samples.recompute.push_back(timer.stopMs());
  }
  const torch::Tensor given = layerInput(layer, input);
  timer.start();
  const torch::Tensor output = layer.forward(given, target);
  samples.forward.push_back(timer.stopMs());

  const bool has_weights = !layer.parameters.empty();
  // The whole backward first, as the executor runs it: adding into the weights' .grad, there
  // from the second round on as from a step's second microbatch on.
  double backward_ms = 0.0;
  if (has_weights || bench.input_has_grad) {
    timer.start();
    torch::autograd::backward({output}, {bench.upstream_grad}, /*retain_graph=*/true);
    backward_ms = timer.stopMs();
  }
  samples.backward.push_back(backward_ms);
  if (has_weights && input.requires_grad()) {
    timeWeightGradientSplit(layer, output, input, bench.upstream_grad, timer, samples, weight_pending);
  } else {
    recordUnsplitBackward(samples, backward_ms, has_weights);
  }
  samples.spent_s += secondsSince(started);
}

// What one pass over the whole-model window times, beyond the whole model and each layer's
// in-chain forward and backward.
struct ChainPass {
  std::pair<int, int> window;  ///< {first, last} layer
  /// Layers whose samples the pass takes (the timed ones): F, the whole backward, and B and W
  /// split off a kept graph right after that backward. A copy of an identical layer is run and
  /// timed in the chain but takes its sample's figures.
  std::vector<bool> records;
  bool recompute = false;
  std::function<void(int)> before_layer;  ///< progress, called before each layer's forward
  /// Per layer, what its B keeps for W, counted at its first split where the layer's memory is
  /// measured (absent elsewhere).
  std::vector<std::optional<std::uint64_t>>* weight_pending = nullptr;
};

// The whole model's forward and backward, timed layer by layer as a pipeline stage runs its
// layers: each forward right after its predecessor's (on its output, detached, as a stage's
// received input), each backward right after its successor's (adding into the weights' .grad).
// What ran just before a layer moves its time (docs/profiler.md, "Inside the pipeline"): the
// layers' figures are taken here, in the order a stage runs them, not from each layer timed
// alone. Over `pass.window` when the whole model does not fit: from the first layer's input,
// back from the last layer's upstream gradient.
void timeWholeModel(const LayerChain& chain, const std::vector<LayerBench>& benches, const ChainBatch& batch,
                    const ChainPass& pass, RegionTimer& timer, UnitSampleLog& whole,
                    std::vector<UnitSampleLog>& in_chain, std::vector<UnitSampleLog>* layer_samples) {
  const auto started = Clock::now();
  const std::size_t first = static_cast<std::size_t>(pass.window.first);
  const std::size_t count = static_cast<std::size_t>(pass.window.second) + 1;
  in_chain.resize(chain.layers.size());
  const auto records = [&](std::size_t i) { return layer_samples != nullptr && pass.records[i]; };
  std::vector<torch::Tensor> leaves(count), outputs(count);
  torch::Tensor activation = benches[first].input;
  const torch::Tensor& upstream = benches[count - 1].upstream_grad;
  double forward_ms = 0.0;
  for (std::size_t i = first; i < count; ++i) {
    if (pass.before_layer) pass.before_layer(static_cast<int>(i));
    const ChainLayer& layer = chain.layers[i];
    const auto layer_started = Clock::now();
    leaves[i] = activation.detach();
    if (leaves[i].is_floating_point()) leaves[i].requires_grad_(true);
    if (pass.recompute && records(i)) {
      // Checkpointing's first forward: no graph is kept, so its cost is apart from the one below.
      torch::NoGradGuard no_grad;
      const torch::Tensor given = layerInput(layer, leaves[i]);
      timer.start();
      layer.forward(given, batch.target);
      (*layer_samples)[i].recompute.push_back(timer.stopMs());
    }
    const torch::Tensor given = layerInput(layer, leaves[i]);
    timer.start();
    outputs[i] = layer.forward(given, batch.target);
    const double ms = timer.stopMs();
    in_chain[i].forward.push_back(ms);
    if (records(i)) {
      (*layer_samples)[i].forward.push_back(ms);
      (*layer_samples)[i].spent_s += secondsSince(layer_started);
    }
    forward_ms += ms;
    activation = outputs[i];
  }
  whole.forward.push_back(forward_ms);
  torch::Tensor gradient = upstream;
  double backward_ms = 0.0;
  for (std::size_t i = count; i-- > first;) {
    const ChainLayer& layer = chain.layers[i];
    const auto layer_started = Clock::now();
    // No gradient reaches a layer whose successor ignores its input; it has no backward to run.
    const bool runs = outputs[i].requires_grad() && gradient.defined();
    const bool splits = records(i) && runs && !layer.parameters.empty() && leaves[i].requires_grad();
    double ms = 0.0;
    if (runs) {
      timer.start();
      torch::autograd::backward({outputs[i]}, {gradient}, /*retain_graph=*/splits);
      ms = timer.stopMs();
    }
    in_chain[i].backward.push_back(ms);
    backward_ms += ms;
    if (records(i)) {
      UnitSampleLog& samples = (*layer_samples)[i];
      samples.backward.push_back(ms);
      if (splits) {
        timeWeightGradientSplit(layer, outputs[i], leaves[i], gradient, timer, samples,
                                pass.weight_pending ? &(*pass.weight_pending)[i] : nullptr);
      } else {
        recordUnsplitBackward(samples, ms, !layer.parameters.empty());
      }
      samples.spent_s += secondsSince(layer_started);
    }
    gradient = leaves[i].requires_grad() ? leaves[i].grad() : torch::Tensor();
    // The split's kept graph goes with the layer's output, as a stage frees it after W.
    outputs[i] = torch::Tensor();
  }
  whole.backward.push_back(backward_ms);
  whole.spent_s += secondsSince(started);
}

// A stage's weights hold their gradient buffers from a step's first microbatch on, as Megatron's
// main_grad buffers are allocated once: the passes time that steady state. Left to the first
// pass, the buffers' first touch (page faults, about 7 us a page on this project's VM) doubled a
// block's W and backward in that pass, and with two rounds their median (docs/profiler.md).
void holdGradientBuffers(const ChainLayer& layer) {
  for (const auto& parameter : layer.parameters) {
    if (parameter.requires_grad() && !parameter.grad().defined()) parameter.mutable_grad() = torch::zeros_like(parameter);
  }
}

std::uint64_t parameterCount(const ChainLayer& layer) {
  std::uint64_t count = 0;
  for (const auto& parameter : layer.parameters) count += static_cast<std::uint64_t>(parameter.numel());
  return count;
}

std::uint64_t parameterBytes(const ChainLayer& layer) {
  std::uint64_t bytes = 0;
  for (const auto& parameter : layer.parameters) bytes += tensorBytes(parameter);
  return bytes;
}

}  // namespace

std::vector<std::vector<int>> identicalLayerSamples(const LayerChain& chain, bool time_every_layer) {
  std::vector<std::vector<int>> times_from(chain.layers.size());
  if (time_every_layer) return times_from;
  std::map<std::string, std::vector<int>> groups;
  for (std::size_t i = 0; i < chain.layers.size(); ++i) {
    if (!chain.layers[i].signature.empty()) groups[chain.layers[i].signature].push_back(static_cast<int>(i));
  }
  for (const auto& [signature, members] : groups) {
    // With 3 or fewer, the sample would be all of them.
    if (members.size() < 4) continue;
    // First, middle and last in chain order: each is timed after the layers before it, warm as
    // in a stage, and a drift along the chain (caches, clocks) shows as their spread.
    const std::vector<int> sample = {members.front(), members[members.size() / 2], members.back()};
    for (int member : members) {
      if (std::find(sample.begin(), sample.end(), member) == sample.end()) {
        times_from[static_cast<std::size_t>(member)] = sample;
      }
    }
  }
  return times_from;
}

namespace {

// One microbatch size's measurement of a chain, phase by phase: the plan of which layers are
// timed and measured, one sweep for every layer's input and memory, the warm-up, the timed rounds
// (timed again where the machine's pace moved), and the profile they make.
class ChainMeasurement {
 public:
  ChainMeasurement(LayerChain& chain, const MeasureOptions& options, RegionTimer& timer);
  /// Untimed passes of the whole model.
  void warmUp();
  /// Rounds until every unit has its samples, a pass of them again for rounds the pace moved.
  void timeRounds();
  /// Hands the chain back as it came and returns the profile.
  Profile finish();

 private:
  void planSamples();
  void describeLayers();
  void resumeSamples();
  void prepareWindow();
  void reportProgress(int round, bool warmup, int layer, const std::string& name) const;
  void tagWhole(int at_round);
  void noteProgress() const;
  bool timeRound();
  bool inWindow(int i) const { return i >= window_.first && i <= window_.second; }
  void completeWeightPending();
  void summarizeTimes();
  void recordRun();

  LayerChain& chain_;
  const MeasureOptions& options_;
  RegionTimer& timer_;
  const Clock::time_point started_ = Clock::now();
  const int layer_count_;
  const ChainBatch batch_;
  int warmup_passes_ = 0;
  // Of each layer: the sample its times come from (empty: timed), whether it was built here,
  // whether it is timed, the layer its memory is measured on, and whether that is itself.
  std::vector<std::vector<int>> times_from_;
  std::vector<bool> built_here_, timed_, measures_;
  std::vector<int> memory_from_;
  std::vector<LayerMemoryBytes> memories_;
  std::vector<LayerBench> benches_;
  std::vector<std::optional<std::uint64_t>> weight_pending_;
  Profile profile_;
  SizeCheckpoint samples_;
  std::pair<int, int> window_;
  // The estimate scales from the timed rounds only: the warm-up and the setup before are not rounds.
  Clock::time_point first_round_started_;
  double setup_s_ = 0.0;
  int passes_run_ = 0;
  ChainPass chain_pass_;
  int round_ = 0;
  double round_seconds_ = 0.0;
  RoundPace pace_;
  SampleRounds rounds_;
};

ChainMeasurement::ChainMeasurement(LayerChain& chain, const MeasureOptions& options, RegionTimer& timer)
    : chain_(chain),
      options_(options),
      timer_(timer),
      layer_count_(static_cast<int>(chain.layers.size())),
      batch_(chain.make_batch(options.microbatch_size, options.seed)),
      pace_(options.pace) {
  warmup_passes_ =
      options.warmup_rounds != kAutoWarmupPasses ? options.warmup_rounds : (batch_.input.is_cuda() ? 1 : 0);
  planSamples();
  benches_ = prepareInputs(chain_, batch_, options_.seed, timed_, measures_, memories_);
  weight_pending_.resize(static_cast<std::size_t>(layer_count_));
  for (int i = 0; i < layer_count_; ++i) {
    if (!measures_[i]) weight_pending_[i] = 0;  // taken from the group's measured layer
  }
  describeLayers();
  resumeSamples();
  prepareWindow();
  // What a profile costs: the sweep that gives the inputs and memory, then whole-model passes.
  first_round_started_ = Clock::now();
  setup_s_ = secondsSince(started_);
  chain_pass_.window = window_;
  chain_pass_.recompute = options_.recompute;
  chain_pass_.weight_pending = &weight_pending_;
  for (int i = 0; i < layer_count_; ++i) chain_pass_.records.push_back(times_from_[i].empty());
}

void ChainMeasurement::planSamples() {
  times_from_ = identicalLayerSamples(chain_, options_.time_every_layer);
  const auto count = static_cast<std::size_t>(layer_count_);
  // Described layers are built when needed: the timed ones stay built, a copy of an identical
  // layer only passes its output on, and the window of the whole-model check is built for it.
  built_here_.resize(count);
  timed_.resize(count);
  memory_from_.resize(count);
  measures_.resize(count);
  for (int i = 0; i < layer_count_; ++i) built_here_[i] = !chain_.layers[i].built();
  for (int i = 0; i < layer_count_; ++i) timed_[i] = times_from_[i].empty();
  // Memory is a matter of shapes: it is measured on one layer of each group of identical ones.
  for (int i = 0; i < layer_count_; ++i) memory_from_[i] = times_from_[i].empty() ? i : times_from_[i].front();
  for (int i = 0; i < layer_count_; ++i) {
    for (int sample : times_from_[i]) memory_from_[static_cast<std::size_t>(sample)] = times_from_[i].front();
  }
  for (int i = 0; i < layer_count_; ++i) measures_[i] = memory_from_[i] == i;
}

// Each layer's figures that do not take a timing: its parameters, memory, output and collectives.
void ChainMeasurement::describeLayers() {
  profile_.model.name = chain_.model_name;
  profile_.model.source = chain_.source;
  profile_.model.config = chain_.config;
  profile_.model.fingerprint = chain_.fingerprint;
  for (int i = 0; i < layer_count_; ++i) {
    const ChainLayer& layer = chain_.layers[i];
    LayerCost cost;
    cost.index = i;
    cost.name = layer.name;
    cost.kind = layer.kind;
    // Memory is a matter of shapes: an identical layer's, timed or not, is its group's first one's.
    const int measured_on = memory_from_[static_cast<std::size_t>(i)];
    const LayerCost* first = measured_on < i ? &profile_.layers[static_cast<std::size_t>(measured_on)] : nullptr;
    cost.params = first ? first->params : parameterCount(layer);
    cost.param_bytes = first ? first->param_bytes : parameterBytes(layer);
    cost.output_bytes = benches_[i].output_bytes;
    cost.output_shape = benches_[i].output_shape;
    const LayerMemoryBytes& memory = memories_[static_cast<std::size_t>(measured_on)];
    cost.activation_bytes = memory.activation;
    cost.input_kept_bytes = memory.input_kept;
    cost.forward_transient_bytes = memory.forward_transient;
    cost.backward_transient_bytes = memory.backward_transient;
    cost.gradient_bytes = memory.gradients;
    cost.largest_parameter_bytes = memory.largest_parameter;
    const TensorParallelComm& comm = layer.tensor_parallel_comm;
    if (comm.forward_collectives + comm.backward_collectives > 0) {
      const std::uint64_t element =
          comm.float32 ? 4 : static_cast<std::uint64_t>(c10::elementSize(chainFloatingType(chain_)));
      cost.tp_collectives = LayerCost::TensorParallelCollectives{
          comm.forward_collectives, comm.backward_collectives,
          static_cast<std::uint64_t>(comm.elements_per_row) * static_cast<std::uint64_t>(options_.microbatch_size) *
              element};
    }
    profile_.layers.push_back(cost);
  }
}

void ChainMeasurement::resumeSamples() {
  samples_.microbatch_size = options_.microbatch_size;
  samples_.layers.resize(static_cast<std::size_t>(layer_count_));
  if (options_.resume == nullptr || options_.resume->layers.empty()) return;
  if (options_.resume->layers.size() != samples_.layers.size()) {
    throw Error("--resume: the kept samples at microbatch size " + std::to_string(options_.microbatch_size) +
                " are for " + std::to_string(options_.resume->layers.size()) + " layers but the model has " +
                std::to_string(layer_count_) + "; delete the .resume.json file and profile again");
  }
  samples_ = *options_.resume;
}

// The whole-model check's window, built, and the memory its passes take held from the start.
void ChainMeasurement::prepareWindow() {
  window_ = wholeModelWindow(profile_.layers, options_.window_bytes ? options_.window_bytes() : 0);
  for (int i = window_.first; i <= window_.second; ++i) {
    namingLayerOnError(chain_, i, [&] { buildLayer(chain_, static_cast<std::size_t>(i)); });
  }
  for (int i = 0; i < layer_count_; ++i) {
    if (chain_.layers[i].built() && (timed_[i] || inWindow(i))) holdGradientBuffers(chain_.layers[i]);
  }
  if (!batch_.input.is_cuda()) growRetainedHeap(windowPassBytes(profile_.layers, window_));
}

void ChainMeasurement::reportProgress(int round, bool warmup, int layer, const std::string& name) const {
  if (!options_.on_progress) return;
  MeasureProgress progress;
  progress.round = round;
  progress.warmup = warmup;
  progress.rounds_at_least = options_.min_repeats;
  progress.layer = layer;
  progress.layers = layer_count_;
  progress.layer_name = name;
  progress.elapsed_s = secondsSince(started_);
  const double done = round + static_cast<double>(layer) / layer_count_;
  // Before the first layer of the first round has been timed there is nothing to scale from.
  if (!warmup && (round_seconds_ > 0 || done > 0)) {
    const double per_round = round_seconds_ > 0 ? round_seconds_ : secondsSince(first_round_started_) / done;
    progress.estimated_left_s = std::max(0.0, (options_.min_repeats - done) * per_round);
  }
  progress.microbatch_size = options_.microbatch_size;
  options_.on_progress(progress);
}

// A warm-up is one untimed pass of the whole model: it runs every layer's kernels and grows the
// heap to the model's peak, so that a layer's first timed sample is no colder than its later
// ones, at a third of the cost of warming each layer's F, B, W and backward apart.
void ChainMeasurement::warmUp() {
  for (int pass = 0; pass < warmup_passes_ && !samples_.complete; ++pass) {
    checkStop(options_, samples_);
    reportProgress(0, true, 0, "whole model");
    UnitSampleLog scratch;
    std::vector<UnitSampleLog> scratch_layers;
    namingLayerOnError(chain_, -1, [&] {
      timeWholeModel(chain_, benches_, batch_, chain_pass_, timer_, scratch, scratch_layers, nullptr);
    });
    ++passes_run_;
  }
}

// A pass's samples: the whole model's, every layer's in the chain, and the window's layers'.
void ChainMeasurement::tagWhole(int at_round) {
  tagNewSamples(samples_.whole, rounds_.whole, at_round);
  rounds_.in_chain.resize(samples_.in_chain.size());
  for (std::size_t i = 0; i < samples_.in_chain.size(); ++i) {
    tagNewSamples(samples_.in_chain[i], rounds_.in_chain[i], at_round);
  }
  for (int i = window_.first; i <= window_.second; ++i) tagNewSamples(samples_.layers[i], rounds_.layers[i], at_round);
}

void ChainMeasurement::noteProgress() const {
  if (options_.on_checkpoint) options_.on_checkpoint(samples_);
}

// One round: the whole model's pass while it needs samples, then each timed layer outside the
// window that does. Returns whether any unit took a sample.
bool ChainMeasurement::timeRound() {
  bool any_active = false;
  if (isActive(samples_.whole, options_)) {
    checkStop(options_, samples_);
    namingLayerOnError(chain_, -1, [&] {
      timeWholeModel(chain_, benches_, batch_, chain_pass_, timer_, samples_.whole, samples_.in_chain,
                     &samples_.layers);
    });
    ++passes_run_;
    tagWhole(round_);
    noteProgress();
    any_active = true;
  }
  for (int i = 0; i < layer_count_; ++i) {
    // The window's layers were timed in the pass, as long as the whole model is.
    if (!times_from_[i].empty() || inWindow(i) || !isActive(samples_.layers[i], options_)) continue;
    any_active = true;
    checkStop(options_, samples_);
    reportProgress(round_, false, i, chain_.layers[i].name);
    namingLayerOnError(chain_, i, [&] {
      timeLayer(chain_.layers[i], benches_[i], batch_.target, options_.recompute, timer_, samples_.layers[i],
                &weight_pending_[i]);
    });
    tagNewSamples(samples_.layers[i], rounds_.layers[i], round_);
    noteProgress();
  }
  return any_active;
}

void ChainMeasurement::timeRounds() {
  first_round_started_ = Clock::now();
  rounds_.layers.assign(static_cast<std::size_t>(layer_count_), {});
  rounds_.in_chain.assign(samples_.in_chain.size(), {});
  // Resumed samples are round -1: their pace is unknown, and they stay.
  tagWhole(-1);
  for (int i = 0; i < layer_count_; ++i) tagNewSamples(samples_.layers[i], rounds_.layers[i], -1);
  // A stop inside a pass leaves its half-taken samples behind: the side file holds the passes
  // before it (on_checkpoint), and a long pass need not finish first.
  chain_pass_.before_layer = [this](int layer) {
    checkStop(options_, samples_);
    reportProgress(round_, false, layer, chain_.layers[layer].name);
  };
  for (int pass = 0;; ++pass) {
    const int first_of_pass = round_;
    for (; !samples_.complete; ++round_) {
      pace_.beforeRound(round_);
      const auto round_started = Clock::now();
      const bool any_active = timeRound();
      if (round_ == 0) round_seconds_ = secondsSince(round_started);
      if (!any_active) {
        samples_.complete = true;
        noteProgress();
      }
    }
    if (round_ == first_of_pass) break;
    pace_.afterRounds(round_);
    const std::set<int> odd = pace_.oddRounds();
    if (odd.empty()) break;
    if (options_.pace.strict) {
      throw Error("--strict: " + pace_.oddPhaseText(odd) + "; profile again on a quiet machine, or without --strict "
                  "to time those rounds again", ErrorKind::kRuntime);
    }
    if (pass == options_.pace.retime_passes) {
      pace_.noteKept(odd);
      break;
    }
    // The odd rounds' samples go, and the units they leave short are timed again.
    dropRoundSamples(samples_.whole, rounds_.whole, odd);
    for (std::size_t i = 0; i < samples_.in_chain.size(); ++i) {
      dropRoundSamples(samples_.in_chain[i], rounds_.in_chain[i], odd);
    }
    for (int i = 0; i < layer_count_; ++i) dropRoundSamples(samples_.layers[i], rounds_.layers[i], odd);
    pace_.noteDropped(odd);
    samples_.complete = false;
  }
}

// A measured layer that no round split (all its samples resumed) is counted alone.
void ChainMeasurement::completeWeightPending() {
  for (int i = 0; i < layer_count_; ++i) {
    if (weight_pending_[i]) continue;
    weight_pending_[i] = namingLayerOnError(chain_, i, [&] {
      return measureWeightPending(chain_.layers[i], freshInput(benches_[i]), benches_[i].upstream_grad, batch_.target);
    });
  }
  for (int i = 0; i < layer_count_; ++i) {
    profile_.layers[i].weight_pending_bytes = *weight_pending_[static_cast<std::size_t>(memory_from_[i])];
  }
}

// Each layer's times and the whole model's, from their samples.
void ChainMeasurement::summarizeTimes() {
  for (int i = 0; i < layer_count_; ++i) {
    LayerCost& cost = profile_.layers[i];
    // A copy takes its sample's samples, pooled: their median, and their spread as its own.
    const UnitSampleLog log =
        times_from_[i].empty() ? samples_.layers[i] : pooledSamples(samples_.layers, times_from_[i]);
    cost.forward_ms = statsOf(log.forward);
    cost.backward_ms = statsOf(log.backward);
    cost.backward_input_ms = statsOf(log.backward_input);
    cost.backward_weight_ms = statsOf(log.backward_weight);
    if (!log.recompute.empty()) cost.recompute_ms = statsOf(log.recompute);
    if (!times_from_[i].empty()) cost.times_from = times_from_[i];
  }
  WholeModelCost whole;
  whole.forward_ms = summarizeSamples(samples_.whole.forward).median;
  whole.backward_ms = summarizeSamples(samples_.whole.backward).median;
  double layers_ms = 0;
  for (int i = window_.first; i <= window_.second; ++i) {
    layers_ms += profile_.layers[i].forward_ms.median + profile_.layers[i].backward_ms.median;
  }
  const double whole_ms = whole.forward_ms + whole.backward_ms;
  whole.sum_of_layers_vs_whole = whole_ms > 0 ? (layers_ms - whole_ms) / whole_ms : 0.0;
  const bool whole_chain = window_.first == 0 && window_.second == layer_count_ - 1;
  if (!whole_chain) whole.window = {window_.first, window_.second};
  // A checkpoint written before the pass was timed layer by layer has no such samples.
  if (whole_chain && samples_.in_chain.size() == static_cast<std::size_t>(layer_count_) &&
      !samples_.in_chain.front().forward.empty()) {
    for (const auto& layer : samples_.in_chain) {
      whole.in_chain_forward_ms.push_back(summarizeSamples(layer.forward).median);
      whole.in_chain_backward_ms.push_back(summarizeSamples(layer.backward).median);
    }
  }
  profile_.whole_model = whole;
}

void ChainMeasurement::recordRun() {
  int most_repeats = 0;
  for (int i = 0; i < layer_count_; ++i) {
    if (times_from_[i].empty()) most_repeats = std::max(most_repeats, profile_.layers[i].forward_ms.repeats);
  }
  RunInfo& run = profile_.run;
  run.microbatch_size = options_.microbatch_size;
  run.dtype = precisionNameOf(chainFloatingType(chain_));
  run.warmup = warmup_passes_;
  run.repeats = most_repeats;
  run.timer = timer_.name();
  run.extra = {{"min_repeats", options_.min_repeats},
               {"max_repeats", options_.max_repeats},
               {"cv_target", options_.cv_target},
               {"budget_s_per_layer", options_.budget_s_per_layer},
               {"seed", options_.seed},
               {"whole_model_repeats", static_cast<int>(samples_.whole.forward.size())},
               {"elapsed_s", secondsSince(started_)},
               {"setup_s", setup_s_},
               {"whole_model_passes", passes_run_}};
  if (options_.resume != nullptr && options_.resume->sampleCount() > 0) {
    run.extra["resumed_samples"] = options_.resume->sampleCount();
  }
  if (const nlohmann::json trace = pace_.json(); !trace.is_null()) run.extra["pace"] = trace;
  if (options_.recompute) run.extra["recompute"] = "recompute_ms: forward under no_grad";
  run.extra[kWeightGradientTimingKey] = kWeightGradientTimedAfterInput;
  if (chain_.seq_len > 0) run.seq_len = chain_.seq_len;
}

Profile ChainMeasurement::finish() {
  completeWeightPending();
  // W added into the weights' gradients; the model is handed back as it came.
  for (const auto& layer : chain_.layers) {
    for (const auto& parameter : layer.parameters) parameter.mutable_grad() = torch::Tensor();
  }
  for (int i = 0; i < layer_count_; ++i) {
    if (built_here_[i]) releaseLayer(chain_, static_cast<std::size_t>(i));
  }
  summarizeTimes();
  recordRun();
  return std::move(profile_);
}

}  // namespace

Profile measureLayerChain(LayerChain& chain, const MeasureOptions& options, RegionTimer& timer) {
  ChainMeasurement measurement(chain, options, timer);
  measurement.warmUp();
  measurement.timeRounds();
  return measurement.finish();
}

}  // namespace stagecut
