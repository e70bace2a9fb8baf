#include "runtime/rank_worker.h"

#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <chrono>

#include "core/error.h"
#include "core/partition_json.h"
#include "core/profile_json.h"
#include "profiler/memory_counter.h"
#include "profiler/torch_runtime.h"
#include "runtime/model_from_profile.h"
#include "schedule/generators.h"

namespace stagecut {

namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// Tags above any step's (2 x microbatches) keep the link probe's messages apart.
constexpr int kProbeTagBase = 1 << 20;

// One-way time of a `elements`-float message between this rank and `peer`, by ping-pong.
double oneWayMs(StageTransport& transport, int peer, bool starts, std::int64_t elements, int rounds, int tag) {
  const std::vector<std::int64_t> shape = {elements};
  const torch::Tensor payload = torch::ones(shape);
  std::vector<double> round_trips;
  for (int i = 0; i < rounds; ++i) {
    const auto start = Clock::now();
    if (starts) {
      transport.sendAsync(payload, peer, tag);
      transport.recv(shape, peer, tag + 1, "the link probe's reply");
      round_trips.push_back(msSince(start));
    } else {
      const torch::Tensor echo = transport.recv(shape, peer, tag, "the link probe");
      transport.sendAsync(echo, peer, tag + 1);
    }
    transport.flushSends();
  }
  return starts ? median(round_trips) / 2.0 : 0.0;
}

// Latency from 1-float messages, bandwidth from 4 MiB ones: what the prediction charges for
// each boundary. Boundaries are probed in chain order so that no rank waits in a cycle.
void probeLinks(StageTransport& transport, RankOutcome& outcome) {
  const int rank = transport.rank();
  const std::int64_t large = 1 << 20;
  if (rank > 0) {
    oneWayMs(transport, rank - 1, false, 1, 20, kProbeTagBase);
    oneWayMs(transport, rank - 1, false, large, 5, kProbeTagBase + 2);
  }
  if (rank + 1 < transport.worldSize()) {
    const double latency_ms = oneWayMs(transport, rank + 1, true, 1, 20, kProbeTagBase);
    const double large_ms = oneWayMs(transport, rank + 1, true, large, 5, kProbeTagBase + 2);
    outcome.link_latency_ms = latency_ms;
    const double transfer_ms = std::max(large_ms - latency_ms, 1e-6);
    outcome.link_bandwidth_bytes_per_s = 4.0 * large / (transfer_ms / 1000.0);
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

// Relative difference of the pipeline's gradients against the full batch's, parameter by
// parameter: max |g - r| / max |r|.
void compareGradients(const LayerChain& pipeline, const LayerChain& reference, int first, int last,
                      RankOutcome& outcome) {
  for (int i = first; i <= last; ++i) {
    const auto& ours = pipeline.layers[i].parameters;
    const auto& theirs = reference.layers[i].parameters;
    for (std::size_t p = 0; p < ours.size(); ++p) {
      const torch::Tensor expected = theirs[p].grad();
      const torch::Tensor got = ours[p].grad();
      double diff = 0.0;
      if (!got.defined() || !expected.defined()) {
        diff = got.defined() == expected.defined() ? 0.0 : 1.0;
      } else {
        const double scale = std::max(expected.abs().max().item<double>(), 1e-12);
        diff = (got - expected).abs().max().item<double>() / scale;
      }
      if (diff >= outcome.grad_max_rel_diff) {
        outcome.grad_max_rel_diff = diff;
        outcome.worst_parameter = pipeline.layers[i].name + "[" + std::to_string(p) + "]";
      }
    }
  }
}

}  // namespace

std::vector<RankOutcome> runValidationRank(const ValidateRequest& request, const RendezvousInfo& rendezvous) {
  pinThreads(request.threads);
  const Profile profile = readProfileFile(request.profile_path);
  const Partition partition = readPartitionFile(request.partition_path);
  checkPartitionCoversLayers(partition, profile.layerCount(), request.partition_path);
  const int stages = static_cast<int>(partition.stages.size());
  if (stages != rendezvous.world_size) {
    throw Error(request.partition_path + ": the partition has " + std::to_string(stages) + " stages but " +
                std::to_string(rendezvous.world_size) + " ranks were started; start one rank per stage");
  }
  const Schedule schedule = generateSchedule(request.schedule, stages, request.microbatches, 1);
  const int rows = profile.run.microbatch_size;
  if (rows < 1) throw Error(request.profile_path + ": run.microbatch_size is missing; profile the model again");

  const int rank = rendezvous.rank;
  const StageCost& stage = partition.stages[rank];
  RankOutcome outcome;
  outcome.rank = rank;
  outcome.first_layer = stage.first;
  outcome.last_layer = stage.last;
  StagePlacement placement;
  placement.first_layer = stage.first;
  placement.last_layer = stage.last;
  if (rank > 0) placement.input_shape = boundaryShape(profile, stage.first - 1, request.profile_path);
  if (rank + 1 < stages) placement.output_shape = boundaryShape(profile, stage.last, request.profile_path);

  const LayerChain chain = buildChainFromProfile(profile, request.profile_path);
  const ChainBatch full_batch = chain.make_batch(rows * request.microbatches, request.batch_seed);
  const std::vector<ChainBatch> microbatches = splitBatch(full_batch, request.microbatches, rows);

  GlooTransport transport(rendezvous);
  probeLinks(transport, outcome);

  StageExecutor executor(chain, placement, transport);
  // Fault injection for the launcher's tests: this rank dies at the start of its first measured
  // step, while its peers are in theirs.
  const char* kill_rank = std::getenv("STAGECUT_TEST_KILL_RANK");
  for (int step = 0; step < request.warmup_steps + request.steps; ++step) {
    executor.zeroGradients();
    transport.barrier();
    if (kill_rank && std::atoi(kill_rank) == rank && step == request.warmup_steps) ::raise(SIGKILL);
    MemoryCounter memory;
    std::vector<OpRecord> records = executor.runStep(schedule.ranks[rank], microbatches, schedule.splits_backward);
    if (step >= request.warmup_steps) {
      outcome.steps.push_back(std::move(records));
      outcome.peak_bytes = std::max<std::int64_t>(outcome.peak_bytes, memory.peakBytes());
    }
  }
  transport.barrier();

  // The reference: one full-batch step of the unsplit model, built afresh from the same seed.
  const LayerChain reference = buildChainFromProfile(profile, request.profile_path);
  const torch::Tensor output = reference.forward(full_batch);
  const torch::Tensor loss = output.numel() == 1 ? output : output.mean();
  loss.backward();
  compareGradients(chain, reference, stage.first, stage.last, outcome);
  if (rank + 1 == stages) {
    outcome.loss_pipeline = executor.lastStepLoss();
    outcome.loss_reference = loss.item<double>();
  }

  transport.publish("stagecut/outcome/" + std::to_string(rank), rankOutcomeToJson(outcome).dump());
  std::vector<RankOutcome> all;
  if (rank == 0) {
    for (int r = 0; r < stages; ++r) {
      all.push_back(rankOutcomeFromJson(nlohmann::json::parse(transport.fetch("stagecut/outcome/" + std::to_string(r)))));
    }
    transport.publish("stagecut/done", "1");
  } else {
    // Rank 0 hosts the store: keep it alive until rank 0 has read every outcome.
    transport.fetch("stagecut/done");
  }
  return all;
}

}  // namespace stagecut
