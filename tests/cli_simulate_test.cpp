#include <catch2/catch.hpp>

#include <unistd.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/partition_json.h"
#include "core/profile_json.h"
#include "core/json_document.h"
#include "tests/test_support.h"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using stagecut::testing::CommandResult;
using stagecut::testing::runStagecut;
using stagecut::testing::TempDir;

namespace {

// A 6-layer profile split 2 + 3 + 1: three stages, half of the layers without their own B / W.
struct ProfileFiles {
  TempDir dir;
  std::string profile = dir.file("p.json");
  std::string partition = dir.file("part.json");
  ProfileFiles() {
    stagecut::writeProfileFile(profile, stagecut::testing::makeProfile(6));
    stagecut::writePartitionFile(partition, stagecut::testing::makePartition({2, 3, 1}));
  }
};

}  // namespace

TEST_CASE("stagecut simulate reproduces the lesson on unit costs", "[cli][simulate]") {
  const CommandResult result =
      runStagecut("simulate --stages 4 --microbatches 8 --schedule gpipe,1f1b");
  CHECK(result.exit_code == 0);
  CHECK(result.err.empty());
  CHECK_THAT(result.out, StartsWith("Simulated 4 stages x 8 microbatches on unit costs"));
  CHECK_THAT(result.out, Contains("GPipe: step 33 units, bubble 27.3%\n"
                                  "rank 0  0011223344556677..."));
  CHECK_THAT(result.out, Contains("1F1B: step 33 units, bubble 27.3%\n"
                                  "rank 0  00112233............0###441###"));
  CHECK_THAT(result.out, Contains("rank 3  ......000###111###222###"));
  CHECK_THAT(result.out, Contains("gpipe               33   27.3%  27.3% = (N-1)/(M+N-1)  8 8 8 8"));
  CHECK_THAT(result.out, Contains("1f1b                33   27.3%  27.3% = (N-1)/(M+N-1)  4 3 2 1"));
}

TEST_CASE("stagecut simulate --json prints stagecut.simulation/1", "[cli][simulate]") {
  const CommandResult result =
      runStagecut("simulate --stages 4 --microbatches 8 --schedule all --json");
  REQUIRE(result.exit_code == 0);
  const auto document = nlohmann::json::parse(result.out);
  CHECK(document.at("format") == "stagecut.simulation/1");
  CHECK(document.at("costs") == "unit");
  const auto& schedules = document.at("schedules");
  REQUIRE(schedules.size() == 6);
  CHECK(schedules[0].at("schedule") == "gpipe");
  CHECK(schedules[0].at("step_time").get<double>() == Approx(33));
  CHECK(schedules[0].at("bubble").get<double>() == Approx(3.0 / 11));
  CHECK(schedules[1].at("peak_in_flight") == nlohmann::json::array({4, 3, 2, 1}));
  // Interleaved, v = 2: (N-1)/(vM+N-1) = 3/19; ZB-H1: (N-1)/(3M+N-1) = 3/27.
  CHECK(schedules[2].at("chunks") == 2);
  CHECK(schedules[2].at("closed_form_bubble").get<double>() == Approx(3.0 / 19));
  CHECK(schedules[2].at("bubble").get<double>() == Approx(3.0 / 19));
  CHECK(schedules[3].at("closed_form_bubble").get<double>() == Approx(3.0 / 27));
  CHECK(schedules[3].at("idle_time").size() == 4);
  // ZB-V: 2 chunks of half a unit each, (N-1)/(6M+N-1) = 3/51 in 6M + N - 1 = 51 half units.
  CHECK(schedules[4].at("schedule") == "zb-v");
  CHECK(schedules[4].at("chunks") == 2);
  CHECK(schedules[4].at("step_time").get<double>() == Approx(25.5));
  CHECK(schedules[4].at("closed_form_bubble").get<double>() == Approx(3.0 / 51));
  CHECK(schedules[4].at("bubble").get<double>() == Approx(3.0 / 51));
  // DualPipeV (M = 2N here): the same bound, one more microbatch-chunk in flight on every rank.
  CHECK(schedules[5].at("schedule") == "dualpipe-v");
  CHECK(schedules[5].at("step_time").get<double>() == Approx(25.5));
  CHECK(schedules[5].at("closed_form_bubble").get<double>() == Approx(3.0 / 51));
  CHECK(schedules[5].at("peak_in_flight") == nlohmann::json::array({9, 9, 9, 9}));
}

TEST_CASE("stagecut simulate writes a Chrome trace and an SVG", "[cli][simulate]") {
  const TempDir dir;
  const CommandResult result = runStagecut("simulate --stages 3 --microbatches 3 --trace '" +
                                           dir.file("t.json") + "' --svg '" + dir.file("g.svg") +
                                           "'");
  REQUIRE(result.exit_code == 0);
  CHECK(dir.list() == std::vector<std::string>{"g.svg", "t.json"});
  const auto trace = nlohmann::json::parse(stagecut::readTextFile(dir.file("t.json")));
  int ops = 0;
  for (const auto& event : trace.at("traceEvents")) ops += event.at("ph") == "X" ? 1 : 0;
  CHECK(ops == 2 * (2 * 3 * 3));  // gpipe and 1f1b: F and B of 3 microbatches on 3 ranks
  CHECK_THAT(stagecut::readTextFile(dir.file("g.svg")), Contains("3 stages, 3 microbatches, unit costs"));
}

TEST_CASE("stagecut simulate compares schedules on a profile and a partition", "[cli][simulate]") {
  const ProfileFiles files;
  const std::string inputs = "'" + files.profile + "' --partition '" + files.partition + "'";
  const CommandResult text = runStagecut("simulate " + inputs + " --schedule all --microbatches 6");
  REQUIRE(text.exit_code == 0);
  CHECK_THAT(text.out, Contains("3 stages x 6 microbatches"));
  CHECK_THAT(text.out, Contains("note: 3 of 6 layers have no separate B and W times; zb-h1, zb-v and "
                                "dualpipe-v split their backward evenly into B and W"));
  CHECK_THAT(text.out, Contains("note: interleaved-1f1b divides each stage's costs evenly"));
  CHECK_THAT(text.out, Contains("closed form if balanced"));
  CHECK_THAT(text.out, Contains("each schedule's peak activation\n  memory (microbatches in flight)"));
  CHECK_THAT(text.out, Contains("48.0 KiB (4)"));  // 1F1B's rank 0: 4 in flight x 12 KiB

  const CommandResult json = runStagecut("simulate " + inputs + " --schedule 1f1b,gpipe --json");
  REQUIRE(json.exit_code == 0);
  const auto document = nlohmann::json::parse(json.out);
  CHECK(document.at("costs") == "profile");
  CHECK(document.at("time_unit") == "ms");
  CHECK(document.at("stages") == 3);
  const auto& one_f_one_b = document.at("schedules")[0];
  // Stage 0 holds layers 0-1 (12 KiB of activations per microbatch) and 1F1B keeps 3 in flight.
  CHECK(one_f_one_b.at("peak_in_flight") == nlohmann::json::array({3, 2, 1}));
  CHECK(one_f_one_b.at("peak_activation_bytes")[0] == 3 * 4096 * (1 + 2));
  // Stage 1 (layers 2-4: F 10.5, B 21.75 ms) runs its 8 microbatches after stage 0's first
  // forward (2 ms) and before stage 0's last backward (4.5 ms) can start.
  CHECK(one_f_one_b.at("step_time").get<double>() >= 2 + 8 * (10.5 + 21.75) + 4.5);

  const double step_ms = one_f_one_b.at("step_time");
  const CommandResult slow = runStagecut("simulate " + inputs +
                                         " --schedule 1f1b --latency 2ms --bandwidth 1MB/s --json");
  REQUIRE(slow.exit_code == 0);
  const auto slow_document = nlohmann::json::parse(slow.out);
  CHECK(slow_document.at("schedules")[0].at("step_time").get<double>() > step_ms);
  CHECK(slow_document.at("communication") == "1MB/s + 2ms latency per boundary");
}

TEST_CASE("stagecut simulate skips under 'all' the schedules that cannot run M (interleaved-1f1b, dualpipe-v)",
          "[cli][simulate]") {
  const CommandResult result = runStagecut("simulate --stages 4 --microbatches 6 --schedule all");
  CHECK(result.exit_code == 0);
  CHECK_THAT(result.out, Contains("note: interleaved-1f1b skipped: it needs the microbatches (6) a "
                                  "multiple of the 4 stages"));
  CHECK_THAT(result.out, Contains("note: dualpipe-v skipped: it needs the microbatches (6) at least twice the 4 stages"));
  CHECK_THAT(result.out, Contains("ZB-V: step"));
  CHECK_THAT(result.out, Contains("ZB-H1: step"));
}

TEST_CASE("stagecut simulate rejects bad shapes and names in one line with exit 2",
          "[cli][simulate][errors]") {
  const auto expectError = [](const std::string& args, const std::string& message) {
    const CommandResult result = runStagecut("simulate " + args);
    INFO(args);
    CHECK(result.exit_code == 2);
    CHECK(result.out.empty());
    CHECK(result.err == "stagecut: " + message + "\n");
  };
  expectError("--schedule 1f1", "--schedule: unknown schedule '1f1', did you mean '1f1b'?");
  expectError("--stages 0", "--stages 0: use 1 to 4194304 stages");
  expectError("--microbatches 0", "--microbatches 0: use 1 to 4194304 microbatches per step");
  expectError("--microbatches -2", "--microbatches -2: use 1 to 4194304 microbatches per step");
  expectError("--schedule interleaved-1f1b --chunks 0",
              "--chunks 0: use 1 to 4194304 model chunks per rank");
  expectError("--schedule interleaved-1f1b --microbatches 6",
              "--microbatches 6: interleaved-1f1b needs a multiple of the pipeline's 4 stages; use 4 or 8");
  expectError("--partition part.json", "--partition part.json: needs the profile it splits; use "
              "'stagecut simulate PROFILE --partition part.json'");
  expectError("--latency 10us", "--latency 10us: unit costs have no bytes or time unit; give a "
              "profile and a partition to simulate communication");
}

TEST_CASE("stagecut simulate names the profile input that is wrong", "[cli][simulate][errors]") {
  const ProfileFiles files;
  const CommandResult no_partition = runStagecut("simulate '" + files.profile + "'");
  CHECK(no_partition.exit_code == 2);
  CHECK(no_partition.err == "stagecut: " + files.profile + ": simulating a profile needs its "
        "split; add --partition FILE (written by 'stagecut partition ... --format json') or --split 4,3,2\n");
  const std::string inputs = "'" + files.profile + "' --partition '" + files.partition + "'";
  const CommandResult stages = runStagecut("simulate " + inputs + " --stages 4");
  CHECK(stages.exit_code == 2);
  CHECK(stages.err == "stagecut: --stages 4: the partition " + files.partition +
                          " has 3 stages; drop --stages or use --stages 3\n");
  const CommandResult bandwidth = runStagecut("simulate " + inputs + " --bandwidth fast");
  CHECK(bandwidth.exit_code == 2);
  CHECK_THAT(bandwidth.err, StartsWith("stagecut: --bandwidth \"fast\": not a bandwidth; use "));
}

TEST_CASE("stagecut simulate honours --stage-speed as partition and plan do", "[cli][simulate]") {
  ProfileFiles files;
  const std::string base = "simulate " + files.profile + " --partition " + files.partition +
                           " --microbatches 4 --schedule 1f1b --json";
  const CommandResult plain = runStagecut(base);
  const CommandResult slow = runStagecut(base + " --stage-speed 1,0.25,1");
  REQUIRE(plain.exit_code == 0);
  REQUIRE(slow.exit_code == 0);
  const auto plain_json = nlohmann::json::parse(plain.out);
  const auto slow_json = nlohmann::json::parse(slow.out);
  // Stage 1's ops take four times as long; the others' do not change.
  const auto& plain_busy = plain_json["schedules"][0]["busy_time"];
  const auto& slow_busy = slow_json["schedules"][0]["busy_time"];
  CHECK(slow_busy[1].get<double>() == Approx(4 * plain_busy[1].get<double>()));
  CHECK(slow_busy[0].get<double>() == Approx(plain_busy[0].get<double>()));
  CHECK(slow_json["schedules"][0]["step_time"].get<double>() > plain_json["schedules"][0]["step_time"].get<double>());

  stagecut::testing::checkInputError(runStagecut(base + " --stage-speed 1,1"),
                                     "--stage-speed 1,1: 2 values for 3 stages; give one per stage, e.g. --stage-speed 1,1,1");
  stagecut::testing::checkInputError(
      runStagecut("simulate --stages 2 --stage-speed 1,2"),
      "--stage-speed 1,2: unit costs are the same on every rank; give a profile and a partition to simulate "
      "devices of different speeds");
}

TEST_CASE("stagecut simulate --trace and --svg onto an input are refused before any work, inputs kept",
          "[cli][simulate][output][errors]") {
  const ProfileFiles files;
  const std::string profile_before = stagecut::readTextFile(files.profile);
  const std::string partition_before = stagecut::readTextFile(files.partition);
  REQUIRE(::link(files.partition.c_str(), files.dir.file("hard.json").c_str()) == 0);
  const std::string run = "simulate '" + files.profile + "' --partition '" + files.partition + "' ";
  stagecut::testing::checkInputError(
      runStagecut(run + "--trace '" + files.profile + "'"),
      "--trace " + files.profile + ": that is the input profile " + files.profile + "; write to another file");
  stagecut::testing::checkInputError(runStagecut(run + "--svg '" + files.dir.file("hard.json") + "'"),
                                     "--svg " + files.dir.file("hard.json") + ": that is the --partition file " +
                                         files.partition + "; write to another file");
  stagecut::testing::checkInputError(runStagecut(run + "--svg ''"),
                                     "--svg '': the file name is empty; name the file to write");
  CHECK(stagecut::readTextFile(files.profile) == profile_before);
  CHECK(stagecut::readTextFile(files.partition) == partition_before);
  CHECK(files.dir.list() == std::vector<std::string>{"hard.json", "p.json", "part.json"});
}

TEST_CASE("stagecut simulate --trace and --svg onto one file are refused before any work", "[cli][simulate][output][errors]") {
  const ProfileFiles files;
  const std::string run = "simulate '" + files.profile + "' --partition '" + files.partition + "' ";
  const std::string chart = files.dir.file("chart.out");
  stagecut::testing::checkInputError(runStagecut(run + "--trace '" + chart + "' --svg '" + chart + "'"),
                                     "--svg " + chart + ": is also the --trace file; give each output its own file");
  CHECK(files.dir.list() == std::vector<std::string>{"p.json", "part.json"});
}

TEST_CASE("simulate --chunks with schedules that fix their chunks per rank is refused, not ignored",
          "[cli][simulate][errors]") {
  CommandResult result = runStagecut("simulate --schedule zb-v --chunks 3");
  CHECK(result.exit_code == 2);
  CHECK(result.err == "stagecut: --chunks 3: zb-v fixes its chunks per rank (zb-v and dualpipe-v 2, the others 1); add "
                      "interleaved-1f1b to --schedule, or leave --chunks out\n");
  result = runStagecut("simulate --schedule 1f1b,zb-h1 --chunks 2");
  CHECK(result.exit_code == 2);
  CHECK(result.err == "stagecut: --chunks 2: 1f1b,zb-h1 fix their chunks per rank (zb-v and dualpipe-v 2, the others 1); add "
                      "interleaved-1f1b to --schedule, or leave --chunks out\n");
  // What the schedule runs anyway, and any v beside interleaved-1f1b, are taken.
  CHECK(runStagecut("simulate --schedule zb-v --chunks 2").exit_code == 0);
  CHECK(runStagecut("simulate --schedule 1f1b --chunks 1").exit_code == 0);
  CHECK(runStagecut("simulate --schedule all --chunks 3").exit_code == 0);
}

TEST_CASE("simulate --svg and report stay small for any pipeline and say what they drew", "[cli][simulate][bounds]") {
  const TempDir dir;
  const CommandResult deep =
      runStagecut("simulate --stages 300 --microbatches 2 --schedule 1f1b --svg '" + dir.file("deep.svg") + "'");
  REQUIRE(deep.exit_code == 0);
  CHECK(deep.err == "stagecut: --svg " + dir.file("deep.svg") + ": ranks 0-255 of 300 drawn\n");
  const CommandResult long_step = runStagecut("simulate --stages 4 --microbatches 1000000 --schedule 1f1b --json --svg '" +
                                              dir.file("long.svg") + "'");
  REQUIRE(long_step.exit_code == 0);
  CHECK(nlohmann::json::parse(long_step.out)["format"] == "stagecut.simulation/1");  // stdout stays the document
  CHECK(long_step.err == "stagecut: --svg " + dir.file("long.svg") +
                             ": 8000000 ops drawn in 1088 columns a rank, each the op kind that fills most of it\n");
  CHECK(stagecut::readTextFile(dir.file("long.svg")).size() < 100000u);
  const CommandResult report = runStagecut("report '" + stagecut::testing::kExampleGptProfile +
                                           "' --stages 2 --microbatches 100000 -o '" + dir.file("r.html") + "'");
  REQUIRE(report.exit_code == 0);
  const std::string html = stagecut::readTextFile(dir.file("r.html"));
  CHECK(html.size() < 1000000u);
  CHECK_THAT(html, Contains("ops drawn in 1088 columns a rank"));
}
