#include <catch2/catch.hpp>

#include <algorithm>
#include <thread>

#include "core/error.h"
#include "profiler/memory_counter.h"
#include "profiler/torch_runtime.h"
#include "profiler/zoo.h"
#include "runtime/in_process_transport.h"
#include "runtime/stage_executor.h"
#include "schedule/data_parallel.h"
#include "schedule/generators.h"
#include "tests/gradient_check.h"

using stagecut::ChainBatch;
using stagecut::InProcessHub;
using stagecut::InProcessTransport;
using stagecut::LayerChain;
using stagecut::SteadyClock;
using Catch::Matchers::Contains;

namespace {

LayerChain smallMlp() {
  stagecut::ZooOptions options;
  options.family = "mlp";
  options.layers = 5;
  options.hidden = 16;
  options.seed = 3;
  return stagecut::buildZooModel(options);  // fc.0 .. fc.4, loss: 6 layers
}

std::vector<ChainBatch> split(const ChainBatch& full, int parts, int rows) {
  std::vector<ChainBatch> out;
  for (int m = 0; m < parts; ++m) {
    out.push_back({full.input.narrow(0, m * rows, rows), full.target.narrow(0, m * rows, rows)});
  }
  return out;
}

// The chunks rank `rank` runs of an MLP of width 16 cut into model stages of `layers_per_stage`
// layers each, placed as `placement` says; microbatches of `rows` rows.
std::vector<stagecut::PlacedChunk> mlpChunks(const stagecut::Placement& placement,
                                                const std::vector<int>& layers_per_stage, int rank, int rows) {
  std::vector<stagecut::PlacedChunk> chunks;
  for (int local = 0; local < placement.chunks_per_rank; ++local) {
    const int stage = placement.chunkAt(rank, local);
    stagecut::PlacedChunk chunk;
    for (int s = 0; s < stage; ++s) chunk.first_layer += layers_per_stage[static_cast<std::size_t>(s)];
    chunk.last_layer = chunk.first_layer + layers_per_stage[static_cast<std::size_t>(stage)] - 1;
    chunk.index = stage;
    if (stage > 0) chunk.previous_rank = placement.rankOf(stage - 1);
    if (stage + 1 < placement.chunkCount()) chunk.next_rank = placement.rankOf(stage + 1);
    chunk.input.sizes = {rows, 16};
    chunk.output.sizes = {rows, 16};
    chunks.push_back(chunk);
  }
  return chunks;
}

// One model stage per rank, layers [first, last] of rank `rank` of `stages`.
std::vector<stagecut::PlacedChunk> oneStage(int rank, int stages, int first, int last) {
  stagecut::PlacedChunk chunk;
  chunk.first_layer = first;
  chunk.last_layer = last;
  chunk.index = rank;
  if (rank > 0) chunk.previous_rank = rank - 1;
  if (rank + 1 < stages) chunk.next_rank = rank + 1;
  chunk.input.sizes = {2, 16};
  chunk.output.sizes = {2, 16};
  return {chunk};
}

// Runs `schedule` on the MLP cut into `layers_per_stage` (one entry per model stage) on
// threads, one per rank, and returns the summed loss reported by the rank of the last stage.
double runPipeline(const LayerChain& chain, const stagecut::Schedule& schedule, const std::vector<int>& layers_per_stage,
                   const std::vector<ChainBatch>& microbatches) {
  const int ranks = schedule.placement.ranks;
  auto hub = std::make_shared<InProcessHub>(ranks, std::chrono::milliseconds(20000));
  std::vector<double> losses(ranks, 0.0);
  std::vector<std::string> failures(ranks);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < ranks; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        InProcessTransport transport(hub, rank);
        const SteadyClock clock;
        const int rows = static_cast<int>(microbatches.front().input.size(0));
        stagecut::StageExecutor executor(chain, mlpChunks(schedule.placement, layers_per_stage, rank, rows), transport,
                                         clock);
        executor.runStep(schedule.ranks[rank], microbatches, schedule.splits_backward);
        losses[rank] = executor.lastStepLoss();
      } catch (const std::exception& e) {
        failures[rank] = e.what();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (const auto& failure : failures) REQUIRE(failure.empty());
  double loss = 0.0;
  for (double rank_loss : losses) loss += rank_loss;  // only the last stage's rank reports one
  return loss;
}

// A 3-stage pipeline of the MLP ([2, 2, 2] layers).
double runPipeline(const LayerChain& chain, const std::string& schedule_name, const std::vector<ChainBatch>& microbatches) {
  const auto schedule = stagecut::generateSchedule(schedule_name, 3, static_cast<int>(microbatches.size()), 1);
  return runPipeline(chain, schedule, {2, 2, 2}, microbatches);
}

void checkGradientsEqual(const LayerChain& ours, const LayerChain& reference) {
  stagecut::testing::checkSameGradients(ours.parameters(), reference.parameters());
}

}  // namespace

TEST_CASE("a pipelined step's gradients equal the full batch's under every schedule", "[runtime][executor]") {
  stagecut::pinThreads(1);
  for (const char* schedule : {"gpipe", "1f1b", "zb-h1"}) {
    INFO(schedule);
    const LayerChain pipelined = smallMlp();
    const LayerChain reference = smallMlp();
    const ChainBatch full = pipelined.make_batch(8, 11);
    const double pipelined_loss = runPipeline(pipelined, schedule, split(full, 4, 2));
    const torch::Tensor reference_loss = reference.forward(full);
    reference_loss.backward();
    CHECK(pipelined_loss == Approx(reference_loss.item<double>()).epsilon(1e-5));
    checkGradientsEqual(pipelined, reference);
  }
}

TEST_CASE("chunks placed in loop order or in a V train as the full batch does", "[runtime][executor][chunks]") {
  stagecut::pinThreads(1);
  struct Case {
    const char* schedule;
    int ranks;
    int chunks;
    std::vector<int> layers_per_stage;  // of the 6-layer MLP
  };
  // Uneven chunks; a V's turn and a one-rank loop hand tensors over without a message. DualPipeV's
  // split backwards leave their W's to the end of the step (M = 6 >= 2N for N <= 3).
  const std::vector<Case> cases = {{"interleaved-1f1b", 2, 2, {2, 1, 2, 1}}, {"interleaved-1f1b", 3, 2, {1, 1, 1, 1, 1, 1}},
                                   {"interleaved-1f1b", 1, 3, {3, 2, 1}},       {"zb-v", 2, 2, {1, 2, 2, 1}},
                                   {"zb-v", 3, 2, {1, 1, 1, 1, 1, 1}},          {"zb-v", 1, 2, {4, 2}},
                                   {"dualpipe-v", 2, 2, {2, 1, 1, 2}},          {"dualpipe-v", 3, 2, {1, 1, 1, 1, 1, 1}},
                                   {"dualpipe-v", 1, 2, {3, 3}}};
  for (const Case& c : cases) {
    INFO(c.schedule << " on " << c.ranks << " rank(s) x " << c.chunks << " chunks");
    const int microbatches = 6;
    const auto schedule = stagecut::generateSchedule(c.schedule, c.ranks, microbatches, c.chunks);
    REQUIRE(schedule.placement.chunks_per_rank == c.chunks);
    const LayerChain pipelined = smallMlp();
    const LayerChain reference = smallMlp();
    const ChainBatch full = pipelined.make_batch(2 * microbatches, 5);
    const double pipelined_loss = runPipeline(pipelined, schedule, c.layers_per_stage, split(full, microbatches, 2));
    const torch::Tensor reference_loss = reference.forward(full);
    reference_loss.backward();
    CHECK(pipelined_loss == Approx(reference_loss.item<double>()).epsilon(1e-5));
    checkGradientsEqual(pipelined, reference);
  }
}

TEST_CASE("a rank whose peer never sends fails with the op and the peer named", "[runtime][executor][errors]") {
  const LayerChain chain = smallMlp();
  auto hub = std::make_shared<InProcessHub>(2, std::chrono::milliseconds(200));
  InProcessTransport transport(hub, 1);
  const SteadyClock clock;
  stagecut::StageExecutor executor(chain, oneStage(1, 2, 3, 5), transport, clock);
  const auto schedule = stagecut::generateSchedule("1f1b", 2, 2, 1);
  const ChainBatch full = chain.make_batch(4, 0);
  try {
    executor.runStep(schedule.ranks[1], split(full, 2, 2), false);
    FAIL("the step finished without its input");
  } catch (const stagecut::Error& e) {
    CHECK(e.kind() == stagecut::ErrorKind::kRuntime);
    CHECK(std::string(e.what()) == "rank 1: timed out waiting for F(0)'s activation from rank 0");
  }
}

namespace {

// Runs an N-stage pipeline of the MLP (two layers per stage) on one thread per rank, times D
// replicas (each on its own chain and its own M microbatches, gradients all-reduced by the A ops
// of the schedule), optionally checkpointed. Returns each rank's op records (replica-major).
std::vector<std::vector<stagecut::OpRecord>> runReplicated(const std::vector<const LayerChain*>& chains,
                                                            const std::string& schedule_name, bool recompute,
                                                            const std::vector<std::vector<ChainBatch>>& shards) {
  const int stages = 3;
  const int replicas = static_cast<int>(chains.size());
  auto schedule = stagecut::generateSchedule(schedule_name, stages, static_cast<int>(shards.front().size()), 1);
  if (replicas > 1) schedule = stagecut::withGradientAllReduce(schedule);
  std::vector<std::shared_ptr<InProcessHub>> pipelines;
  for (int d = 0; d < replicas; ++d) pipelines.push_back(std::make_shared<InProcessHub>(stages, std::chrono::milliseconds(20000)));
  std::vector<std::shared_ptr<stagecut::InProcessReplicaHub>> stage_groups;
  for (int s = 0; s < stages; ++s) {
    stage_groups.push_back(std::make_shared<stagecut::InProcessReplicaHub>(replicas, std::chrono::milliseconds(20000)));
  }
  std::vector<std::vector<stagecut::OpRecord>> records(static_cast<std::size_t>(stages * replicas));
  std::vector<std::string> failures(records.size());
  std::vector<std::thread> threads;
  for (int d = 0; d < replicas; ++d) {
    for (int rank = 0; rank < stages; ++rank) {
      threads.emplace_back([&, d, rank] {
        const std::size_t index = static_cast<std::size_t>(d * stages + rank);
        try {
          stagecut::pinThreads(1);
          InProcessTransport transport(pipelines[d], rank);
          stagecut::InProcessReplicaGroup group(stage_groups[rank], d);
          const SteadyClock clock;
          stagecut::StageExecutor executor(*chains[d], oneStage(rank, stages, 2 * rank, 2 * rank + 1), transport, clock,
                                           replicas > 1 ? &group : nullptr);
          executor.setRecompute(recompute);
          records[index] = executor.runStep(schedule.ranks[rank], shards[d], schedule.splits_backward);
        } catch (const std::exception& e) {
          failures[index] = e.what();
        }
      });
    }
  }
  for (auto& thread : threads) thread.join();
  for (const auto& failure : failures) REQUIRE(failure.empty());
  return records;
}

}  // namespace

TEST_CASE("with activation recomputation a step's gradients still equal the full batch's", "[runtime][executor][recompute]") {
  stagecut::pinThreads(1);
  for (const char* schedule : {"gpipe", "1f1b", "zb-h1"}) {
    INFO(schedule);
    const LayerChain pipelined = smallMlp();
    const LayerChain reference = smallMlp();
    const ChainBatch full = pipelined.make_batch(8, 11);
    runReplicated({&pipelined}, schedule, true, {split(full, 4, 2)});
    reference.forward(full).backward();
    checkGradientsEqual(pipelined, reference);
  }
}

TEST_CASE("data-parallel replicas' all-reduced gradients equal the full batch's over all shards",
          "[runtime][executor][data-parallel]") {
  stagecut::pinThreads(1);
  for (const char* schedule : {"1f1b", "zb-h1"}) {
    for (bool recompute : {false, true}) {
      INFO(schedule << (recompute ? " with recomputation" : ""));
      const LayerChain replica0 = smallMlp();
      const LayerChain replica1 = smallMlp();
      const LayerChain reference = smallMlp();
      const ChainBatch full = reference.make_batch(16, 5);
      const auto microbatches = split(full, 8, 2);
      const std::vector<std::vector<ChainBatch>> shards = {{microbatches.begin(), microbatches.begin() + 4},
                                                           {microbatches.begin() + 4, microbatches.end()}};
      const auto records = runReplicated({&replica0, &replica1}, schedule, recompute, shards);
      // Every rank ends its list with the all-reduce, recorded as its own op.
      for (const auto& rank : records) CHECK(rank.back().op.kind == stagecut::OpKind::kAllReduce);
      reference.forward(full).backward();
      checkGradientsEqual(replica0, reference);
      checkGradientsEqual(replica1, reference);
    }
  }
}

TEST_CASE("recomputation keeps one microbatch's activations and runs the forward again in B",
          "[runtime][executor][recompute]") {
  stagecut::pinThreads(1);
  // One stage holding the whole chain (no transfers), wide enough for activations to dominate.
  stagecut::ZooOptions options;
  options.family = "mlp";
  options.layers = 6;
  options.hidden = 256;
  options.seed = 7;
  // Each layer's forward counts its calls: the oracle for "runs the forward again".
  LayerChain chain = stagecut::buildZooModel(options);
  auto calls = std::make_shared<int>(0);
  for (auto& layer : chain.layers) {
    layer.forward = [inner = layer.forward, calls](const torch::Tensor& x, const torch::Tensor& target) {
      ++*calls;
      return inner(x, target);
    };
  }
  const int layer_count = static_cast<int>(chain.layers.size());
  const int rows = 64;
  auto hub = std::make_shared<InProcessHub>(1, std::chrono::milliseconds(20000));
  InProcessTransport transport(hub, 0);
  const SteadyClock clock;
  stagecut::StageExecutor executor(chain, oneStage(0, 1, 0, static_cast<int>(chain.layers.size()) - 1), transport,
                                   clock);
  // Peak bytes of the step (its parameters' gradients exist from the warm-up) and the layer
  // forwards one step runs.
  auto measure = [&](int microbatches, bool recompute, int& forwards_per_step) {
    const auto schedule = stagecut::generateSchedule("gpipe", 1, microbatches, 1);
    const auto batches = split(chain.make_batch(rows * microbatches, 3), microbatches, rows);
    executor.setRecompute(recompute);
    std::int64_t peak = 0;
    for (int step = 0; step < 3; ++step) {
      executor.zeroGradients();
      stagecut::MemoryCounter memory;
      *calls = 0;
      executor.runStep(schedule.ranks[0], batches, false);
      forwards_per_step = *calls;
      if (step == 0) continue;
      peak = std::max(peak, memory.peakBytes());
    }
    return peak;
  };
  int unused = 0, plain_forwards = 0, recomputed_forwards = 0;
  const std::int64_t one_microbatch = measure(1, false, unused);
  const std::int64_t plain = measure(4, false, plain_forwards);
  const std::int64_t recomputed = measure(4, true, recomputed_forwards);
  INFO("peak bytes: 1 microbatch " << one_microbatch << ", 4 plain " << plain << ", 4 recomputed " << recomputed);
  // The formula: stage input per microbatch in flight (here the batch itself, allocated before the
  // step) + one microbatch's activations: the plain peak of a single microbatch.
  CHECK(static_cast<double>(recomputed) == Approx(static_cast<double>(one_microbatch)).epsilon(0.25));
  CHECK(recomputed < plain / 2);
  // Every layer runs once per microbatch in F, and under recomputation once more in B.
  CHECK(plain_forwards == 4 * layer_count);
  CHECK(recomputed_forwards == 2 * 4 * layer_count);
}

namespace {

// Moves 1 us at each reading: a clock whose readings the test can predict.
class TickingClock : public stagecut::RankClock {
 public:
  std::int64_t nowNs() const override { return ticks_ns_ += 1000; }

 private:
  mutable std::int64_t ticks_ns_ = 0;
};

}  // namespace

TEST_CASE("an op record's start and end are read from the executor's clock", "[runtime][executor]") {
  const LayerChain chain = smallMlp();
  auto hub = std::make_shared<InProcessHub>(1, std::chrono::milliseconds(20000));
  InProcessTransport transport(hub, 0);
  const TickingClock clock;
  stagecut::StageExecutor executor(chain, oneStage(0, 1, 0, static_cast<int>(chain.layers.size()) - 1), transport,
                                   clock);
  const auto schedule = stagecut::generateSchedule("gpipe", 1, 2, 1);
  const auto records = executor.runStep(schedule.ranks[0], split(chain.make_batch(4, 0), 2, 2), false);
  REQUIRE(records.size() == 4u);
  // Two readings per op, in order: its start once the input is there, its end.
  for (std::size_t i = 0; i < records.size(); ++i) {
    CHECK(records[i].start_ns == static_cast<std::int64_t>(2 * i + 1) * 1000);
    CHECK(records[i].end_ns == static_cast<std::int64_t>(2 * i + 2) * 1000);
  }
}
