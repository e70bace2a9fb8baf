#include <catch2/catch.hpp>

#include <thread>

#include "core/error.h"
#include "profiler/torch_runtime.h"
#include "profiler/zoo.h"
#include "runtime/in_process_transport.h"
#include "runtime/stage_executor.h"
#include "schedule/generators.h"

using stagecut::ChainBatch;
using stagecut::InProcessHub;
using stagecut::InProcessTransport;
using stagecut::LayerChain;
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

// Runs a 3-stage pipeline of the MLP ([2, 2, 2] layers) on threads, one per rank, and returns
// the summed loss reported by the last stage.
double runPipeline(const LayerChain& chain, const std::string& schedule_name, const std::vector<ChainBatch>& microbatches) {
  const int stages = 3;
  const auto schedule = stagecut::generateSchedule(schedule_name, stages, static_cast<int>(microbatches.size()), 1);
  auto hub = std::make_shared<InProcessHub>(stages, std::chrono::milliseconds(20000));
  std::vector<double> losses(stages, 0.0);
  std::vector<std::string> failures(stages);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < stages; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        InProcessTransport transport(hub, rank);
        stagecut::StagePlacement placement;
        placement.first_layer = 2 * rank;
        placement.last_layer = 2 * rank + 1;
        placement.input_shape = {2, 16};
        placement.output_shape = {2, 16};
        stagecut::StageExecutor executor(chain, placement, transport);
        executor.runStep(schedule.ranks[rank], microbatches, schedule.splits_backward);
        losses[rank] = executor.lastStepLoss();
      } catch (const std::exception& e) {
        failures[rank] = e.what();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (const auto& failure : failures) REQUIRE(failure.empty());
  return losses.back();
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
    const auto ours = pipelined.parameters();
    const auto theirs = reference.parameters();
    REQUIRE(ours.size() == theirs.size());
    for (std::size_t p = 0; p < ours.size(); ++p) {
      INFO("parameter " << p);
      REQUIRE(ours[p].grad().defined());
      CHECK(torch::allclose(ours[p].grad(), theirs[p].grad(), 1e-5, 1e-7));
    }
  }
}

TEST_CASE("a rank whose peer never sends fails with the op and the peer named", "[runtime][executor][errors]") {
  const LayerChain chain = smallMlp();
  auto hub = std::make_shared<InProcessHub>(2, std::chrono::milliseconds(200));
  InProcessTransport transport(hub, 1);
  stagecut::StagePlacement placement;
  placement.first_layer = 3;
  placement.last_layer = 5;
  placement.input_shape = {2, 16};
  stagecut::StageExecutor executor(chain, placement, transport);
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
