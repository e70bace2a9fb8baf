// `stagecut profile` at several microbatch sizes, with --recompute, and interrupted then resumed.
#include <csignal>

#include <catch2/catch.hpp>

#include "core/json_document.h"
#include "core/profile_json.h"
#include "profiler/measure_checkpoint.h"
#include "tests/test_support.h"

using stagecut::testing::CommandResult;
using stagecut::testing::checkInputError;
using stagecut::testing::runStagecut;
using stagecut::testing::TempDir;
using Catch::Matchers::Contains;

namespace {

// Fixed repeats (no cv stop) so that a run takes a known number of samples: per size, 3 layers
// and the whole model, 3 rounds each: 12 samples.
const std::string kMlp =
    "profile --model mlp --layers 2 --hidden 32 --warmup 0 --min-repeats 3 --max-repeats 3 --cv-target 1e-9";

}  // namespace

TEST_CASE("profile --microbatch 1,2,4 writes every size, the layers holding the largest",
          "[profiler][cli][sizes]") {
  const TempDir dir;
  const CommandResult result = runStagecut(kMlp + " --microbatch 4,1,2 --recompute -o " + dir.file("p.json"));
  REQUIRE(result.exit_code == 0);
  CHECK_THAT(result.out, Contains("per microbatch size"));
  CHECK_THAT(result.out, Contains("recompute ms"));
  const auto document = nlohmann::json::parse(stagecut::readTextFile(dir.file("p.json")));
  CHECK(document["format"] == "stagecut.profile/2");
  const stagecut::Profile profile = stagecut::readProfileFile(dir.file("p.json"));
  CHECK(stagecut::measuredMicrobatchSizes(profile) == std::vector<int>{1, 2, 4});
  CHECK(profile.run.microbatch_size == 4);
  for (const auto& entry : profile.microbatch_sizes) {
    // The output of each layer holds microbatch_size rows of 32 floats (the loss: one float).
    CHECK(entry.layers[0].output_bytes == static_cast<std::uint64_t>(entry.microbatch_size) * 32 * 4);
    CHECK(entry.layers[0].forward_ms.repeats == 3);
    REQUIRE(entry.layers[1].recompute_ms.has_value());
    CHECK(entry.layers[1].recompute_ms->repeats == 3);
    REQUIRE(entry.whole_model.has_value());
  }
  CHECK(dir.list() == std::vector<std::string>{"p.json"});  // no progress file left
}

TEST_CASE("profile rejects a bad size list with one line and exit 2", "[profiler][cli][sizes][errors]") {
  for (const auto& [sizes, message] : std::vector<std::pair<std::string, std::string>>{
           {"1,2,2", "--microbatch 1,2,2: size 2 is listed twice; give each size once"},
           {"0,4", "--microbatch 0,4: a microbatch size must be 1 or more, got 0"},
           {"4,x", "--microbatch 4,x: \"x\" is not a microbatch size; give whole numbers from 1, e.g. 4 or 1,2,4,8"}}) {
    const CommandResult result = runStagecut(kMlp + " --microbatch " + sizes);
    CHECK(result.exit_code == 2);
    CHECK(result.err == "stagecut: " + message + "\n");
  }
}

TEST_CASE("an interrupted profile writes no output, keeps its samples, and --resume reuses them",
          "[profiler][cli][resume]") {
  const TempDir dir;
  const std::string out = dir.file("p.json");
  const std::string side = out + ".resume.json";
  for (const int signal_number : {SIGINT, SIGTERM}) {
    const CommandResult stopped = runStagecut(kMlp + " --microbatch 1,2 -o " + out,
                                              "STAGECUT_TEST_INTERRUPT_AFTER=16," + std::to_string(signal_number));
    CHECK(stopped.exit_code == 128 + signal_number);
    CHECK(stopped.out.empty());
    CHECK(stopped.err == std::string("stagecut: profile stopped by ") +
                             (signal_number == SIGINT ? "SIGINT" : "SIGTERM") +
                             " at microbatch size 2; nothing written to " + out + "; 16 timed samples kept in " +
                             side + "; rerun the same command with --resume to continue\n");
    CHECK(dir.list() == std::vector<std::string>{"p.json.resume.json"});
  }
  // The side file holds the 12 samples of size 1 (complete) and one pass of size 2: the whole
  // model and its 3 layers.
  const auto progress = nlohmann::json::parse(stagecut::readTextFile(side));
  REQUIRE(progress["sizes"].size() == 2u);
  CHECK(progress["sizes"][0]["complete"] == true);
  CHECK(progress["sizes"][1]["complete"] == false);

  // Interrupted again after one more pass: the finished size 1 stays in the side file.
  const CommandResult again = runStagecut(kMlp + " --microbatch 1,2 --resume -o " + out, "STAGECUT_TEST_INTERRUPT_AFTER=20");
  CHECK(again.exit_code == 130);
  CHECK(again.err == "stagecut: resuming from " + side + " (16 timed samples kept)\nstagecut: profile stopped by "
                     "SIGINT at microbatch size 2; nothing written to " + out + "; 20 timed samples kept in " + side +
                     "; rerun the same command with --resume to continue\n");
  const auto progress_again = nlohmann::json::parse(stagecut::readTextFile(side));
  CHECK(progress_again["sizes"][0]["complete"] == true);
  CHECK(progress_again["sizes"][0]["layers"][0]["forward"] == progress["sizes"][0]["layers"][0]["forward"]);
  // Size 2's first samples are the first run's, continued.
  const auto& first_samples = progress["sizes"][1]["layers"][0]["forward"];
  const auto& continued = progress_again["sizes"][1]["layers"][0]["forward"];
  REQUIRE(continued.size() > first_samples.size());
  for (std::size_t i = 0; i < first_samples.size(); ++i) CHECK(continued[i] == first_samples[i]);

  const CommandResult resumed = runStagecut(kMlp + " --microbatch 1,2 --resume -o " + out);
  REQUIRE(resumed.exit_code == 0);
  CHECK(resumed.err == "stagecut: resuming from " + side + " (20 timed samples kept)\n");
  const stagecut::Profile profile = stagecut::readProfileFile(out);
  CHECK(profile.run.extra["resumed_samples"] == 20);
  // Size 1 was not timed again: its repeats stay at 3, and its samples are the side file's.
  CHECK(profile.microbatch_sizes[0].layers[0].forward_ms.repeats == 3);
  double side_min = 1e300;
  for (const auto& sample : progress["sizes"][0]["layers"][0]["forward"]) side_min = std::min(side_min, sample.get<double>());
  CHECK(profile.microbatch_sizes[0].layers[0].forward_ms.min == side_min);
  CHECK(profile.microbatch_sizes[1].layers[2].forward_ms.repeats == 3);
  CHECK(dir.list() == std::vector<std::string>{"p.json"});  // the side file is gone
}

TEST_CASE("profile --resume refuses a side file of another request or a damaged one", "[profiler][cli][resume][errors]") {
  const TempDir dir;
  const std::string out = dir.file("p.json");
  const std::string side = out + ".resume.json";
  REQUIRE(runStagecut(kMlp + " --microbatch 2 -o " + out, "STAGECUT_TEST_INTERRUPT_AFTER=2").exit_code == 130);
  const CommandResult other = runStagecut(kMlp + " --microbatch 2 --threads 2 --resume -o " + out);
  CHECK(other.exit_code == 2);
  CHECK(other.err == "stagecut: " + side + ": was written by a profile run with another --threads; rerun that "
                                           "command with --resume, or delete the file to start over\n");
  const CommandResult cv = runStagecut(kMlp + " --microbatch 2 --budget 9 --resume -o " + out);
  CHECK(cv.err == "stagecut: " + side + ": was written by a profile run with another --budget; rerun that "
                                        "command with --resume, or delete the file to start over\n");

  dir.write("p.json.resume.json", "{\"format\": 7, \"sizes\": []}");
  const CommandResult wrong_type = runStagecut(kMlp + " --microbatch 2 --resume -o " + out);
  CHECK(wrong_type.exit_code == 2);
  CHECK_THAT(wrong_type.err, Contains("not a stagecut profile progress file (no \"format\""));
  dir.write("p.json.resume.json", "{\"format\": \"stagecut.profile-progress/2\", \"sizes\": 3}");
  const CommandResult damaged = runStagecut(kMlp + " --microbatch 2 --resume -o " + out);
  CHECK(damaged.exit_code == 2);
  CHECK(damaged.err == "stagecut: " + side + ": its digest does not match its contents, so it was changed after "
                                             "stagecut wrote it; delete it and run the profile again without --resume\n");

  const CommandResult no_output = runStagecut(kMlp + " --resume");
  CHECK(no_output.exit_code == 2);
  CHECK(no_output.err == "stagecut: --resume: needs -o FILE; the samples of an interrupted run are kept in "
                         "FILE.resume.json\n");
}

// The sweep's forgeries of a real side file: one edited by hand (a size listed twice) is refused by
// its digest; one re-sealed with a correct digest by its contents. Either way before any timing,
// and the side file is left as it was.
TEST_CASE("profile --resume refuses a forged side file before timing anything", "[profiler][cli][resume][errors]") {
  const TempDir dir;
  const std::string out = dir.file("p.json");
  const std::string side = out + ".resume.json";
  REQUIRE(runStagecut(kMlp + " --microbatch 1,2 -o " + out, "STAGECUT_TEST_INTERRUPT_AFTER=2").exit_code == 130);
  const nlohmann::json written = stagecut::parseJsonDocument(stagecut::readTextFile(side), side);
  REQUIRE(written.at("format") == "stagecut.profile-progress/2");
  const auto resumed = [&](const nlohmann::json& forged) {
    dir.write("p.json.resume.json", forged.dump(2));
    const CommandResult result = runStagecut(kMlp + " --microbatch 1,2 --resume -o " + out);
    CHECK(result.out.empty());
    CHECK(dir.list() == std::vector<std::string>{"p.json.resume.json"});
    return result;
  };
  const auto resealed = [](nlohmann::json document) {
    document["digest"] = stagecut::measureCheckpointDigest(document);
    return document;
  };
  const std::string fix = "; delete it and run the profile again without --resume\n";

  nlohmann::json twice = written;
  twice["sizes"][1] = twice["sizes"][0];
  checkInputError(resumed(twice), side + ": its digest does not match its contents, so it was changed after stagecut "
                                         "wrote it; delete it and run the profile again without --resume");
  const CommandResult sealed_twice = resumed(resealed(twice));
  CHECK(sealed_twice.exit_code == 2);
  CHECK(sealed_twice.err == "stagecut: " + side + ": sizes[1]: microbatch size 1 is listed twice" + fix);

  nlohmann::json other_size = written;
  other_size["sizes"][1]["microbatch_size"] = 7;
  const CommandResult seven = resumed(resealed(other_size));
  CHECK(seven.exit_code == 2);
  CHECK(seven.err == "stagecut: " + side + ": holds samples at microbatch size 7, which this run does not measure; "
                                           "delete the file and profile again without --resume\n");

  nlohmann::json fewer = written;
  fewer["sizes"][0]["layers"].erase(0);
  fewer["sizes"][0]["complete"] = false;
  const CommandResult short_size = resumed(resealed(fewer));
  CHECK(short_size.exit_code == 2);

  // The side file as written still resumes.
  dir.write("p.json.resume.json", written.dump(2));
  CHECK(runStagecut(kMlp + " --microbatch 1,2 --resume -o " + out).exit_code == 0);
}
