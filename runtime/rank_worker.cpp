#include "runtime/rank_worker.h"

#include <algorithm>
#include <optional>

#include "core/error.h"
#include "core/host_cpu.h"
#include "core/partition_json.h"
#include "core/profile_json.h"
#include "core/sample_stats.h"
#include "profiler/memory_counter.h"
#include "profiler/reference_kernel.h"
#include "runtime/host_staging_transport.h"
#include "runtime/model_from_profile.h"
#include "runtime/nccl_transport.h"
#include "runtime/rank_device.h"
#include "runtime/stage_optimizer.h"
#include "prediction/pipeline_prediction.h"
#include "schedule/message_order.h"
#include "validation/rank_devices.h"

namespace stagecut {

namespace {

double msSince(const RankClock& clock, std::int64_t start_ns) {
  return static_cast<double>(clock.nowNs() - start_ns) / 1e6;
}

// Tags above any step's (activationTag) keep the link probe's messages apart.
constexpr int kProbeTagBase = 1 << 30;

// Below this a difference of two medians of the steady clock is noise.
constexpr double kClockResolutionMs = 0.01;

// One-way time of a `elements`-float message between this rank and `peer`, by ping-pong.
double oneWayMs(StageTransport& transport, const RankClock& clock, int peer, bool starts, std::int64_t elements,
                int rounds, int tag, const torch::Device& device) {
  const TensorSpec spec{{elements}, torch::kFloat32};
  const torch::Tensor payload = torch::ones(spec.sizes, torch::TensorOptions().device(device));
  std::vector<double> round_trips;
  for (int i = 0; i < rounds; ++i) {
    const std::int64_t start_ns = clock.nowNs();
    if (starts) {
      transport.sendAsync(payload, peer, tag);
      transport.recv(spec, peer, tag + 1, "the link probe's reply");
      round_trips.push_back(msSince(clock, start_ns));
    } else {
      const torch::Tensor echo = transport.recv(spec, peer, tag, "the link probe");
      transport.sendAsync(echo, peer, tag + 1);
    }
    transport.flushSends();
  }
  return starts ? medianOf(round_trips) / 2.0 : 0.0;
}

// Latency from 1-float messages, bandwidth from 4 MiB ones: what the prediction charges for
// each boundary, between tensors on the stages' device as the steps send them. Boundaries are
// probed in chain order so that no rank waits in a cycle.
void probeLinks(StageTransport& transport, const RankClock& clock, const torch::Device& device, RankOutcome& outcome) {
  const int rank = transport.rank();
  const std::int64_t large = 1 << 20;
  if (rank > 0) {
    oneWayMs(transport, clock, rank - 1, false, 1, 20, kProbeTagBase, device);
    oneWayMs(transport, clock, rank - 1, false, large, 5, kProbeTagBase + 2, device);
  }
  if (rank + 1 < transport.worldSize()) {
    const double latency_ms = oneWayMs(transport, clock, rank + 1, true, 1, 20, kProbeTagBase, device);
    const double large_ms = oneWayMs(transport, clock, rank + 1, true, large, 5, kProbeTagBase + 2, device);
    outcome.has_link = true;
    outcome.link_latency_ms = latency_ms;
    // A 4 MiB message no measurably longer than a 1-float one (shared memory on one host):
    // the difference is the clock's noise, and a bandwidth from it would read as PiB/s.
    const double transfer_ms = large_ms - latency_ms;
    outcome.link_bandwidth_measurable = transfer_ms > std::max(kClockResolutionMs, 0.05 * latency_ms);
    outcome.link_bandwidth_bytes_per_s =
        outcome.link_bandwidth_measurable ? 4.0 * large / (transfer_ms / 1000.0) : 0.0;
  }
}

std::vector<ChainBatch> splitBatch(const ChainBatch& full, int microbatches, int rows) {
  std::vector<ChainBatch> parts;
  for (int m = 0; m < microbatches; ++m) {
    ChainBatch part;
    part.input = full.input.narrow(0, static_cast<std::int64_t>(m) * rows, rows);
    if (full.target.defined()) part.target = full.target.narrow(0, static_cast<std::int64_t>(m) * rows, rows);
    parts.push_back(part);
  }
  return parts;
}

std::vector<std::int64_t> boundaryShape(const Profile& profile, int layer, const std::string& source) {
  const auto& shape = profile.layers.at(layer).output_shape;
  if (!shape || shape->empty()) {
    throw Error(source + ": layer " + std::to_string(layer) + " has no output_shape; validate needs a profile "
                         "made by stagecut profile");
  }
  return *shape;
}

// Relative difference of the pipeline's gradients (what `executor` accumulated) against the full
// batch's, parameter by parameter over the layers of `chunks`: max |g - r| / max |r|; names the
// worst parameter.
double compareGradients(const StageExecutor& executor, const LayerChain& pipeline, const LayerChain& reference,
                        const std::vector<PlacedChunk>& chunks, std::string& worst_parameter) {
  double worst = 0.0;
  for (const PlacedChunk& chunk : chunks) {
    for (int i = chunk.first_layer; i <= chunk.last_layer; ++i) {
      const auto& ours = pipeline.layers[i].parameters;
      const auto& theirs = reference.layers[i].parameters;
      for (std::size_t p = 0; p < ours.size(); ++p) {
        // In float64: a 16-bit reference and float32 buffers are compared at one precision.
        const auto wide = [](const torch::Tensor& grad) { return grad.defined() ? grad.to(torch::kFloat64) : grad; };
        const torch::Tensor expected = wide(theirs[p].grad());
        const torch::Tensor got = wide(executor.gradientOf(ours[p]));
        double diff = 0.0;
        if (!got.defined() || !expected.defined()) {
          diff = got.defined() == expected.defined() ? 0.0 : 1.0;
        } else {
          const double scale = std::max(expected.abs().max().item<double>(), 1e-12);
          diff = (got - expected).abs().max().item<double>() / scale;
        }
        if (diff >= worst) {
          worst = diff;
          worst_parameter = pipeline.layers[i].name + "[" + std::to_string(p) + "]";
        }
      }
    }
  }
  return worst;
}

// The model chunks pipeline rank `rank` runs, as the partition's placement puts its stages on
// ranks (one stage per rank without one): their layers, and the ranks and shapes of what they
// receive and send.
std::vector<PlacedChunk> chunksOfRank(const Profile& profile, const Partition& partition, int rank,
                                      torch::ScalarType floating, const std::string& source) {
  const Placement placement = partition.rankPlacement();
  const int chunk_count = placement.chunkCount();
  std::vector<PlacedChunk> chunks;
  for (int local = 0; local < placement.chunks_per_rank; ++local) {
    const int chain_chunk = placement.chunkAt(rank, local);
    const StageCost& stage = partition.stages.at(static_cast<std::size_t>(chain_chunk));
    PlacedChunk chunk;
    chunk.first_layer = stage.first;
    chunk.last_layer = stage.last;
    chunk.index = chain_chunk;
    if (chain_chunk > 0) {
      chunk.previous_rank = placement.rankOf(chain_chunk - 1);
      chunk.input = {boundaryShape(profile, stage.first - 1, source), floating};
    }
    if (chain_chunk + 1 < chunk_count) {
      chunk.next_rank = placement.rankOf(chain_chunk + 1);
      chunk.output = {boundaryShape(profile, stage.last, source), floating};
    }
    chunks.push_back(chunk);
  }
  return chunks;
}

// The replicas' link as the prediction charges it (ringAllReduceMs): all-reduces of 1 float give
// the latency terms 2 (D - 1) x latency, of 4 MiB the bandwidth from 2 (D - 1) / D x bytes.
void probeReplicaLink(ReplicaGroup& group, const RankClock& clock, const torch::Device& device, RankOutcome& outcome) {
  auto medianAllReduceMs = [&](std::int64_t elements, int rounds) {
    std::vector<double> times;
    for (int i = 0; i < rounds; ++i) {
      torch::Tensor payload = torch::ones({elements}, torch::TensorOptions().device(device));
      const std::int64_t start_ns = clock.nowNs();
      group.allReduceSum(payload, "the replicas' link probe");
      times.push_back(msSince(clock, start_ns));
    }
    return medianOf(times);
  };
  const double replicas = group.size();
  const std::int64_t large = 1 << 20;
  const double small_ms = medianAllReduceMs(1, 20);
  const double large_ms = medianAllReduceMs(large, 5);
  outcome.replica_latency_ms = small_ms / (2.0 * (replicas - 1));
  const double transfer_ms = std::max(large_ms - small_ms, 1e-6);
  outcome.replica_bandwidth_bytes_per_s = 2.0 * (replicas - 1) / replicas * 4.0 * large / (transfer_ms / 1000.0);
}

// The precision the profile's model ran in, in which its stages run: run.dtype, or the
// model's own for a profile from before it was recorded.
torch::ScalarType profiledType(const Profile& profile, const LayerChain& chain) {
  return profile.run.dtype.empty() ? chainFloatingType(chain) : scalarTypeOfPrecision(profile.run.dtype);
}

// The profile's model, built afresh from its seed, with its weights and batches on `device` in
// the profile's precision.
LayerChain chainOn(const Profile& profile, const std::string& source, const torch::Device& device) {
  LayerChain chain = buildChainFromProfile(profile, source);
  placeChain(chain, device, profiledType(profile, chain));
  return chain;
}

// The oracle the gradients are held to: the exact gradient of the weights the pipeline trains.
// A 16-bit model's weights are rounded as the pipeline's are, then widened to float32 with its
// batches, and one full-batch step runs in float32. A bfloat16 full-batch step would be no
// oracle: its GEMMs accumulate the whole batch at bfloat16's precision (its weight gradients
// 2-3% off the exact ones on an AVX2 CPU, more than the pipeline's own error, which sums
// microbatches in float32).
LayerChain referenceChainOn(const Profile& profile, const std::string& source, const torch::Device& device) {
  LayerChain chain = chainOn(profile, source, device);
  if (c10::elementSize(chain.floating) < 4) placeChain(chain, device, torch::kFloat32);
  return chain;
}

// What a rank reads before it meets the others: its profile, split and op lists, checked
// against the ranks that were started.
struct RankInputs {
  Profile profile;
  Partition partition;
  Schedule schedule;
};

RankInputs readRankInputs(const ValidateRequest& request, const RankLayout& layout) {
  RankInputs inputs;
  inputs.profile = readProfileFile(request.profile_path, request.microbatch_size);
  inputs.partition = readPartitionFile(request.partition_path);
  checkPartitionCoversLayers(inputs.partition, inputs.profile.layerCount(), request.partition_path);
  const Placement placement = inputs.partition.rankPlacement();
  const int stages = placement.ranks;
  const int replicas = layout.replicas;
  if (stages * replicas != layout.world_size) {
    throw Error(request.partition_path + ": the partition runs on " + std::to_string(stages) + " pipeline ranks and " +
                std::to_string(replicas) + " replica(s) need " + std::to_string(stages * replicas) + " ranks, but " +
                std::to_string(layout.world_size) + " were started; start pipeline ranks x replicas ranks");
  }
  inputs.schedule = pipelineSchedule(parseScheduleName(request.schedule), placement, request.microbatches, replicas);
  if (inputs.profile.run.microbatch_size < 1) {
    throw Error(request.profile_path + ": run.microbatch_size is missing; profile the model again");
  }
  return inputs;
}

// The links a rank's messages and all-reduces take. Gloo carries host tensors: a GPU stage's go
// through host copies, unless NCCL carries them between the GPUs; the replicas' all-reduce stays
// on Gloo.
class RankLinks {
 public:
  RankLinks(RankWorld& world, const torch::Device& device, const std::string& backend, const Schedule& schedule,
            const std::string& schedule_name)
      : replica_group_(world.replicaGroup()) {
    if (backend == "nccl") {
      // Each direction's messages are paired by order: the schedule must keep it (all of stagecut's do).
      if (const auto mismatch = firstMessageOrderMismatch(schedule)) {
        throw Error("--backend nccl: schedule " + schedule_name + " cannot run over NCCL, which pairs messages by "
                    "their order (" + *mismatch + "); use --backend gloo");
      }
      device_transport_ = world.openDeviceTransport(device);
    } else if (!device.is_cpu()) {
      staged_transport_.emplace(world.transport(), device);
    }
    if (!device.is_cpu() && replica_group_) replica_group_ = &staged_replicas_.emplace(*replica_group_);
    transport_ = device_transport_ ? device_transport_.get() : staged_transport_ ? &*staged_transport_ : &world.transport();
  }

  StageTransport& transport() { return *transport_; }
  ReplicaGroup* replicaGroup() { return replica_group_; }

 private:
  std::unique_ptr<StageTransport> device_transport_;
  std::optional<HostStagingTransport> staged_transport_;
  std::optional<HostStagingReplicaGroup> staged_replicas_;
  ReplicaGroup* replica_group_ = nullptr;
  StageTransport* transport_ = nullptr;
};

// The timed steps of one run (plain or recomputing): what each op measured, the optimizer
// step's peak, and the rank's peak over the steps.
struct MeasuredSteps {
  std::vector<std::vector<OpRecord>>* records;
  std::vector<std::int64_t>* optimizer_peaks;
  std::int64_t* peak_bytes;
};

// Warm-up and timed steps, each between barriers. With `reference_samples`, the reference kernel
// is timed before each timed step's barrier, so outside its clock; beside the other ranks' ends
// of the last step or their own samples, as the steps run beside each other.
void runSteps(const ValidateRequest& request, RankWorld& world, StageExecutor& executor, StageOptimizer& optimizer,
              const RankOps& ops, bool splits_backward, const std::vector<ChainBatch>& microbatches,
              const torch::Device& device, MeasuredSteps out, std::vector<double>* reference_samples) {
  std::uint64_t weight_bytes = 0;
  for (const auto& weight : executor.parameters()) weight_bytes += static_cast<std::uint64_t>(weight.nbytes());
  for (int step = 0; step < request.warmup_steps + request.steps; ++step) {
    if (reference_samples && step >= request.warmup_steps) reference_samples->push_back(timeReferenceKernelMs());
    executor.zeroGradients();
    world.barrier();
    // What the counter cannot see, allocated before it starts: the weights, their gradients
    // (from the first step's backward on) and the optimizer's state.
    const std::uint64_t gradient_bytes = executor.gradientBytes();
    const auto held = static_cast<std::int64_t>(weight_bytes + gradient_bytes + optimizer.stateBytes());
    MemoryCounter memory(device.type());
    executor.setMemoryCounter(&memory);
    std::vector<OpRecord> records = executor.runStep(ops, microbatches, splits_backward);
    executor.setMemoryCounter(nullptr);
    memory.resetPeak();
    optimizer.step();
    const std::int64_t optimizer_peak = held + memory.peakBytes();
    if (step < request.warmup_steps) continue;
    for (OpRecord& record : records) {
      record.peak_bytes += held;
      *out.peak_bytes = std::max(*out.peak_bytes, record.peak_bytes);
    }
    *out.peak_bytes = std::max(*out.peak_bytes, optimizer_peak);
    out.optimizer_peaks->push_back(optimizer_peak);
    out.records->push_back(std::move(records));
  }
  world.barrier();
}

// Where the rank ran: host, cores, threads, device and link, as the trust assessment reads them.
void describeEnvironment(const ValidateRequest& request, const RankLayout& layout, const std::string& device_name,
                         const torch::Device& device, const std::string& backend, RankEnvironment* environment) {
  environment->rank = layout.rank;
  environment->host = hostName();
  environment->usable_cores = usableCores();
  environment->threads = request.threads;
  environment->device = device_name;
  environment->transport = backend == "nccl" ? "nccl" : device.is_cpu() ? "gloo" : "gloo-host-copies";
}

// The host's load over the window from the first reference kernel to the last.
void recordWindow(const HostCpuSnapshot& start, RankEnvironment* environment) {
  const HostCpuSnapshot end = takeHostCpuSnapshot();
  environment->window_s = end.wall_s - start.wall_s;
  environment->own_cpu_s = end.own_s - start.own_s;
  if (start.host_busy_s >= 0 && end.host_busy_s >= 0) environment->host_busy_cpu_s = end.host_busy_s - start.host_busy_s;
}

// Publishes this rank's outcome; rank 0 gathers every rank's (and returns them), the others wait
// until it has, since rank 0 hosts the store.
std::vector<RankOutcome> gatherOutcomes(RankWorld& world, const RankLayout& layout, const RankOutcome& outcome) {
  RankStore& store = world.store();
  store.publish("stagecut/outcome/" + std::to_string(layout.rank), rankOutcomeToJson(outcome).dump());
  std::vector<RankOutcome> all;
  if (layout.rank == 0) {
    for (int r = 0; r < layout.world_size; ++r) {
      all.push_back(rankOutcomeFromJson(nlohmann::json::parse(store.fetch("stagecut/outcome/" + std::to_string(r)))));
    }
    store.publish("stagecut/done", "1");
  } else {
    store.fetch("stagecut/done");
  }
  return all;
}

}  // namespace

std::vector<RankOutcome> runValidationRank(const ValidateRequest& request, RankWorld& world) {
  const RankLayout layout = world.layout();
  const RankInputs inputs = readRankInputs(request, layout);
  const Profile& profile = inputs.profile;
  const int rows = profile.run.microbatch_size;
  const RankDevices device_plan = planRankDevices(request.device, profile.device.kind, layout.world_size, visibleGpus());
  const std::string device_name = device_plan.devices.at(static_cast<std::size_t>(layout.rank));
  const torch::Device device(device_name);
  const std::string backend = choosePipelineBackend(request.backend, device_plan, ncclAvailable());

  const int rank = layout.pipelineRank();
  const LayerChain chain = chainOn(profile, request.profile_path, device);
  const std::vector<PlacedChunk> chunks = chunksOfRank(profile, inputs.partition, rank, chain.floating, request.profile_path);
  RankOutcome outcome;
  outcome.rank = layout.rank;
  outcome.stage = rank;
  outcome.replica = layout.replica();
  outcome.first_layer = chunks.front().first_layer;
  outcome.last_layer = chunks.front().last_layer;
  for (const PlacedChunk& chunk : chunks) outcome.chunk_layers.push_back({chunk.first_layer, chunk.last_layer});
  // Replica d trains on its own shard: microbatches d x M .. (d + 1) x M - 1 of the full batch.
  const int replicas = layout.replicas;
  const ChainBatch full_batch = chain.make_batch(rows * request.microbatches * replicas, request.batch_seed);
  const std::vector<ChainBatch> all_microbatches = splitBatch(full_batch, request.microbatches * replicas, rows);
  const std::vector<ChainBatch> microbatches(all_microbatches.begin() + outcome.replica * request.microbatches,
                                             all_microbatches.begin() + (outcome.replica + 1) * request.microbatches);

  world.connect();
  RankLinks links(world, device, backend, inputs.schedule, request.schedule);
  RankEnvironment& environment = outcome.environment;
  describeEnvironment(request, layout, device_name, device, backend, &environment);
  // Every rank at once (they have just met in connect()), as its steps will run: what the
  // machine gives each of them now. No barrier of its own: the step protocol counts barriers.
  // The host's load is watched from here to the last reference kernel: a window long enough
  // for /proc/stat's 10 ms ticks even when the steps are short.
  const HostCpuSnapshot window_start = takeHostCpuSnapshot();
  environment.reference_before_ms = timeReferenceKernelMs();
  probeLinks(links.transport(), world.clock(), device, outcome);
  if (links.replicaGroup()) probeReplicaLink(*links.replicaGroup(), world.clock(), device, outcome);

  StageExecutor executor(chain, chunks, links.transport(), world.clock(), links.replicaGroup());
  executor.setDevice(device);
  StageOptimizer optimizer(request.optimizer, executor.parameters(), executor.mainGradients());
  const RankOps& ops = inputs.schedule.ranks[static_cast<std::size_t>(rank)];
  const bool splits = inputs.schedule.splits_backward;
  runSteps(request, world, executor, optimizer, ops, splits, microbatches, device,
           {&outcome.steps, &outcome.optimizer_step_peak_bytes, &outcome.peak_bytes},
           &environment.reference_between_steps_ms);
  environment.reference_after_ms = timeReferenceKernelMs();
  recordWindow(window_start, &environment);
  const double plain_loss = executor.lastStepLoss();

  // The reference: one full-batch step (all replicas' shards) of the unsplit model, built afresh
  // from the same seed, on the same batch (its make_batch rounds as the pipeline's does).
  const LayerChain reference = referenceChainOn(profile, request.profile_path, device);
  const ChainBatch reference_batch = reference.make_batch(rows * request.microbatches * replicas, request.batch_seed);
  const torch::Tensor loss = microbatchLoss(reference.forward(reference_batch), 1);
  loss.backward();
  outcome.grad_max_rel_diff = compareGradients(executor, chain, reference, chunks, outcome.worst_parameter);
  const bool computes_loss = inputs.partition.rankPlacement().lastLocalOn(rank) >= 0;
  if (computes_loss) {
    outcome.loss_pipeline = plain_loss;
    outcome.loss_reference = loss.item<double>();
  }
  if (request.recompute == "full") {
    executor.setRecompute(true);
    runSteps(request, world, executor, optimizer, ops, splits, microbatches, device,
             {&outcome.recompute_steps, &outcome.recompute_optimizer_step_peak_bytes, &outcome.recompute_peak_bytes},
             nullptr);
    std::string worst;
    outcome.recompute_grad_max_rel_diff = compareGradients(executor, chain, reference, chunks, worst);
    if (computes_loss) outcome.recompute_loss_pipeline = executor.lastStepLoss();
  }
  return gatherOutcomes(world, layout, outcome);
}

}  // namespace stagecut
