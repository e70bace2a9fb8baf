#include <catch2/catch.hpp>

#include <cmath>
#include <optional>
#include <thread>

#include "core/partition_json.h"
#include "core/profile_json.h"
#include "profiler/profile_request.h"
#include "profiler/torch_runtime.h"
#include "runtime/build_validation_report.h"
#include "runtime/in_process_transport.h"
#include "runtime/main_gradients.h"
#include "runtime/rank_worker.h"
#include "runtime/stage_optimizer.h"
#include "tests/test_support.h"

using Catch::Matchers::Contains;

namespace {

// 1 + 2^-7: a bfloat16 number (8 significant bits). Past 128 a bfloat16 sum moves in steps of
// 1, past 256 of 2: each addend then rounds to a whole step, and 300 of them miss the exact sum
// (302.34) by over 10%.
constexpr double kAddend = 1.0 + 1.0 / 128.0;
constexpr int kAddends = 300;

torch::Tensor bfloat16Weight() {
  return torch::zeros({4}, torch::TensorOptions().dtype(torch::kBFloat16)).requires_grad_(true);
}

// One backward whose gradient of `weight` is kAddend everywhere.
void backwardOnce(const torch::Tensor& weight) {
  (weight * kAddend).sum().backward();
}

}  // namespace

TEST_CASE("float32 buffers sum the gradients of bfloat16 weights that bfloat16 would round away",
          "[runtime][mixed-precision]") {
  // Without them: autograd accumulates in the weight's own precision.
  const torch::Tensor plain = bfloat16Weight();
  for (int i = 0; i < kAddends; ++i) backwardOnce(plain);
  CHECK(plain.grad().scalar_type() == torch::kBFloat16);
  CHECK(std::abs(plain.grad()[0].item<double>() / (kAddends * kAddend) - 1.0) > 0.10);

  const torch::Tensor weight = bfloat16Weight();
  stagecut::MainGradients main({weight});
  CHECK_FALSE(main.of(weight).defined());
  CHECK(main.bytes() == 0u);
  for (int i = 0; i < kAddends; ++i) backwardOnce(weight);
  const torch::Tensor sum = main.of(weight);
  REQUIRE(sum.defined());
  CHECK(sum.scalar_type() == torch::kFloat32);
  // float32 holds every partial sum exactly: the closed form.
  CHECK(sum[0].item<double>() == kAddends * kAddend);
  // The bfloat16 gradient is freed as soon as it is added: none outlives its backward.
  CHECK_FALSE(weight.grad().defined());
  CHECK(main.bytes() == 4u * 4u);

  // A split backward's W hands its gradients over by hand, into the same buffers.
  main.add(weight, torch::full({4}, 0.5, torch::TensorOptions().dtype(torch::kBFloat16)));
  CHECK(main.of(weight)[0].item<double>() == kAddends * kAddend + 0.5);
  main.zero();
  CHECK(main.of(weight).abs().sum().item<double>() == 0.0);
  CHECK(main.bytes() == 4u * 4u);

  // A weight larger than the slices the CPU adds in: every element summed, the last slice's too.
  const torch::Tensor large =
      torch::zeros({3, 100001}, torch::TensorOptions().dtype(torch::kBFloat16)).requires_grad_(true);
  stagecut::MainGradients large_main({large});
  for (int i = 0; i < 3; ++i) backwardOnce(large);
  CHECK(large_main.of(large).min().item<double>() == 3 * kAddend);
  CHECK(large_main.of(large).max().item<double>() == 3 * kAddend);
}

TEST_CASE("a weight no gradient reached gets a zero buffer only when a collective needs all",
          "[runtime][mixed-precision]") {
  const torch::Tensor used = bfloat16Weight();
  const torch::Tensor unused = bfloat16Weight();
  stagecut::MainGradients main({used, unused});
  backwardOnce(used);
  CHECK_FALSE(main.of(unused).defined());
  const std::vector<torch::Tensor> all = main.all();
  REQUIRE(all.size() == 2u);
  CHECK(all[1].scalar_type() == torch::kFloat32);
  CHECK(all[1].abs().sum().item<double>() == 0.0);
  CHECK(all[0][0].item<double>() == kAddend);
  CHECK(stagecut::needsMainGradients({used}));
  CHECK_FALSE(stagecut::needsMainGradients({torch::zeros({2}).requires_grad_(true)}));
}

TEST_CASE("adam-mixed keeps float32 masters and moments and leaves the bfloat16 weights as they were",
          "[runtime][mixed-precision]") {
  const torch::Tensor weight =
      torch::randn({8, 8}).to(torch::kBFloat16).requires_grad_(true);
  const torch::Tensor before = weight.detach().clone();
  stagecut::MainGradients main({weight});
  stagecut::StageOptimizer optimizer("adam-mixed", {weight}, &main);
  // The masters exist from the start: 4 bytes a parameter.
  CHECK(optimizer.stateBytes() == 64u * 4u);
  (weight.to(torch::kFloat32) * 3.0).sum().backward();
  optimizer.step();
  // Masters and two moments, 12 bytes a parameter, as the memory model's adam-mixed charges
  // (18 with the 2 of the weight and the 4 of its float32 gradient).
  CHECK(optimizer.stateBytes() == 64u * 12u);
  CHECK(main.bytes() == 64u * 4u);
  CHECK(torch::equal(weight.detach(), before));

  CHECK_THROWS_WITH(stagecut::checkRunnableOptimizer("adam-mixed", "float32"),
                    Contains("--optimizer adam-mixed: keeps float32 masters of bfloat16 or float16 weights"));
  CHECK_THROWS_WITH(stagecut::checkRunnableOptimizer("adam", "bfloat16"),
                    "--optimizer adam: a bfloat16 profile trains with float32 master weights and gradients, as "
                    "Megatron's --bf16 does; use --optimizer adam-mixed (its default)");
  CHECK_NOTHROW(stagecut::checkRunnableOptimizer("adam-mixed", "bfloat16"));
  CHECK_NOTHROW(stagecut::checkRunnableOptimizer("sgd", "float32"));
  CHECK(stagecut::defaultOptimizerFor("bfloat16") == "adam-mixed");
  CHECK(stagecut::defaultOptimizerFor("float32") == "adam");
  CHECK(stagecut::defaultGradTolerance("bfloat16") > stagecut::defaultGradTolerance("float32"));
}

namespace {

// The zoo's llama-tiny (embed, 2 blocks, head, loss) profiled in bfloat16 in one round and split
// [2, 3], in the files runValidationRank reads.
struct BFloat16LlamaSplit {
  stagecut::testing::TempDir dir;
  stagecut::Profile profile;
  stagecut::Partition partition;

  BFloat16LlamaSplit() {
    stagecut::ProfileRequest request;
    request.zoo.family = "llama";
    request.zoo.preset = "llama-tiny";
    request.zoo.seed = 5;
    request.dtype = "bfloat16";
    request.measure.microbatch_size = 2;
    request.measure.warmup_rounds = 0;
    request.measure.min_repeats = 1;
    request.measure.max_repeats = 1;
    profile = stagecut::runProfile(request);
    partition = stagecut::testing::makePartition({2, 3});
    stagecut::writeProfileFile(dir.file("p.json"), profile);
    stagecut::writePartitionFile(dir.file("s.json"), partition);
  }
};

// Runs every rank of `request` (2 stages x its replicas) on threads over one in-process world;
// rank 0's gathered outcomes.
std::vector<stagecut::RankOutcome> runRanks(const stagecut::ValidateRequest& request) {
  const int ranks = 2 * request.data_parallel;
  auto cluster = std::make_shared<stagecut::InProcessCluster>(2, request.data_parallel, std::chrono::milliseconds(60000));
  std::vector<std::vector<stagecut::RankOutcome>> returned(static_cast<std::size_t>(ranks));
  std::vector<std::string> failures(static_cast<std::size_t>(ranks));
  std::vector<std::thread> threads;
  for (int rank = 0; rank < ranks; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        stagecut::InProcessWorld world(cluster, rank);
        returned[static_cast<std::size_t>(rank)] = stagecut::runValidationRank(request, world);
      } catch (const std::exception& e) {
        failures[static_cast<std::size_t>(rank)] = e.what();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (const auto& failure : failures) REQUIRE(failure.empty());
  return returned[0];
}

}  // namespace

TEST_CASE("a bfloat16 llama split trains as its full batch does, within bfloat16's tolerance",
          "[runtime][mixed-precision][llama]") {
  stagecut::pinThreads(1);
  const BFloat16LlamaSplit split;
  REQUIRE(split.profile.run.dtype == "bfloat16");
  // zb-h1 twice: the second time with 2 data-parallel replicas, whose all-reduce sums the
  // float32 buffers.
  for (const auto& [schedule, replicas] : {std::pair<const char*, int>{"1f1b", 1}, {"zb-h1", 1}, {"zb-h1", 2}}) {
    INFO(schedule << " x " << replicas);
    stagecut::ValidateRequest request;
    request.data_parallel = replicas;
    request.profile_path = split.dir.file("p.json");
    request.partition_path = split.dir.file("s.json");
    request.schedule = schedule;
    request.microbatches = 4;
    request.steps = 1;
    request.optimizer = stagecut::defaultOptimizerFor("bfloat16");
    request.grad_tolerance = stagecut::defaultGradTolerance("bfloat16");
    // The in-process transport refuses a message whose type is not the receiver's: the
    // activations and their gradients go between the ranks as bfloat16.
    const std::vector<stagecut::RankOutcome> outcomes = runRanks(request);
    REQUIRE(outcomes.size() == static_cast<std::size_t>(2 * replicas));
    const auto report = stagecut::buildValidationReport(request, split.profile, split.partition, outcomes);
    CHECK(report.grad_pass);
    CHECK(report.grad_max_rel_diff < request.grad_tolerance);
    CHECK(report.loss_pipeline == Approx(report.loss_reference).epsilon(1e-2));
    for (const auto& rank : report.ranks) {
      // Each rank holds its bfloat16 weights, their float32 gradients and adam-mixed's state:
      // 18 bytes a parameter at least, whatever its activations.
      std::uint64_t params = 0;
      for (int i = rank.first_layer; i <= rank.last_layer; ++i) params += split.profile.layers[static_cast<std::size_t>(i)].params;
      CHECK(rank.measured_peak_bytes >= static_cast<std::int64_t>(18 * params));
      REQUIRE(rank.predicted_peak_parts.has_value());
      CHECK(rank.predicted_peak_parts->gradients == Approx(4.0 * static_cast<double>(params)));
      CHECK(rank.predicted_peak_parts->weights + rank.predicted_peak_parts->gradients +
                rank.predicted_peak_parts->optimizer ==
            Approx(18.0 * static_cast<double>(params)));
    }
  }
}

TEST_CASE("float32 buffers are freed with their MainGradients, and its hooks then leave .grad to autograd",
          "[runtime][mixed-precision]") {
  const torch::Tensor weight = bfloat16Weight();
  std::optional<c10::weak_intrusive_ptr<c10::StorageImpl>> buffer_storage;
  {
    stagecut::MainGradients main({weight});
    backwardOnce(weight);
    buffer_storage.emplace(main.of(weight).storage().getWeakStorageImpl());
    CHECK_FALSE(buffer_storage->expired());
  }
  // No cycle of accumulator, hook and state keeps the buffer alive.
  CHECK(buffer_storage->expired());
  backwardOnce(weight);
  REQUIRE(weight.grad().defined());
  CHECK(weight.grad()[0].item<double>() == kAddend);
}
