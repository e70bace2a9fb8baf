#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <thread>

#include "core/json_document.h"
#include "core/partition_json.h"
#include "core/profile_json.h"
#include "profiler/profile_request.h"
#include "profiler/torch_runtime.h"
#include "runtime/build_validation_report.h"
#include "runtime/in_process_transport.h"
#include "runtime/rank_device.h"
#include "runtime/rank_worker.h"
#include "tests/fault_transport.h"
#include "tests/quick_profile.h"
#include "tests/test_support.h"
#include "validation/validation_json.h"

using stagecut::RankOutcome;
using stagecut::ValidateRequest;
using stagecut::testing::Fault;

namespace {

// An MLP of 4 layers (fc.0-fc.2 and the loss) profiled in one round at 2 rows per microbatch and
// split [2, 2], in the files that runValidationRank reads.
struct TinySplit {
  stagecut::testing::TempDir dir;
  stagecut::Profile profile;
  stagecut::Partition partition;

  TinySplit() {
    profile = stagecut::testing::quickMlpProfile(3, 3);
    partition = stagecut::testing::makePartition({2, 2});
    stagecut::writeProfileFile(dir.file("p.json"), profile);
    stagecut::writePartitionFile(dir.file("s.json"), partition);
  }

  ValidateRequest request(const std::string& schedule, int replicas) const {
    ValidateRequest request;
    request.profile_path = dir.file("p.json");
    request.partition_path = dir.file("s.json");
    request.schedule = schedule;
    request.microbatches = 4;
    request.warmup_steps = 1;
    request.steps = 1;
    request.data_parallel = replicas;
    return request;
  }
};

struct InProcessRun {
  std::vector<std::vector<RankOutcome>> returned;  ///< what each rank's runValidationRank returned
  std::vector<std::string> failures;               ///< each rank's error, "" if none
};

// Runs every rank of `request` (2 stages x request.data_parallel) on its own thread over one
// in-process world, with `fault` on global rank `faulty_rank`.
InProcessRun runInProcess(const ValidateRequest& request, std::chrono::milliseconds timeout, int faulty_rank = -1,
                          Fault fault = {}) {
  const int stages = 2;
  const int ranks = stages * request.data_parallel;
  auto cluster = std::make_shared<stagecut::InProcessCluster>(stages, request.data_parallel, timeout);
  InProcessRun run;
  run.returned.resize(static_cast<std::size_t>(ranks));
  run.failures.resize(static_cast<std::size_t>(ranks));
  std::vector<std::thread> threads;
  for (int rank = 0; rank < ranks; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        stagecut::InProcessWorld world(cluster, rank);
        stagecut::testing::FaultWorld faulty(world, rank == faulty_rank ? fault : Fault{});
        run.returned[static_cast<std::size_t>(rank)] = stagecut::runValidationRank(request, faulty);
      } catch (const std::exception& e) {
        run.failures[static_cast<std::size_t>(rank)] = e.what();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  return run;
}

// What every validation must show: the gradients of the full batch, each rank where it belongs,
// and a measured step that is the span of the op records on the one clock.
void checkReport(const stagecut::ValidationReport& report, const std::vector<RankOutcome>& outcomes,
                 const ValidateRequest& request, const stagecut::Partition& partition) {
  const int stages = static_cast<int>(partition.stages.size());
  CHECK(report.grad_pass);
  CHECK(report.grad_max_rel_diff < request.grad_tolerance);
  CHECK(report.loss_pipeline == Approx(report.loss_reference).epsilon(1e-5));
  // In one process a 4 MiB message may take no measurably longer than 1 float: then no figure.
  CHECK((report.link_bandwidth_bytes_per_s > 0) == report.link_bandwidth_measurable);
  REQUIRE(report.ranks.size() == static_cast<std::size_t>(stages * request.data_parallel));
  for (std::size_t r = 0; r < report.ranks.size(); ++r) {
    const auto& rank = report.ranks[r];
    INFO("rank " << r);
    CHECK(rank.rank == static_cast<int>(r));
    CHECK(rank.stage == static_cast<int>(r) % stages);
    CHECK(rank.replica == static_cast<int>(r) / stages);
    CHECK(rank.first_layer == partition.stages[static_cast<std::size_t>(rank.stage)].first);
    CHECK(rank.last_layer == partition.stages[static_cast<std::size_t>(rank.stage)].last);
    CHECK(rank.grad_max_rel_diff < request.grad_tolerance);
    CHECK(rank.measured_forward_ms > 0);
    CHECK(rank.measured_backward_ms > 0);
    CHECK(rank.measured_busy_ms > 0);
    CHECK(rank.measured_busy_ms + rank.measured_allreduce_ms <= report.measured_step_median_ms * (1 + 1e-9));
  }
  REQUIRE(report.measured_step_ms.size() == 1);
  std::int64_t first_ns = INT64_MAX, last_ns = INT64_MIN;
  for (const auto& outcome : outcomes) {
    REQUIRE(outcome.steps.size() == 1);
    for (const auto& record : outcome.steps.front()) {
      CHECK(record.start_ns <= record.end_ns);
      first_ns = std::min(first_ns, record.start_ns);
      last_ns = std::max(last_ns, record.end_ns);
    }
  }
  CHECK(report.measured_step_median_ms > 0);
  CHECK(report.measured_step_median_ms == Approx(static_cast<double>(last_ns - first_ns) / 1e6));
  // The document validate prints reads back into a report that writes the same bytes.
  const std::string written = stagecut::toJsonText(stagecut::validationToJson(report));
  CHECK(stagecut::toJsonText(stagecut::validationToJson(
            stagecut::validationFromJson(nlohmann::json::parse(written), "validation.json"))) == written);
}

}  // namespace

TEST_CASE("a 2-stage validation runs in one process: probe, steps, gradient check, gather on rank 0",
          "[runtime][rank-worker]") {
  stagecut::pinThreads(1);
  const TinySplit split;
  ValidateRequest request = split.request("1f1b", 1);
  request.recompute = "full";
  const InProcessRun run = runInProcess(request, std::chrono::milliseconds(20000));
  for (const auto& failure : run.failures) REQUIRE(failure.empty());
  CHECK(run.returned[1].empty());
  const std::vector<RankOutcome>& outcomes = run.returned[0];
  REQUIRE(outcomes.size() == 2u);
  const auto report = stagecut::buildValidationReport(request, split.profile, split.partition, outcomes);
  checkReport(report, outcomes, request, split.partition);
  CHECK(report.replicas == 1);
  REQUIRE(report.recompute.has_value());
  CHECK(report.recompute->grad_max_rel_diff < request.grad_tolerance);
  CHECK(report.recompute->measured_step_median_ms > 0);
}

// Only a GPU can run this (hidden: scripts/gpu-check.sh runs it with "[cuda]"). The split's four
// ranks, 2 stages x 2 replicas, share GPU 0 through host copies; the gradients are the full
// batch's, and the environment says where the ranks ran and that they shared the GPU.
TEST_CASE("on a GPU the ranks of a split share it and train as the full batch does", "[runtime][cuda][.gpu]") {
  if (stagecut::visibleGpus().count == 0) {
    WARN("no GPU here: nothing to check");
    return;
  }
  stagecut::pinThreads(1);
  const TinySplit split;
  ValidateRequest request = split.request("zb-h1", 2);
  request.device = "cuda:0";
  const InProcessRun run = runInProcess(request, std::chrono::milliseconds(60000));
  for (const auto& failure : run.failures) REQUIRE(failure.empty());
  const std::vector<RankOutcome>& outcomes = run.returned[0];
  REQUIRE(outcomes.size() == 4u);
  const auto report = stagecut::buildValidationReport(request, split.profile, split.partition, outcomes);
  checkReport(report, outcomes, request, split.partition);
  for (const RankOutcome& outcome : outcomes) CHECK(outcome.environment.device == "cuda:0");
  REQUIRE(report.environment.has_value());
  CHECK_THAT(report.environment->warnings.front(), Catch::Matchers::Contains("shared GPU: 4 ranks ran on cuda:0"));
}

TEST_CASE("a 2 x 2 validation (2 stages, 2 data-parallel replicas) runs in one process",
          "[runtime][rank-worker][data-parallel]") {
  stagecut::pinThreads(1);
  const TinySplit split;
  const ValidateRequest request = split.request("zb-h1", 2);
  const InProcessRun run = runInProcess(request, std::chrono::milliseconds(20000));
  for (const auto& failure : run.failures) REQUIRE(failure.empty());
  for (int rank = 1; rank < 4; ++rank) CHECK(run.returned[static_cast<std::size_t>(rank)].empty());
  const std::vector<RankOutcome>& outcomes = run.returned[0];
  REQUIRE(outcomes.size() == 4u);
  const auto report = stagecut::buildValidationReport(request, split.profile, split.partition, outcomes);
  checkReport(report, outcomes, request, split.partition);
  CHECK(report.replicas == 2);
  CHECK(report.replica_link_bandwidth_bytes_per_s > 0);
  REQUIRE(report.measured_replicas.size() == 2u);
  for (std::size_t r = 0; r < outcomes.size(); ++r) {
    INFO("rank " << r);
    // zb-h1 splits W off B, and every rank ends its step with the gradients' all-reduce.
    CHECK(report.ranks[r].measured_weight_ms > 0);
    CHECK(outcomes[r].steps.front().back().op.kind == stagecut::OpKind::kAllReduce);
    CHECK(report.ranks[r].measured_allreduce_ms > 0);
  }
}

TEST_CASE("a rank that fails mid-step ends its peer's wait with the op and the rank named",
          "[runtime][rank-worker][errors]") {
  stagecut::pinThreads(1);
  const TinySplit split;
  Fault fault;
  fault.kind = Fault::Kind::kThrow;
  fault.step = 1;  // the first measured step, after the warm-up
  const InProcessRun run = runInProcess(split.request("1f1b", 1), std::chrono::milliseconds(1000), 1, fault);
  CHECK(run.failures[1] == "rank 1: injected fault at step 1");
  CHECK(run.failures[0] == "rank 0: timed out waiting for B(0)'s gradient from rank 1");
  CHECK(run.returned[0].empty());
}
