#include <catch2/catch.hpp>

#include <dirent.h>

#include <chrono>
#include <fstream>

#include "core/json_document.h"
#include "tests/test_support.h"

using stagecut::testing::CommandResult;
using stagecut::testing::runStagecut;
using stagecut::testing::TempDir;
using Catch::Matchers::Contains;

namespace {

// A tiny GPT profiled quickly and split in two: enough to run a real 2-rank pipeline in seconds.
void makeTinySplit(const TempDir& dir) {
  const CommandResult profile = runStagecut(
      "profile --model gpt --preset gpt-tiny --layers 2 --seq 16 --vocab 256 --microbatch 2 --warmup 0 "
      "--min-repeats 1 --max-repeats 1 -o " + dir.file("p.json"));
  REQUIRE(profile.exit_code == 0);
  const CommandResult partition =
      runStagecut("partition " + dir.file("p.json") + " --stages 2 --microbatches 4 -o " + dir.file("s.json"));
  REQUIRE(partition.exit_code == 0);
}

// Processes started with `marker` in their environment: this test's launcher and its ranks
// (other tests may run stagecut at the same time).
int processesWithEnvironment(const std::string& marker) {
  int count = 0;
  DIR* proc = ::opendir("/proc");
  while (dirent* entry = ::readdir(proc)) {
    std::ifstream environ(std::string("/proc/") + entry->d_name + "/environ");
    std::string variable;
    while (std::getline(environ, variable, '\0')) {
      if (variable == marker) {
        ++count;
        break;
      }
    }
  }
  ::closedir(proc);
  return count;
}

}  // namespace

TEST_CASE("validate runs a 2-rank pipeline whose gradients equal the full batch's", "[runtime][cli]") {
  const TempDir dir;
  makeTinySplit(dir);
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
  }
}

TEST_CASE("a rank killed mid-run ends validate with exit 1 naming it, leaving no process", "[runtime][cli][errors]") {
  const TempDir dir;
  makeTinySplit(dir);
  const auto start = std::chrono::steady_clock::now();
  const CommandResult result =
      runStagecut("validate " + dir.file("p.json") + " --partition " + dir.file("s.json") +
                      " --microbatches 4 --steps 2 --timeout 30",
                  "STAGECUT_TEST_KILL_RANK=1");
  CHECK(result.exit_code == 1);
  CHECK_THAT(result.err, Contains("stagecut: rank 1 was killed by signal Killed; stopped the other 1 running rank(s)"));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
  CHECK(processesWithEnvironment("STAGECUT_TEST_KILL_RANK=1") == 0);
}

TEST_CASE("validate rejects requests it cannot run before starting ranks", "[runtime][cli][errors]") {
  const TempDir dir;
  makeTinySplit(dir);
  const std::string files = dir.file("p.json") + " --partition " + dir.file("s.json");
  CommandResult result = runStagecut("validate " + files + " --schedule interleaved-1f1b --microbatches 4");
  CHECK(result.exit_code == 2);
  CHECK(result.err == "stagecut: --schedule interleaved-1f1b: validate runs one model chunk per rank; use gpipe, "
                      "1f1b or zb-h1\n");
  result = runStagecut("validate " + files + " --steps 0");
  CHECK(result.exit_code == 2);
  CHECK(result.err == "stagecut: --steps 0: measure at least 1 step\n");
  result = runStagecut("validate " + files + " --schedule 1f1");
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.err, Contains("did you mean '1f1b'?"));
}
