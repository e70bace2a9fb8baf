// Where validate --device puts each rank, against hand-made hosts with 0 to 4 GPUs, and the
// environment's verdict on ranks that share a GPU or run on another device than the profile's.
#include <catch2/catch.hpp>

#include "core/error.h"
#include "validation/rank_devices.h"
#include "validation/run_environment.h"

namespace {

using stagecut::planRankDevices;
using stagecut::VisibleGpus;
using Catch::Matchers::Contains;
using Strings = std::vector<std::string>;

VisibleGpus gpus(int count) { return {count, count == 0 ? "no CUDA device" : ""}; }

std::string refusal(const std::string& requested, const std::string& profile_kind, int ranks, int count) {
  try {
    planRankDevices(requested, profile_kind, ranks, gpus(count));
  } catch (const stagecut::Error& e) {
    CHECK(e.kind() == stagecut::ErrorKind::kInput);
    return e.what();
  }
  return "";
}

stagecut::RankEnvironment rankOn(int rank, const std::string& device) {
  stagecut::RankEnvironment environment;
  environment.rank = rank;
  environment.host = "host1";
  environment.usable_cores = 16;
  environment.threads = 1;
  environment.device = device;
  return environment;
}

}  // namespace

TEST_CASE("auto runs on the kind of device the profile was measured on", "[validation][devices]") {
  CHECK(planRankDevices("auto", "cpu", 3, gpus(2)).devices == Strings{"cpu", "cpu", "cpu"});
  CHECK(planRankDevices("auto", "cuda", 2, gpus(2)).devices == Strings{"cuda:0", "cuda:1"});
  // A profile of an older stagecut, or another tool's, names no kind: the CPU, as before GPUs.
  CHECK(planRankDevices("auto", "", 2, gpus(1)).devices == Strings{"cpu", "cpu"});
  CHECK_THAT(refusal("auto", "cuda", 2, 0), Contains("--device auto (the profile was measured on cuda)") &&
                                                 Contains("no GPU (no CUDA device)") && Contains("--device cpu"));
}

TEST_CASE("cuda gives each rank its own GPU while there are enough, then shares them in turn", "[validation][devices]") {
  const auto own = planRankDevices("cuda", "cuda", 4, gpus(4));
  CHECK(own.devices == Strings{"cuda:0", "cuda:1", "cuda:2", "cuda:3"});
  CHECK_FALSE(own.shares_a_gpu);
  const auto shared = planRankDevices("cuda", "cuda", 3, gpus(2));
  CHECK(shared.devices == Strings{"cuda:0", "cuda:1", "cuda:0"});
  CHECK(shared.shares_a_gpu);
  const auto one = planRankDevices("cuda", "cpu", 2, gpus(1));
  CHECK(one.devices == Strings{"cuda:0", "cuda:0"});
  CHECK(one.shares_a_gpu);
}

TEST_CASE("cuda:K puts every rank on GPU K, and only a GPU the host has", "[validation][devices]") {
  const auto pinned = planRankDevices("cuda:1", "cuda", 2, gpus(2));
  CHECK(pinned.devices == Strings{"cuda:1", "cuda:1"});
  CHECK(pinned.shares_a_gpu);
  CHECK_FALSE(planRankDevices("cuda:3", "cuda", 1, gpus(4)).shares_a_gpu);
  CHECK_THAT(refusal("cuda:2", "cuda", 2, 2), Contains("shows 2 GPU(s), cuda:0 to cuda:1"));
  CHECK_THAT(refusal("cuda:0", "cuda", 2, 0), Contains("--device cuda:0: this machine offers no GPU"));
  CHECK_THAT(refusal("cuda", "cuda", 2, 0), Contains("--device cuda: this machine offers no GPU"));
  for (const char* wrong : {"gpu", "cuda:", "cuda:x", "cuda:-1", "CUDA", "cuda:99999"}) {
    CHECK_THAT(refusal(wrong, "cuda", 2, 2), Contains(std::string("--device ") + wrong + ": unknown device"));
  }
  // The CPU needs no GPU.
  CHECK(planRankDevices("cpu", "cuda", 2, gpus(0)).devices == Strings{"cpu", "cpu"});
}

TEST_CASE("ranks sharing a GPU, or running on another kind than the profile's, void the run", "[validation][devices]") {
  const auto own = stagecut::assessEnvironment(std::nullopt, 1, {rankOn(0, "cuda:0"), rankOn(1, "cuda:1")}, {}, "cuda");
  CHECK(own.trusted());
  const auto shared = stagecut::assessEnvironment(std::nullopt, 1, {rankOn(0, "cuda:0"), rankOn(1, "cuda:0")}, {}, "cuda");
  REQUIRE(shared.warnings.size() == 1);
  CHECK_THAT(shared.warnings[0], Contains("shared GPU: 2 ranks ran on cuda:0 of host1") &&
                                     Contains("give each rank its own GPU"));
  // The same ordinal on two hosts is two GPUs.
  auto elsewhere = rankOn(1, "cuda:0");
  elsewhere.host = "host2";
  CHECK(stagecut::assessEnvironment(std::nullopt, 1, {rankOn(0, "cuda:0"), elsewhere}, {}, "cuda").trusted());
  const auto mismatch = stagecut::assessEnvironment(std::nullopt, 1, {rankOn(0, "cpu"), rankOn(1, "cuda:1")}, {}, "cpu");
  REQUIRE(mismatch.warnings.size() == 1);
  CHECK_THAT(mismatch.warnings[0], Contains("the ranks ran on cuda (rank 1 on cuda:1), the profile was measured on cpu") &&
                                       Contains("validate with --device cpu"));
  // Without the profile's kind, nothing is claimed.
  CHECK(stagecut::assessEnvironment(std::nullopt, 1, {rankOn(0, "cuda:0")}).trusted());
}

TEST_CASE("a rank's device reads back, and older documents were on the CPU", "[validation][devices]") {
  const auto written = stagecut::rankEnvironmentToJson(rankOn(3, "cuda:2"));
  CHECK(written.at("device") == "cuda:2");
  CHECK(stagecut::rankEnvironmentFromJson(written, "t.json") == rankOn(3, "cuda:2"));
  auto older = written;
  older.erase("device");
  older.erase("transport");
  CHECK(stagecut::rankEnvironmentFromJson(older, "t.json").device == "cpu");
  CHECK(stagecut::rankEnvironmentFromJson(older, "t.json").transport == "gloo");
  auto over_nccl = rankOn(1, "cuda:1");
  over_nccl.transport = "nccl";
  CHECK(stagecut::rankEnvironmentFromJson(stagecut::rankEnvironmentToJson(over_nccl), "t.json") == over_nccl);
}

TEST_CASE("the backend is NCCL exactly where every rank has a GPU of its own and LibTorch has NCCL",
          "[validation][devices][backend]") {
  using stagecut::choosePipelineBackend;
  const auto own = planRankDevices("cuda", "cuda", 2, gpus(2));
  const auto shared = planRankDevices("cuda", "cuda", 3, gpus(2));
  const auto cpu = planRankDevices("cpu", "cuda", 2, gpus(2));
  REQUIRE_FALSE(own.shares_a_gpu);
  REQUIRE(shared.shares_a_gpu);
  CHECK(choosePipelineBackend("auto", own, true) == "nccl");
  CHECK(choosePipelineBackend("auto", own, false) == "gloo");
  CHECK(choosePipelineBackend("auto", shared, true) == "gloo");
  CHECK(choosePipelineBackend("auto", cpu, true) == "gloo");
  CHECK(choosePipelineBackend("gloo", own, true) == "gloo");
  CHECK(choosePipelineBackend("nccl", own, true) == "nccl");
  auto refused = [](const std::string& requested, const stagecut::RankDevices& plan, bool nccl) {
    try {
      choosePipelineBackend(requested, plan, nccl);
    } catch (const stagecut::Error& e) {
      CHECK(e.kind() == stagecut::ErrorKind::kInput);
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK_THAT(refused("nccl", cpu, true), Contains("--backend nccl: the ranks run on the CPU") && Contains("--backend gloo"));
  CHECK_THAT(refused("nccl", shared, true), Contains("3 ranks share this machine's GPUs") && Contains("one rank per GPU"));
  CHECK_THAT(refused("nccl", own, false), Contains("has no NCCL") && Contains("TORCH=pip"));
  CHECK_THAT(refused("mpi", own, true), Contains("--backend mpi: unknown backend; use auto, gloo or nccl"));
}
