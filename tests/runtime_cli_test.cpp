#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>
#include <algorithm>

#include "core/json_document.h"
#include "core/profile_json.h"
#include "runtime/rank_device.h"
#include "tests/test_support.h"

using stagecut::testing::CommandResult;
using stagecut::testing::runStagecut;
using stagecut::testing::TempDir;
using Catch::Matchers::Contains;

TEST_CASE("validate runs a 2-rank pipeline whose gradients equal the full batch's", "[runtime][cli]") {
  const TempDir dir;
  stagecut::testing::writeTinyGptSplit(dir);
  for (const char* schedule : {"1f1b", "zb-h1"}) {
    INFO(schedule);
    const CommandResult result = runStagecut("validate " + dir.file("p.json") + " --partition " + dir.file("s.json") +
                                             " --schedule " + schedule + " --microbatches 4 --steps 2 --json --trace " +
                                             dir.file("trace.json"));
    REQUIRE(result.exit_code == 0);
    const auto report = nlohmann::json::parse(result.out);
    CHECK(report["format"] == "stagecut.validation/1");
    CHECK(report["grad_check"] == "pass");
    CHECK(report["grad_max_rel_diff"].get<double>() < 1e-4);
    CHECK(report["ranks"].size() == 2u);
    CHECK(report["measured_step_ms"].get<double>() > 0);
    CHECK(report["predicted_step_ms"].get<double>() > 0);
    const auto trace = nlohmann::json::parse(stagecut::readTextFile(dir.file("trace.json")));
    CHECK(trace.dump().find("measured " + std::string(schedule)) != std::string::npos);
    // Each rank's median ops: predicted from its layers' medians (the whole backward under 1f1b;
    // B and W as the profile timed them, zb-h1's way, under zb-h1), measured from the run.
    const stagecut::Profile profile = stagecut::readProfileFile(dir.file("p.json"));
    REQUIRE(profile.run.weightTimedAfterInput());
    for (const auto& rank : report["ranks"]) {
      double forward = 0, backward = 0, input = 0, weight = 0;
      for (int i = rank["first"].get<int>(); i <= rank["last"].get<int>(); ++i) {
        const stagecut::LayerCost& layer = profile.layers[static_cast<std::size_t>(i)];
        forward += layer.forward_ms.median;
        backward += layer.backward_ms.median;
        input += layer.backward_input_ms->median;
        weight += layer.backward_weight_ms->median;
      }
      const auto& ops = rank["op_median_ms"];
      CHECK(ops["F"]["predicted"].get<double>() == Approx(forward));
      if (std::string(schedule) == "zb-h1") {
        CHECK(ops["B"]["predicted"].get<double>() == Approx(input));
        CHECK(ops["W"]["predicted"].get<double>() == Approx(weight));
      } else {
        CHECK(ops["B"]["predicted"].get<double>() == Approx(backward));
      }
      CHECK((ops["W"]["predicted"].get<double>() > 0) == (std::string(schedule) == "zb-h1"));
      CHECK(ops["F"]["measured"].get<double>() > 0);
      CHECK(ops["B"]["measured"].get<double>() > 0);
    }
  }
  const CommandResult text = runStagecut("validate " + dir.file("p.json") + " --partition " + dir.file("s.json") +
                                         " --schedule zb-h1 --microbatches 4 --steps 1");
  REQUIRE(text.exit_code == 0);
  CHECK_THAT(text.out, Contains("median op per rank (one microbatch):"));
  CHECK_THAT(text.out, Contains("F ms") && Contains("B ms") && Contains("W ms"));
}

TEST_CASE("validate runs interleaved 1F1B, ZB-V and DualPipeV splits on 2 ranks, gradients equal to the full batch's",
          "[runtime][cli][chunks]") {
  const TempDir dir;
  stagecut::testing::writeTinyGptSplit(dir);
  for (const char* schedule : {"interleaved-1f1b", "zb-v", "dualpipe-v"}) {
    INFO(schedule);
    const bool v_shape = std::string(schedule) != "interleaved-1f1b";
    const std::string split = dir.file(std::string(schedule) + ".json");
    CommandResult result = runStagecut("partition " + dir.file("p.json") + " --stages 2 --schedule " + schedule +
                                       (v_shape ? "" : " --chunks 2") +
                                       " --microbatches 4 --any-split -o " + split);
    REQUIRE(result.exit_code == 0);
    result = runStagecut("validate " + dir.file("p.json") + " --partition " + split + " --schedule " + schedule +
                         " --microbatches 4 --steps 1 --json");
    REQUIRE(result.exit_code == 0);
    const auto report = nlohmann::json::parse(result.out);
    CHECK(report["grad_check"] == "pass");
    CHECK(report["stages"] == 2);
    CHECK(report["chunks_per_rank"] == 2);
    const auto partition = nlohmann::json::parse(stagecut::readTextFile(split));
    for (const auto& rank : report["ranks"]) {
      REQUIRE(rank["chunks"].size() == 2u);
      // Rank r's chunks are the split's stages r and r + 2 in loop order, r and 3 - r in a V.
      const int r = rank["rank"].get<int>();
      const int second = v_shape ? 3 - r : r + 2;
      CHECK(rank["chunks"][0][0] == partition["stages"][r]["first"]);
      CHECK(rank["chunks"][1][1] == partition["stages"][second]["last"]);
      // Each op names its chunk: [kind, microbatch, start, end, chunk].
      for (const auto& op : report["timeline"]["measured"][static_cast<std::size_t>(r)]) CHECK(op.size() == 5u);
    }
    result = runStagecut("validate " + dir.file("p.json") + " --partition " + split + " --schedule " + schedule +
                         " --microbatches 4 --steps 1");
    REQUIRE(result.exit_code == 0);
    CHECK_THAT(result.out, Contains("2 ranks x 2 chunks"));
  }
  // DualPipeV's shape is refused before any rank starts.
  const CommandResult few = runStagecut("validate " + dir.file("p.json") + " --partition " + dir.file("dualpipe-v.json") +
                                        " --schedule dualpipe-v --microbatches 3 --steps 1");
  CHECK(few.exit_code == 2);
  CHECK_THAT(few.err, Contains("--microbatches 3: dualpipe-v needs at least 2N = 4 microbatches on 2 stages"));
}

TEST_CASE("validate runs a bfloat16 llama split over Gloo with float32 gradients and adam-mixed by default",
          "[runtime][cli][mixed-precision]") {
  const TempDir dir;
  REQUIRE(runStagecut("profile --model llama --preset llama-tiny --dtype bf16 --microbatch 2" +
                      stagecut::testing::kQuickProfileFlags + " -o " + dir.file("p.json"))
              .exit_code == 0);
  REQUIRE(runStagecut("partition " + dir.file("p.json") + " --stages 2 --microbatches 4 --optimizer adam-mixed -o " +
                      dir.file("s.json"))
              .exit_code == 0);
  const std::string files = dir.file("p.json") + " --partition " + dir.file("s.json");
  const CommandResult result = runStagecut("validate " + files + " --microbatches 4 --steps 1 --json");
  REQUIRE(result.exit_code == 0);
  const auto report = nlohmann::json::parse(result.out);
  CHECK(report["optimizer"] == "adam-mixed");
  CHECK(report["grad_check"] == "pass");
  CHECK(report["grad_tolerance"].get<double>() == 3e-2);
  CHECK(report["grad_max_rel_diff"].get<double>() < 3e-2);

  // A float32 optimizer on bfloat16 weights, and adam-mixed on float32 ones, before any rank.
  CommandResult refused = runStagecut("validate " + files + " --optimizer adam");
  CHECK(refused.exit_code == 2);
  CHECK(refused.err == "stagecut: --optimizer adam: a bfloat16 profile trains with float32 master weights and "
                       "gradients, as Megatron's --bf16 does; use --optimizer adam-mixed (its default)\n");
  stagecut::testing::writeTinyGptSplit(dir);
  refused = runStagecut("validate " + files + " --optimizer adam-mixed");
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.err, Contains("--optimizer adam-mixed: keeps float32 masters of bfloat16 or float16 weights, "
                                   "and this profile's weights are float32"));
}

TEST_CASE("validate rejects requests it cannot run before starting ranks", "[runtime][cli][errors]") {
  const TempDir dir;
  stagecut::testing::writeTinyGptSplit(dir);
  const std::string files = dir.file("p.json") + " --partition " + dir.file("s.json");
  // An N-stage split cannot run as chunks, nor chunks under an N-stage schedule.
  CommandResult result = runStagecut("validate " + files + " --schedule interleaved-1f1b --microbatches 4");
  CHECK(result.exit_code == 2);
  CHECK(result.err == "stagecut: --schedule interleaved-1f1b: runs several model chunks per rank, and " +
                          dir.file("s.json") + " has one stage per rank; validate runs a split made for it (stagecut "
                          "partition --schedule interleaved-1f1b --chunks 2), or use gpipe, 1f1b or zb-h1\n");
  result = runStagecut("validate " + files + " --schedule zb-v --microbatches 4");
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.err, Contains("(stagecut partition --schedule zb-v)"));
  result = runStagecut("partition " + dir.file("p.json") +
                       " --stages 2 --chunks 2 --schedule interleaved-1f1b --microbatches 4 --any-split -o " +
                       dir.file("chunks.json"));
  REQUIRE(result.exit_code == 0);
  const std::string chunked = dir.file("p.json") + " --partition " + dir.file("chunks.json") + " --microbatches 4";
  for (const char* schedule : {"1f1b", "zb-v"}) {
    result = runStagecut("validate " + chunked + " --schedule " + schedule);
    CHECK(result.exit_code == 2);
    CHECK(result.err == "stagecut: --schedule " + std::string(schedule) + ": " + dir.file("chunks.json") +
                            " places 2 chunks on each rank in loop order, which " + schedule +
                            " does not run; use --schedule interleaved-1f1b\n");
  }
  result = runStagecut("validate " + files + " --steps 0");
  CHECK(result.exit_code == 2);
  CHECK(result.err == "stagecut: --steps 0: use 1 to 100000 measured steps\n");
  result = runStagecut("validate " + files + " --schedule 1f1");
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.err, Contains("did you mean '1f1b'?"));
  result = runStagecut("validate " + files + " --device cuda:x");
  CHECK(result.exit_code == 2);
  CHECK(result.err == "stagecut: --device cuda:x: unknown device; use auto, cpu, cuda or cuda:K (K a GPU number, "
                      "e.g. cuda:0)\n");
  result = runStagecut("validate " + files + " --backend mpi");
  CHECK(result.exit_code == 2);
  CHECK(result.err == "stagecut: --backend mpi: unknown backend; use auto, gloo or nccl\n");
  result = runStagecut("validate " + files + " --device cpu --backend nccl");
  CHECK(result.exit_code == 2);
  CHECK(result.err == "stagecut: --backend nccl: the ranks run on the CPU, and NCCL carries tensors between GPUs; "
                      "use --device cuda, or --backend gloo\n");
}

TEST_CASE("validate refuses a split whose stages' predicted peaks exceed this machine's memory, before ranks start",
          "[runtime][cli][errors][memory]") {
  const TempDir dir;
  stagecut::testing::writeTinyGptSplit(dir);
  // The profile's first block says it keeps 4 PiB a microbatch: stage 0 cannot hold one.
  nlohmann::json document = nlohmann::json::parse(stagecut::readTextFile(dir.file("p.json")));
  document["layers"][1]["activation_bytes"] = std::uint64_t{1} << 52;
  std::ofstream(dir.file("big.json")) << document.dump();
  const CommandResult result = runStagecut("validate " + dir.file("big.json") + " --partition " + dir.file("s.json"));
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.err, Contains("stagecut: validate: stage 0 (layers 0-") &&
                             Contains(" at its predicted peak, and the 2 ranks on cpu ") &&
                             Contains("available; partition for more stages"));
  CHECK(std::count(result.err.begin(), result.err.end(), '\n') == 1);
}

TEST_CASE("validate --device cuda without a GPU is one line before any rank starts", "[runtime][cli][errors][cuda]") {
  if (stagecut::visibleGpus().count > 0) {
    WARN("this machine has a GPU: the refusal without one is not tested here");
    return;
  }
  const TempDir dir;
  stagecut::testing::writeTinyGptSplit(dir);
  const std::string files = dir.file("p.json") + " --partition " + dir.file("s.json");
  for (const char* device : {"cuda", "cuda:0"}) {
    const CommandResult result = runStagecut("validate " + files + " --device " + device);
    INFO(result.err);
    CHECK(result.exit_code == 2);
    CHECK(result.out.empty());
    CHECK(std::count(result.err.begin(), result.err.end(), '\n') == 1);
    CHECK_THAT(result.err, Contains(std::string("stagecut: --device ") + device + ": this machine offers no GPU") &&
                               Contains("validate with --device cpu"));
  }
}

TEST_CASE("validate --recompute full runs the checkpointed steps beside the plain ones", "[runtime][cli][recompute]") {
  const TempDir dir;
  stagecut::testing::writeTinyGptSplit(dir);
  const CommandResult result = runStagecut("validate " + dir.file("p.json") + " --partition " + dir.file("s.json") +
                                           " --microbatches 4 --steps 2 --recompute full --json");
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  const auto report = nlohmann::json::parse(result.out);
  CHECK(report["grad_check"] == "pass");
  const auto& recompute = report["recompute"];
  CHECK(recompute["mode"] == "full");
  CHECK(recompute["grad_max_rel_diff"].get<double>() < 1e-4);
  CHECK(recompute["measured_step_ms"].get<double>() > 0);
  // The prediction adds each stage's forward again to its backward.
  CHECK(recompute["predicted_step_ms"].get<double>() > report["predicted_step_ms"].get<double>());
  REQUIRE(recompute["ranks"].size() == 2u);
  for (const auto& rank : recompute["ranks"]) {
    CHECK(rank["peak_memory_bytes"].get<std::int64_t>() > 0);
    CHECK(rank["predicted_peak_memory_bytes"].get<std::uint64_t>() > 0);
  }
  const CommandResult text = runStagecut("validate " + dir.file("p.json") + " --partition " + dir.file("s.json") +
                                         " --microbatches 4 --steps 1 --recompute full");
  REQUIRE(text.exit_code == 0);
  CHECK_THAT(text.out, Contains("activation recomputation (--recompute full)"));
  const CommandResult bad = runStagecut("validate " + dir.file("p.json") + " --partition " + dir.file("s.json") +
                                        " --recompute some");
  CHECK(bad.exit_code == 2);
  CHECK(bad.err == "stagecut: --recompute some: validate runs none or full (every stage checkpointed)\n");
}

TEST_CASE("validate --data-parallel 2 runs 2 x 2 ranks whose averaged gradients equal the full batch's",
          "[runtime][cli][data-parallel]") {
  const TempDir dir;
  stagecut::testing::writeTinyGptSplit(dir);
  const CommandResult result = runStagecut("validate " + dir.file("p.json") + " --partition " + dir.file("s.json") +
                                           " --microbatches 4 --steps 2 --data-parallel 2 --json");
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  const auto report = nlohmann::json::parse(result.out);
  CHECK(report["grad_check"] == "pass");
  CHECK(report["data_parallel"] == 2);
  REQUIRE(report["ranks"].size() == 4u);
  for (int r = 0; r < 4; ++r) {
    CHECK(report["ranks"][r]["stage"] == r % 2);
    CHECK(report["ranks"][r]["replica"] == r / 2);
  }
  CHECK(report["replica_link_bandwidth_bytes_per_s"].get<double>() > 0);
  // The all-reduce is its own op, last on every rank, in both timelines.
  for (const char* timeline : {"predicted", "measured"}) {
    for (const auto& rank : report["timeline"][timeline]) CHECK(rank.back()[0] == "A");
  }
  CHECK(report["timeline"]["measured_replicas"].size() == 2u);
  const CommandResult bad = runStagecut("validate " + dir.file("p.json") + " --partition " + dir.file("s.json") +
                                        " --data-parallel 0");
  CHECK(bad.exit_code == 2);
  CHECK(bad.err == "stagecut: --data-parallel 0: use 1 to 4096 replicas\n");
  const CommandResult many = runStagecut("validate " + dir.file("p.json") + " --partition " + dir.file("s.json") +
                                         " --data-parallel 40");
  CHECK(many.exit_code == 2);
  CHECK(many.err == "stagecut: --data-parallel 40: 2 stages x 40 replicas = 80 processes on this machine, more "
                    "than 64; use fewer replicas, or start the ranks with torchrun\n");
}

TEST_CASE("validate --microbatch-size runs one size of a multi-size profile", "[runtime][cli][sizes]") {
  const TempDir dir;
  const CommandResult profile = runStagecut(
      "profile --model gpt --preset gpt-tiny --layers 2 --seq 16 --vocab 256 --microbatch 1,2 --warmup 0 "
      "--min-repeats 1 --max-repeats 1 -o " + dir.file("p.json"));
  REQUIRE(profile.exit_code == 0);
  REQUIRE(runStagecut("partition " + dir.file("p.json") + " --stages 2 --microbatches 2 --microbatch-size 1 -o " +
                      dir.file("s.json"))
              .exit_code == 0);
  const CommandResult result = runStagecut("validate " + dir.file("p.json") + " --partition " + dir.file("s.json") +
                                           " --microbatch-size 1 --microbatches 2 --steps 1 --json");
  REQUIRE(result.exit_code == 0);
  const auto report = nlohmann::json::parse(result.out);
  CHECK(report["microbatch_size"] == 1);
  CHECK(report["grad_check"] == "pass");
  const CommandResult unmeasured = runStagecut("validate " + dir.file("p.json") + " --partition " +
                                               dir.file("s.json") + " --microbatch-size 3 --microbatches 2");
  CHECK(unmeasured.exit_code == 2);
  CHECK(unmeasured.err == "stagecut: " + dir.file("p.json") + ": microbatch size 3 was not measured; the profile has "
                                                             "sizes 1,2 (add it with profile --microbatch)\n");
}

TEST_CASE("validate refuses bad numbers and torchrun variables before any rank connects, exit 2",
          "[runtime][cli][errors]") {
  const TempDir dir;
  stagecut::testing::writeTinyGptSplit(dir);
  const std::string files = dir.file("p.json") + " --partition " + dir.file("s.json");
  // (flags, environment, the one line expected). The environment makes this process a rank
  // started by torchrun: it must check everything a launcher would, and its variables too.
  const std::tuple<std::string, std::string, std::string> cases[] = {
      {"--timeout inf", "", "--timeout inf: must be a finite number of seconds above 0 and at most 86400"},
      {"--timeout nan", "", "--timeout nan: must be a finite number of seconds above 0 and at most 86400"},
      {"--grad-tolerance -1", "", "--grad-tolerance -1: must be a finite number of relative difference above 0 and at most 1"},
      {"--seed -1", "", "--seed -1: a seed is a whole number from 0 to 18446744073709551615, in digits"},
      {"--microbatches 0", "", "--microbatches 0: use 1 to 100000 microbatches per step"},
      {"--microbatches 100001", "", "--microbatches 100001: use 1 to 100000 microbatches per step"},
      {"--data-parallel 0", "", "--data-parallel 0: use 1 to 4096 replicas"},
      {"", "RANK=2 WORLD_SIZE=2", "RANK=2: must be this process's rank, 0 to 1 with WORLD_SIZE=2"},
      {"", "RANK=5 WORLD_SIZE=2", "RANK=5: must be this process's rank, 0 to 1 with WORLD_SIZE=2"},
      {"", "RANK=-1 WORLD_SIZE=2", "RANK=-1: must be this process's rank, 0 to 1 with WORLD_SIZE=2"},
      {"", "RANK=one WORLD_SIZE=2", "RANK=one: must be this process's rank, 0 to 1 with WORLD_SIZE=2"},
      {"", "RANK=0", "WORLD_SIZE is not set; must be the number of ranks, 1 to 65536, as torchrun sets it"},
      {"", "RANK=0 WORLD_SIZE=2 MASTER_PORT=70000", "MASTER_PORT=70000: must be rank 0's port, 1 to 65535"},
      {"", "RANK=0 WORLD_SIZE=3",
       "WORLD_SIZE=3: the partition runs on 2 stages x 1 replica(s) = 2 ranks; start 2 ranks, or change "
       "--data-parallel"},
      {"--timeout 0", "RANK=1 WORLD_SIZE=2", "--timeout 0: must be a finite number of seconds above 0 and at most 86400"},
      // 1F1B's 2 x 100000 x 2 ops, predicted and measured, plain and recomputed.
      {"--microbatches 100000 --recompute full --trace " + dir.file("t.json"), "",
       "--trace " + dir.file("t.json") + ": the trace would hold 1600000 ops, over the 1000000 one trace holds (one "
       "event each, about 140 MB); validate fewer --microbatches, or leave out --trace"},
  };
  for (const auto& [flags, environment, message] : cases) {
    INFO(flags << " with " << environment);
    const auto start = std::chrono::steady_clock::now();
    const CommandResult result = runStagecut("validate " + files + " " + flags, environment);
    CHECK(result.exit_code == 2);
    CHECK(result.err == "stagecut: " + message + "\n");
    // Refused before any wait: no rank ever waited for a peer.
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(20));
  }
}

TEST_CASE("validate refuses a profile whose model.config describes no buildable model before ranks start",
          "[runtime][cli][errors]") {
  const TempDir dir;
  stagecut::testing::writeTinyGptSplit(dir);
  const auto withConfig = [&](const std::string& key, const nlohmann::json& value) {
    nlohmann::json profile = nlohmann::json::parse(stagecut::readTextFile(dir.file("p.json")));
    profile["model"]["config"][key] = value;
    dir.write("bad.json", stagecut::toJsonText(profile));
    return runStagecut("validate " + dir.file("bad.json") + " --partition " + dir.file("s.json"));
  };
  const std::string bad = dir.file("bad.json");
  stagecut::testing::checkInputError(
      withConfig("heads", 5), bad + ": model.config describes no model stagecut can build (--hidden 128 is not "
                                    "divisible by --heads 5; pick a head count that divides the width); profile the "
                                    "model again");
  stagecut::testing::checkInputError(
      withConfig("hidden", 65536 * 2), bad + ": model.config describes no model stagecut can build (--hidden 131072: "
                                             "at most 65536 for a zoo model; choose a smaller size); profile the model "
                                             "again");
  stagecut::testing::checkInputError(
      withConfig("hidden", "wide"), bad + ": model.config field \"hidden\" must be a whole number from 1 to 1073741824, "
                                          "got \"wide\"; profile the model again");
  stagecut::testing::checkInputError(
      withConfig("seed", -3), bad + ": model.config field \"seed\" must be a whole number 0 or more, got -3; profile "
                                    "the model again");
}

TEST_CASE("validate refuses a profile whose layers are not the rebuilt model's, before any rank starts",
          "[runtime][cli][errors]") {
  const TempDir dir;
  stagecut::testing::writeTinyGptSplit(dir);
  const nlohmann::json original = nlohmann::json::parse(stagecut::readTextFile(dir.file("p.json")));
  const auto nameOf = [&](std::size_t i) { return original["layers"][i]["name"].get<std::string>(); };
  const std::size_t last = original["layers"].size() - 1;
  const std::string bad = dir.file("bad.json");
  const auto withNames = [&](std::size_t i, const std::string& name_i, std::size_t j, const std::string& name_j) {
    nlohmann::json profile = original;
    profile["layers"][i]["name"] = name_i;
    profile["layers"][j]["name"] = name_j;
    dir.write("bad.json", stagecut::toJsonText(profile));
    return runStagecut("validate " + bad + " --partition " + dir.file("s.json") + " --microbatches 2 --steps 1");
  };
  const auto refusal = [&](std::size_t i, const std::string& profiled) {
    return bad + ": layer " + std::to_string(i) + " of the rebuilt model is \"" + nameOf(i) + "\", the profile's \"" +
           profiled + "\"; profile the model again";
  };
  // Exit 2 and the launcher's own line: a rank's failure would be exit 1, "rank N ...".
  stagecut::testing::checkInputError(withNames(1, nameOf(2), 2, nameOf(1)), refusal(1, nameOf(2)));
  stagecut::testing::checkInputError(withNames(0, nameOf(last), last, nameOf(0)), refusal(0, nameOf(last)));
  stagecut::testing::checkInputError(withNames(last, "block.99", last, "block.99"), refusal(last, "block.99"));
  CHECK(dir.list() == std::vector<std::string>{"bad.json", "p.json", "s.json"});
}

namespace {

// The most bytes any rank of a validate --json run held, and the partition's largest stage.
double largestMeasuredPeak(const nlohmann::json& report) {
  double most = 0;
  for (const auto& rank : report["ranks"]) most = std::max(most, rank["peak_memory_bytes"].get<double>());
  return most;
}

double largestPredictedStage(const std::string& partition_path) {
  double most = 0;
  // The document outlives the loop: operator[] of a temporary would not.
  const auto document = nlohmann::json::parse(stagecut::readTextFile(partition_path));
  for (const auto& stage : document["stages"]) {
    most = std::max(most, stage["memory_bytes"].get<double>());
  }
  return most;
}

// Every layer costs the same (1 ms forward, 1 ms input-grad, 1 ms weight-grad): which split is
// fastest then follows from the stage speeds alone, not from one noisy timing of each layer.
void equalizeLayerTimes(const TempDir& dir, const std::string& profile) {
  nlohmann::json doc = nlohmann::json::parse(stagecut::readTextFile(dir.file(profile)));
  const auto stats = [](double ms) {
    return nlohmann::json{{"median", ms}, {"min", ms}, {"max", ms}, {"cv", 0.0}, {"repeats", 1}};
  };
  for (auto& layer : doc["layers"]) {
    layer["forward_ms"] = stats(1.0);
    layer["backward_ms"] = stats(2.0);
    layer["backward_input_ms"] = stats(1.0);
    layer["backward_weight_ms"] = stats(1.0);
  }
  dir.write(profile, doc.dump());
}

nlohmann::json validateJson(const TempDir& dir, const std::string& partition) {
  const CommandResult result = runStagecut("validate " + dir.file("p.json") + " --partition " + dir.file(partition) +
                                           " --schedule gpipe --microbatches 8 --optimizer none --steps 1 --json");
  REQUIRE(result.exit_code == 0);
  return nlohmann::json::parse(result.out);
}

}  // namespace

TEST_CASE("a memory cap between two splits' measured peaks makes partition choose the one that fits, "
          "and validate measures it under the cap",
          "[runtime][cli][memory]") {
  const TempDir dir;
  // GPipe keeps all 8 microbatches' activations on both stages: where the blocks sit decides the
  // largest stage. With equal layer costs, a slow second stage (--stage-speed 1,0.3) makes the
  // fastest split put all four blocks on the first (of 7 layers, cut 4 gives the second stage
  // 3 ms / 0.3 = 30 ms a microbatch against the first's 12), which is not the split that needs
  // least. The memory stays as measured.
  const CommandResult profile = runStagecut(
      "profile --model gpt --preset gpt-tiny --layers 4 --seq 64 --vocab 2048 --microbatch 4 --warmup 0 "
      "--min-repeats 1 --max-repeats 1 -o " + dir.file("p.json"));
  REQUIRE(profile.exit_code == 0);
  equalizeLayerTimes(dir, "p.json");
  const std::string partition =
      "partition " + dir.file("p.json") + " --stages 2 --microbatches 8 --schedule gpipe --optimizer none "
      "--stage-speed 1,0.3 ";
  // A: the fastest split. B: of all cuts in two, the one measured to need least.
  REQUIRE(runStagecut(partition + "-o " + dir.file("a.json")).exit_code == 0);
  const nlohmann::json split_a = nlohmann::json::parse(stagecut::readTextFile(dir.file("a.json")));
  const int cut_a = split_a["stages"][1]["first"].get<int>();
  const int layers = split_a["stages"][1]["last"].get<int>() + 1;
  REQUIRE(layers == 7);
  CHECK(cut_a >= 5);
  double measured_a = 0, measured_b = 0;
  int cut_b = -1;
  for (int cut = 1; cut < layers; ++cut) {
    nlohmann::json split = split_a;
    split["stages"][0]["last"] = cut - 1;
    split["stages"][1]["first"] = cut;
    std::ofstream(dir.file("cut.json")) << split.dump();
    const double measured = largestMeasuredPeak(validateJson(dir, "cut.json"));
    if (cut == cut_a) measured_a = measured;
    if (cut_b < 0 || measured < measured_b) {
      cut_b = cut;
      measured_b = measured;
    }
  }
  INFO("measured peaks: A (cut at " << cut_a << ") " << measured_a << ", B (cut at " << cut_b << ") " << measured_b);
  REQUIRE(measured_b < measured_a);
  const auto cap = static_cast<long long>((measured_a + measured_b) / 2);
  REQUIRE(runStagecut(partition + "--memory-cap " + std::to_string(cap) + " -o " + dir.file("c.json")).exit_code == 0);
  CHECK(largestPredictedStage(dir.file("c.json")) <= static_cast<double>(cap));
  CHECK(nlohmann::json::parse(stagecut::readTextFile(dir.file("c.json")))["stages"][1]["first"].get<int>() != cut_a);
  const nlohmann::json run = validateJson(dir, "c.json");
  CHECK(largestMeasuredPeak(run) <= static_cast<double>(cap));
  // The document carries both timelines, one point per op and one for the optimizer step.
  for (const auto& rank : run["ranks"]) {
    const auto& memory = rank["memory"];
    CHECK(memory["measured"].size() == memory["predicted"].size());
    CHECK(memory["measured"].size() == 2 * 8 + 1u);
    CHECK(memory["predicted_parts"]["weights"].get<double>() > 0);
    CHECK(memory["predicted_parts"]["optimizer"].get<double>() == 0);
  }
  CHECK(run["optimizer"] == "none");
}

TEST_CASE("validate warns when other processes are busy beside its ranks, and --strict exits 1",
          "[runtime][cli][environment]") {
  const TempDir dir;
  stagecut::testing::writeTinyGptSplit(dir);
  const std::string args = "validate " + dir.file("p.json") + " --partition " + dir.file("s.json") +
                           " --schedule 1f1b --microbatches 4 --steps 3";
  // One spinning process per core of this machine: whatever else runs, the ranks share.
  const long cores = std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN));
  std::vector<pid_t> spinners;
  for (long c = 0; c < cores; ++c) {
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      for (volatile unsigned long spin = 0;; spin = spin + 1) {
      }
    }
    spinners.push_back(child);
  }
  const CommandResult json = runStagecut(args + " --json");
  const CommandResult text = runStagecut(args);
  const CommandResult strict = runStagecut(args + " --strict");
  for (pid_t child : spinners) {
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
  }
  REQUIRE(json.exit_code == 0);
  const auto report = nlohmann::json::parse(json.out);
  const auto& environment = report["environment"];
  CHECK(environment["trusted"] == false);
  CHECK(environment["other_load_cores"].get<double>() >= 0.3);
  CHECK_THAT(environment["warnings"].dump(), Contains("other processes kept"));
  CHECK(environment["ranks"].size() == 2u);
  CHECK(environment["profile_reference_kernel_ms"].get<double>() > 0);
  // Without --strict the figures stand, with the warning beside them.
  CHECK(text.exit_code == 0);
  CHECK_THAT(text.out, Contains("WARNING: other processes kept"));
  CHECK_THAT(text.err, Contains("stagecut: warning: the measured figures of this run cannot be trusted"));
  CHECK(strict.exit_code == 1);
  CHECK_THAT(strict.err, Contains("--strict: the run cannot be trusted: other processes kept"));
  CHECK_THAT(strict.out, Contains("measured"));
}

TEST_CASE("a layout plan --gpus chose (chunked, data-parallel, recomputed) runs with every rank at its planned peak",
          "[runtime][cli][planner][memory]") {
  const TempDir dir;
  REQUIRE(runStagecut("profile --model llama --preset llama-tiny --layers 8 --microbatch 2" +
                      stagecut::testing::kQuickProfileFlags + " -o " + dir.file("p.json"))
              .exit_code == 0);
  // Pinned to what this machine runs: TP 1, 2 ranks x 2 chunks, 2 replicas, every chunk
  // recomputed, the optimizer state whole on every replica (validate shards none).
  const CommandResult plan = runStagecut("plan " + dir.file("p.json") + " --gpus 4 --global-batch 16 --fix "
                                         "tp=1,pp=2,v=2,dp=2,recompute=full,dist-opt=off --write-split " +
                                         dir.file("split.json") + " -o " + dir.file("plan.json"));
  REQUIRE(plan.exit_code == 0);
  const std::string run_it = "run it with: stagecut ";
  const std::size_t at = plan.out.find(run_it);
  REQUIRE(at != std::string::npos);
  const std::string validate = plan.out.substr(at + run_it.size(), plan.out.find('\n', at) - at - run_it.size());
  CHECK_THAT(validate, Contains("--schedule interleaved-1f1b --microbatches 4 --microbatch-size 2 --data-parallel 2 "
                                "--recompute full"));
  const CommandResult run = runStagecut(validate + " --steps 1 --json");
  REQUIRE(run.exit_code == 0);
  const auto report = nlohmann::json::parse(run.out);
  const auto planned = nlohmann::json::parse(stagecut::readTextFile(dir.file("plan.json")))["rows"][0];
  const auto& peaks = planned["peak_memory_bytes"];
  REQUIRE(peaks.size() == 2);
  REQUIRE(report["recompute"]["ranks"].size() == 4);
  for (const auto& rank : report["recompute"]["ranks"]) {
    const double measured = rank["peak_memory_bytes"].get<double>();
    const double predicted = peaks[rank["rank"].get<std::size_t>() % 2].get<double>();
    INFO("rank " << rank["rank"] << ": measured " << measured << ", planned " << predicted);
    CHECK(std::abs(measured / predicted - 1.0) < 0.10);
  }
  CHECK(report["grad_check"] == "pass");
}
