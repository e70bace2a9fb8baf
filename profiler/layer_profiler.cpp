#include "profiler/layer_profiler.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <map>
#include <set>

#include "core/error.h"
#include "core/sample_stats.h"
#include "profiler/memory_counter.h"
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

std::uint64_t tensorBytes(const torch::Tensor& tensor) {
  return static_cast<std::uint64_t>(tensor.numel()) * tensor.element_size();
}

// A round's input: a fresh leaf, as a stage's input would be.
torch::Tensor freshInput(const LayerBench& bench) {
  auto input = bench.input.detach();
  if (bench.input_has_grad) input = input.requires_grad_(true);
  return input;
}

// What the layer is given: the leaf itself, or a copy of it for a layer that writes into its
// input (made before the timer starts; its backward only passes the gradient on to the leaf).
torch::Tensor layerInput(const ChainLayer& layer, const torch::Tensor& leaf) {
  return layer.modifies_input ? leaf.clone() : leaf;
}

// Runs the chain once, building each layer that is not built and releasing it after unless
// `keep_built` says so: one layer at a time, every layer's input as in the whole model.
std::vector<LayerBench> prepareInputs(LayerChain& chain, const ChainBatch& batch, std::uint64_t seed,
                                      const std::vector<bool>& keep_built) {
  std::vector<LayerBench> benches;
  auto generator = at::make_generator<at::CPUGeneratorImpl>(seed + 1);
  torch::NoGradGuard no_grad;
  torch::Tensor activation = batch.input;
  for (std::size_t i = 0; i < chain.layers.size(); ++i) {
    const bool was_built = chain.layers[i].built();
    namingLayerOnError(chain, static_cast<int>(i), [&] { buildLayer(chain, i); });
    const ChainLayer& layer = chain.layers[i];
    LayerBench bench;
    bench.input = activation.detach();
    bench.input_has_grad = activation.is_floating_point();
    const torch::Tensor output = namingLayerOnError(chain, static_cast<int>(i), [&] {
      return layer.forward(layerInput(layer, activation), batch.target);
    });
    bench.output_shape = output.sizes().vec();
    bench.output_bytes = tensorBytes(output);
    bench.upstream_grad = output.numel() == 1
                              ? torch::ones_like(output)
                              // Drawn on the CPU generator, then moved: the same upstream
                              // gradient on every device, and no CUDA generator needed.
                              : torch::randn(output.sizes(), generator, output.options().device(torch::kCPU))
                                    .to(output.device());
    benches.push_back(bench);
    activation = output;
    if (!was_built && !keep_built[i]) releaseLayer(chain, i);
  }
  return benches;
}

// Times F, B, W and the whole backward of one layer on one graph (retained between the three
// backward passes), so each round costs one forward instead of four.
void timeLayer(const ChainLayer& layer, const LayerBench& bench, const torch::Tensor& target,
               bool recompute, RegionTimer& timer, UnitSampleLog& samples) {
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
  // The whole backward first (the split below leaves its hooks on the graph's operations), as
  // the executor runs it: adding into the weights' .grad, there from the second round on as
  // from a step's second microbatch on.
  double backward_ms = 0.0;
  if (has_weights || bench.input_has_grad) {
    timer.start();
    torch::autograd::backward({output}, {bench.upstream_grad}, /*retain_graph=*/true);
    backward_ms = timer.stopMs();
  }
  samples.backward.push_back(backward_ms);
  if (has_weights) {
    // B and W as a zero-bubble stage runs them (StageExecutor): B finds where W will start and
    // computes the input's gradient, W then runs from there and adds into the weights' .grad, as
    // every microbatch after a step's first does (for an embedding's large table, that addition
    // is a visible part of its W). Timed alone instead, the weights' gradient re-runs the layer's
    // backward and B + W misses what the split itself costs (docs/profiler.md).
    std::vector<torch::Tensor> targets;
    if (bench.input_has_grad) targets.push_back(input);
    timer.start();
    WeightGradientSplit split(output, targets, layer.parameters);
    std::vector<torch::Tensor> input_grads;
    if (!targets.empty()) {
      input_grads = torch::autograd::grad({output}, targets, {bench.upstream_grad}, true, false, true);
    }
    const double input_ms = timer.stopMs();
    samples.backward_input.push_back(targets.empty() ? 0.0 : input_ms);
    timer.start();
    split.runWeightBackward(bench.upstream_grad, input_grads);
    samples.backward_weight.push_back(timer.stopMs());
  } else {
    samples.backward_input.push_back(backward_ms);
    samples.backward_weight.push_back(0.0);
  }
  samples.spent_s += secondsSince(started);
}

// The whole model's forward and backward, timed layer by layer as a pipeline stage runs its
// layers: each forward right after its predecessor's (on its output, detached, as a stage's
// received input), each backward right after its successor's (adding into the weights' .grad).
// What ran just before a layer moves its time (docs/profiler.md, "Inside the pipeline"), and the
// layer rounds time it after another layer's backward instead.
// Over `window` ({first, last}) when the whole model does not fit: from the first layer's input,
// back from the last layer's upstream gradient.
void timeWholeModel(const LayerChain& chain, const std::vector<LayerBench>& benches, const ChainBatch& batch,
                    std::pair<int, int> window, RegionTimer& timer, UnitSampleLog& whole,
                    std::vector<UnitSampleLog>& in_chain) {
  const auto started = Clock::now();
  const std::size_t first = static_cast<std::size_t>(window.first);
  const std::size_t count = static_cast<std::size_t>(window.second) + 1;
  in_chain.resize(chain.layers.size());
  std::vector<torch::Tensor> leaves(count), outputs(count);
  torch::Tensor activation = benches[first].input;
  const torch::Tensor& upstream = benches[count - 1].upstream_grad;
  double forward_ms = 0.0;
  for (std::size_t i = first; i < count; ++i) {
    leaves[i] = activation.detach();
    if (leaves[i].is_floating_point()) leaves[i].requires_grad_(true);
    const torch::Tensor given = layerInput(chain.layers[i], leaves[i]);
    timer.start();
    outputs[i] = chain.layers[i].forward(given, batch.target);
    const double ms = timer.stopMs();
    in_chain[i].forward.push_back(ms);
    forward_ms += ms;
    activation = outputs[i];
  }
  whole.forward.push_back(forward_ms);
  torch::Tensor gradient = upstream;
  double backward_ms = 0.0;
  for (std::size_t i = count; i-- > first;) {
    double ms = 0.0;
    // No gradient reaches a layer whose successor ignores its input; it has no backward to run.
    if (outputs[i].requires_grad() && gradient.defined()) {
      timer.start();
      torch::autograd::backward({outputs[i]}, {gradient});
      ms = timer.stopMs();
    }
    in_chain[i].backward.push_back(ms);
    backward_ms += ms;
    gradient = leaves[i].requires_grad() ? leaves[i].grad() : torch::Tensor();
  }
  whole.backward.push_back(backward_ms);
  whole.spent_s += secondsSince(started);
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

std::uint64_t measureActivationBytes(const ChainLayer& layer, const torch::Tensor& input,
                                     const torch::Tensor& target) {
  MemoryCounter counter(input.device().type());
  torch::Tensor output;
  {
    // The layer gets its own copy of the input: if it saves it for the backward the copy stays
    // alive and is counted, otherwise it is freed when this scope ends. The copy is made by a
    // clone of a leaf, as a stage's input would be an intermediate: a leaf that requires grad
    // would be held by its AccumulateGrad node whether the layer saves it or not.
    torch::Tensor leaf = input.detach();
    if (leaf.is_floating_point()) leaf.requires_grad_(true);
    torch::Tensor copy = leaf.clone();
    output = layer.forward(copy, target);
  }
  const std::int64_t kept = counter.liveBytes() - static_cast<std::int64_t>(tensorBytes(output));
  return kept > 0 ? static_cast<std::uint64_t>(kept) : 0;
}

namespace {

std::uint64_t positivePart(std::int64_t bytes) { return bytes > 0 ? static_cast<std::uint64_t>(bytes) : 0; }

// The input as a stage holds it: an intermediate (a clone of a leaf that requires grad), allocated
// before the layer runs, so that the counters below see only what the layer adds.
std::pair<torch::Tensor, torch::Tensor> stageInput(const torch::Tensor& input) {
  torch::Tensor leaf = input.detach().clone();
  if (leaf.is_floating_point()) leaf.requires_grad_(true);
  return {leaf, leaf.is_floating_point() ? leaf.clone() : leaf};
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

LayerMemoryBytes measureLayerMemory(const ChainLayer& layer, const torch::Tensor& input,
                                    const torch::Tensor& upstream_grad, const torch::Tensor& target) {
  LayerMemoryBytes bytes;
  bytes.activation = measureActivationBytes(layer, input, target);
  for (const auto& parameter : layer.parameters) {
    bytes.largest_parameter = std::max(bytes.largest_parameter, tensorBytes(parameter));
    // The accumulating case: a gradient is there, the backward's new one is a temporary.
    if (parameter.requires_grad() && !parameter.grad().defined()) parameter.mutable_grad() = torch::zeros_like(parameter);
  }
  {
    auto [leaf, given] = stageInput(input);
    torch::Tensor output;
    std::int64_t after_forward = 0;
    {
      MemoryCounter counter(given.device().type());
      output = layer.forward(layerInput(layer, given), target);
      after_forward = counter.liveBytes();
      bytes.forward_transient = positivePart(counter.peakBytes() - after_forward);
    }
    const std::int64_t kept_beyond_input = after_forward - static_cast<std::int64_t>(tensorBytes(output));
    bytes.input_kept = std::min(positivePart(static_cast<std::int64_t>(bytes.activation) - kept_beyond_input),
                                tensorBytes(given));
    if (output.requires_grad()) {
      MemoryCounter counter(output.device().type());
      torch::autograd::backward({output}, {upstream_grad});
      bytes.backward_transient = positivePart(counter.peakBytes());
    }
  }
  for (const auto& parameter : layer.parameters) {
    if (parameter.grad().defined()) bytes.gradients += tensorBytes(parameter.grad());
  }
  auto [leaf, given] = stageInput(input);
  const torch::Tensor output = layer.forward(layerInput(layer, given), target);
  if (output.requires_grad() && leaf.requires_grad() && !layer.parameters.empty()) {
    MemoryCounter counter(output.device().type());
    WeightGradientSplit split(output, {leaf}, layer.parameters);
    const auto input_grads = torch::autograd::grad({output}, {leaf}, {upstream_grad}, true, false, true);
    std::int64_t returned = 0;
    for (const auto& grad : input_grads) returned += grad.defined() ? static_cast<std::int64_t>(tensorBytes(grad)) : 0;
    bytes.weight_pending = positivePart(counter.liveBytes() - returned);
  }
  for (const auto& parameter : layer.parameters) parameter.mutable_grad() = torch::Tensor();
  return bytes;
}

Profile measureLayerChain(LayerChain& chain, const MeasureOptions& options, RegionTimer& timer) {
  const auto started = Clock::now();
  const int layer_count = static_cast<int>(chain.layers.size());
  const ChainBatch batch = chain.make_batch(options.microbatch_size, options.seed);
  const std::vector<std::vector<int>> times_from = identicalLayerSamples(chain, options.time_every_layer);
  // Described layers are built when needed: the timed ones stay built, a copy of an identical
  // layer only passes its output on, and the window of the whole-model check is built for it.
  std::vector<bool> built_here(static_cast<std::size_t>(layer_count));
  for (int i = 0; i < layer_count; ++i) built_here[i] = !chain.layers[i].built();
  std::vector<bool> timed(static_cast<std::size_t>(layer_count));
  for (int i = 0; i < layer_count; ++i) timed[i] = times_from[i].empty();
  const std::vector<LayerBench> benches = prepareInputs(chain, batch, options.seed, timed);
  std::vector<LayerMemoryBytes> memories;

  Profile profile;
  profile.model.name = chain.model_name;
  profile.model.source = chain.source;
  profile.model.config = chain.config;
  profile.model.fingerprint = chain.fingerprint;
  for (int i = 0; i < layer_count; ++i) {
    const ChainLayer& layer = chain.layers[i];
    LayerCost cost;
    cost.index = i;
    cost.name = layer.name;
    cost.kind = layer.kind;
    // Memory is a matter of shapes: an identical layer's is its sample's first one's.
    const int measured_on = times_from[i].empty() ? i : times_from[i].front();
    cost.params = measured_on < i ? profile.layers[static_cast<std::size_t>(measured_on)].params : parameterCount(layer);
    cost.param_bytes =
        measured_on < i ? profile.layers[static_cast<std::size_t>(measured_on)].param_bytes : parameterBytes(layer);
    cost.output_bytes = benches[i].output_bytes;
    cost.output_shape = benches[i].output_shape;
    const LayerMemoryBytes memory =
        measured_on < i ? memories[static_cast<std::size_t>(measured_on)] : namingLayerOnError(chain, i, [&] {
          return measureLayerMemory(layer, benches[i].input, benches[i].upstream_grad, batch.target);
        });
    memories.push_back(memory);
    cost.activation_bytes = memory.activation;
    cost.input_kept_bytes = memory.input_kept;
    cost.forward_transient_bytes = memory.forward_transient;
    cost.backward_transient_bytes = memory.backward_transient;
    cost.weight_pending_bytes = memory.weight_pending;
    cost.gradient_bytes = memory.gradients;
    cost.largest_parameter_bytes = memory.largest_parameter;
    const TensorParallelComm& comm = layer.tensor_parallel_comm;
    if (comm.forward_collectives + comm.backward_collectives > 0) {
      const std::uint64_t element = comm.float32 ? 4 : static_cast<std::uint64_t>(c10::elementSize(chainFloatingType(chain)));
      cost.tp_collectives = LayerCost::TensorParallelCollectives{
          comm.forward_collectives, comm.backward_collectives,
          static_cast<std::uint64_t>(comm.elements_per_row) * static_cast<std::uint64_t>(options.microbatch_size) * element};
    }
    profile.layers.push_back(cost);
  }

  SizeCheckpoint samples;
  samples.microbatch_size = options.microbatch_size;
  samples.layers.resize(layer_count);
  if (options.resume != nullptr && !options.resume->layers.empty()) {
    if (options.resume->layers.size() != samples.layers.size()) {
      throw Error("--resume: the kept samples at microbatch size " + std::to_string(options.microbatch_size) +
                  " are for " + std::to_string(options.resume->layers.size()) + " layers but the model has " +
                  std::to_string(layer_count) + "; delete the .resume.json file and profile again");
    }
    samples = *options.resume;
  }
  std::vector<UnitSampleLog>& layer_samples = samples.layers;
  UnitSampleLog& whole_samples = samples.whole;
  const auto note_progress = [&] {
    if (options.on_checkpoint) options.on_checkpoint(samples);
  };
  const std::pair<int, int> window = wholeModelWindow(profile.layers, options.window_bytes ? options.window_bytes() : 0);
  for (int i = window.first; i <= window.second; ++i) {
    namingLayerOnError(chain, i, [&] { buildLayer(chain, static_cast<std::size_t>(i)); });
  }
  // The estimate scales from the timed rounds only: the warm-up and the setup before are not rounds.
  Clock::time_point first_round_started = Clock::now();
  const auto report_progress = [&](int round, bool warmup, int layer, const std::string& name, double round_seconds) {
    if (!options.on_progress) return;
    MeasureProgress progress;
    progress.round = round;
    progress.warmup = warmup;
    progress.rounds_at_least = options.min_repeats;
    progress.layer = layer;
    progress.layers = layer_count;
    progress.layer_name = name;
    progress.elapsed_s = secondsSince(started);
    const double done = round + static_cast<double>(layer) / layer_count;
    // Before the first layer of the first round has been timed there is nothing to scale from.
    if (!warmup && (round_seconds > 0 || done > 0)) {
      const double per_round = round_seconds > 0 ? round_seconds : secondsSince(first_round_started) / done;
      progress.estimated_left_s = std::max(0.0, (options.min_repeats - done) * per_round);
    }
    progress.microbatch_size = options.microbatch_size;
    options.on_progress(progress);
  };
  // A warm-up is one untimed pass of the whole model: it runs every layer's kernels and grows the
  // heap to the model's peak, so that a layer's first timed sample is no colder than its later
  // ones, at a third of the cost of warming each layer's F, B, W and backward apart.
  for (int pass = 0; pass < options.warmup_rounds && !samples.complete; ++pass) {
    checkStop(options, samples);
    report_progress(0, true, 0, "whole model", 0.0);
    UnitSampleLog scratch;
    std::vector<UnitSampleLog> scratch_layers;
    namingLayerOnError(chain, -1, [&] { timeWholeModel(chain, benches, batch, window, timer, scratch, scratch_layers); });
  }
  double round_seconds = 0.0;
  first_round_started = Clock::now();
  RoundPace pace(options.pace);
  SampleRounds rounds;
  rounds.layers.assign(static_cast<std::size_t>(layer_count), {});
  rounds.in_chain.assign(samples.in_chain.size(), {});
  const auto tag_whole = [&](int round) {
    tagNewSamples(whole_samples, rounds.whole, round);
    rounds.in_chain.resize(samples.in_chain.size());
    for (std::size_t i = 0; i < samples.in_chain.size(); ++i) tagNewSamples(samples.in_chain[i], rounds.in_chain[i], round);
  };
  // Resumed samples are round -1: their pace is unknown, and they stay.
  tag_whole(-1);
  for (int i = 0; i < layer_count; ++i) tagNewSamples(layer_samples[i], rounds.layers[i], -1);
  int round = 0;
  for (int pass = 0;; ++pass) {
    const int first_of_pass = round;
    for (; !samples.complete; ++round) {
      pace.beforeRound(round);
      const auto round_started = Clock::now();
      bool any_active = false;
      if (isActive(whole_samples, options)) {
        checkStop(options, samples);
        namingLayerOnError(chain, -1, [&] {
          timeWholeModel(chain, benches, batch, window, timer, whole_samples, samples.in_chain);
        });
        tag_whole(round);
        note_progress();
        any_active = true;
      }
      for (int i = 0; i < layer_count; ++i) {
        if (!times_from[i].empty() || !isActive(layer_samples[i], options)) continue;
        any_active = true;
        checkStop(options, samples);
        report_progress(round, false, i, chain.layers[i].name, round_seconds);
        namingLayerOnError(chain, i, [&] {
          timeLayer(chain.layers[i], benches[i], batch.target, options.recompute, timer, layer_samples[i]);
        });
        tagNewSamples(layer_samples[i], rounds.layers[i], round);
        note_progress();
      }
      if (round == 0) round_seconds = secondsSince(round_started);
      if (!any_active) {
        samples.complete = true;
        note_progress();
      }
    }
    if (round == first_of_pass) break;
    pace.afterRounds(round);
    const std::set<int> odd = pace.oddRounds();
    if (odd.empty()) break;
    if (options.pace.strict) {
      throw Error("--strict: " + pace.oddPhaseText(odd) + "; profile again on a quiet machine, or without --strict "
                  "to time those rounds again", ErrorKind::kRuntime);
    }
    if (pass == options.pace.retime_passes) {
      pace.noteKept(odd);
      break;
    }
    // The odd rounds' samples go, and the units they leave short are timed again.
    dropRoundSamples(whole_samples, rounds.whole, odd);
    for (std::size_t i = 0; i < samples.in_chain.size(); ++i) dropRoundSamples(samples.in_chain[i], rounds.in_chain[i], odd);
    for (int i = 0; i < layer_count; ++i) dropRoundSamples(layer_samples[i], rounds.layers[i], odd);
    pace.noteDropped(odd);
    samples.complete = false;
  }

  // W added into the weights' gradients; the model is handed back as it came.
  for (const auto& layer : chain.layers) {
    for (const auto& parameter : layer.parameters) parameter.mutable_grad() = torch::Tensor();
  }
  for (int i = 0; i < layer_count; ++i) {
    if (built_here[i]) releaseLayer(chain, static_cast<std::size_t>(i));
  }
  int most_repeats = 0;
  for (int i = 0; i < layer_count; ++i) {
    LayerCost& cost = profile.layers[i];
    // A copy takes its sample's samples, pooled: their median, and their spread as its own.
    const UnitSampleLog log = times_from[i].empty() ? layer_samples[i] : pooledSamples(layer_samples, times_from[i]);
    cost.forward_ms = statsOf(log.forward);
    cost.backward_ms = statsOf(log.backward);
    cost.backward_input_ms = statsOf(log.backward_input);
    cost.backward_weight_ms = statsOf(log.backward_weight);
    if (!log.recompute.empty()) cost.recompute_ms = statsOf(log.recompute);
    if (!times_from[i].empty()) cost.times_from = times_from[i];
    else most_repeats = std::max(most_repeats, cost.forward_ms.repeats);
  }
  WholeModelCost whole;
  whole.forward_ms = summarizeSamples(whole_samples.forward).median;
  whole.backward_ms = summarizeSamples(whole_samples.backward).median;
  double layers_ms = 0;
  for (int i = window.first; i <= window.second; ++i) {
    layers_ms += profile.layers[i].forward_ms.median + profile.layers[i].backward_ms.median;
  }
  const double whole_ms = whole.forward_ms + whole.backward_ms;
  whole.sum_of_layers_vs_whole = whole_ms > 0 ? (layers_ms - whole_ms) / whole_ms : 0.0;
  const bool whole_chain = window.first == 0 && window.second == layer_count - 1;
  if (!whole_chain) whole.window = {window.first, window.second};
  // A checkpoint written before the pass was timed layer by layer has no such samples.
  if (whole_chain && samples.in_chain.size() == static_cast<std::size_t>(layer_count) &&
      !samples.in_chain.front().forward.empty()) {
    for (const auto& layer : samples.in_chain) {
      whole.in_chain_forward_ms.push_back(summarizeSamples(layer.forward).median);
      whole.in_chain_backward_ms.push_back(summarizeSamples(layer.backward).median);
    }
  }
  profile.whole_model = whole;

  profile.run.microbatch_size = options.microbatch_size;
  profile.run.dtype = precisionNameOf(chainFloatingType(chain));
  profile.run.warmup = options.warmup_rounds;
  profile.run.repeats = most_repeats;
  profile.run.timer = timer.name();
  profile.run.extra = {{"min_repeats", options.min_repeats},
                       {"max_repeats", options.max_repeats},
                       {"cv_target", options.cv_target},
                       {"budget_s_per_layer", options.budget_s_per_layer},
                       {"seed", options.seed},
                       {"whole_model_repeats", static_cast<int>(whole_samples.forward.size())},
                       {"elapsed_s", secondsSince(started)}};
  if (options.resume != nullptr && options.resume->sampleCount() > 0) {
    profile.run.extra["resumed_samples"] = options.resume->sampleCount();
  }
  if (const nlohmann::json trace = pace.json(); !trace.is_null()) profile.run.extra["pace"] = trace;
  if (options.recompute) profile.run.extra["recompute"] = "recompute_ms: forward under no_grad";
  profile.run.extra[kWeightGradientTimingKey] = kWeightGradientTimedAfterInput;
  if (chain.config.contains("seq")) profile.run.seq_len = chain.config["seq"].get<int>();
  return profile;
}

}  // namespace stagecut
