#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <functional>

#include "core/json_document.h"
#include "core/partition_json.h"
#include "core/profile_json.h"
#include "tests/test_support.h"

using stagecut::testing::CommandResult;
using stagecut::testing::makePartition;
using stagecut::testing::makeProfile;
using stagecut::testing::checkInputError;
using stagecut::testing::runStagecut;
using stagecut::testing::TempDir;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

std::string brokenProfile(const std::function<void(nlohmann::json&)>& breakIt) {
  nlohmann::json document = stagecut::profileToJson(makeProfile(4));
  breakIt(document);
  return stagecut::toJsonText(document);
}

}  // namespace

TEST_CASE("inspect prints a profile's layers and totals", "[cli][inspect]") {
  const TempDir dir;
  stagecut::writeProfileFile(dir.file("p.json"), makeProfile(3));
  const CommandResult result = runStagecut("inspect " + dir.file("p.json"));
  CHECK(result.exit_code == 0);
  CHECK(result.err.empty());
  CHECK_THAT(result.out, Contains("stagecut.profile/1, 3 layers"));
  CHECK_THAT(result.out, Contains("layer.2"));
  // Totals are sums of the layers' medians: 0.5 + 1.5 + 2.5 forward, 1.25 + 3.25 + 5.25 backward.
  CHECK_THAT(result.out, Contains("forward 4.50 ms, backward 9.75 ms per microbatch"));
}

TEST_CASE("inspect shows each layer's in-chain times beside its own when the profile has them", "[cli][inspect]") {
  const TempDir dir;
  stagecut::Profile profile = makeProfile(3);
  stagecut::writeProfileFile(dir.file("plain.json"), profile);
  CHECK_THAT(runStagecut("inspect " + dir.file("plain.json")).out, !Contains("in-chain"));
  profile.whole_model->in_chain_forward_ms = {0.125, 7.75, 2.75};
  profile.whole_model->in_chain_backward_ms = {9.5, 3.375, 0.0};
  stagecut::writeProfileFile(dir.file("p.json"), profile);
  const CommandResult result = runStagecut("inspect " + dir.file("p.json"));
  CHECK(result.exit_code == 0);
  CHECK_THAT(result.out, Contains("in-chain fwd") && Contains("in-chain bwd"));
  // On each layer's own row, in layer order (not reversed as the backward ran them).
  const auto rowOf = [&](const std::string& name) {
    const auto at = result.out.find(" " + name + " ");
    REQUIRE(at != std::string::npos);
    return result.out.substr(at, result.out.find('\n', at) - at);
  };
  CHECK_THAT(rowOf("layer.0"), Contains("0.125") && Contains("9.50"));
  CHECK_THAT(rowOf("layer.1"), Contains("7.75") && Contains("3.38"));
  CHECK_THAT(rowOf("layer.2"), Contains("2.75") && Contains("0.000"));
}

TEST_CASE("inspect prints a partition's stages", "[cli][inspect]") {
  const TempDir dir;
  stagecut::writePartitionFile(dir.file("s.json"), makePartition({4, 5, 5, 3}));
  const CommandResult result = runStagecut("inspect " + dir.file("s.json"));
  CHECK(result.exit_code == 0);
  CHECK_THAT(result.out, Contains("method compute, 4 stages over 17 layers"));
  CHECK_THAT(result.out, Contains("layers per stage: 4,5,5,3"));
  CHECK_THAT(result.out, Contains("4-8"));
}

TEST_CASE("inspect gives one error line and exit 2 for each broken file", "[cli][inspect][errors]") {
  const TempDir dir;
  struct BrokenFile {
    std::string name;
    std::string content;
    std::string message_after_path;
  };
  const std::vector<BrokenFile> cases = {
      {"empty.json", "", ": file is empty; expected a stagecut JSON document"},
      {"garbage.json", std::string("\x7f" "ELF\x01\x02\x00\x00", 8),
       ": is a binary file, not JSON; expected a stagecut JSON document"},
      {"truncated.json", "{\"format\": \"stagecut.profile/1\", \"layers\": [",
       ": not valid JSON: parse error at line 1, column 45: syntax error while parsing value - "
       "unexpected end of input; expected '[', '{', or a literal"},
      {"array.json", "[1, 2]", ": expected a JSON object with a \"format\" field, got array"},
      {"noformat.json", "{\"layers\": []}",
       ": no string \"format\" field; expected \"stagecut.profile/1\" or \"stagecut.partition/1\""},
      {"v9.json", "{\"format\": \"stagecut.profile/9\"}",
       ": unknown format \"stagecut.profile/9\"; this stagecut reads \"stagecut.profile/1\", \"stagecut.profile/2\", \"stagecut.profile/3\" and "
       "\"stagecut.partition/1\""},
      {"missing.json", brokenProfile([](auto& d) { d["layers"][1].erase("output_bytes"); }),
       ": layer 1: field \"output_bytes\" is missing; it is required"},
      {"negative.json", brokenProfile([](auto& d) { d["layers"][2]["forward_ms"]["median"] = -0.5; }),
       ": layer 2: field \"forward_ms.median\" must be >= 0, got -0.5"},
      {"order.json", brokenProfile([](auto& d) { d["layers"][3]["index"] = 7; }),
       ": layer at position 3 has field \"index\" 7; layers must be listed in order 0, 1, 2, ... "
       "with no gap or duplicate"},
      {"huge.json", brokenProfile([](auto&) {}).replace(0, 1, "{\"big\": 1e999, "),
       ": not valid JSON: number overflow parsing '1e999'"},
      {"nan.json", brokenProfile([](auto&) {}).replace(0, 1, "{\"x\": NaN, "),
       ": not valid JSON: parse error at line 1, column 7: syntax error while parsing value - "
       "invalid literal; last read: '\"x\": N'"},
  };
  for (const auto& broken : cases) {
    INFO(broken.name);
    dir.write(broken.name, broken.content);
    checkInputError(runStagecut("inspect " + dir.file(broken.name)),
                      dir.file(broken.name) + broken.message_after_path);
  }
  checkInputError(runStagecut("inspect " + dir.file("absent.json")),
                    dir.file("absent.json") + ": cannot open (No such file or directory); check the path");
}

TEST_CASE("bad usage exits 2 with one line pointing at the help", "[cli][errors]") {
  const CommandResult unknown = runStagecut("frobnicate");
  CHECK(unknown.exit_code == 2);
  CHECK_THAT(unknown.err, StartsWith("stagecut: unknown command 'frobnicate'; use one of: bubble, inspect"));
  CHECK(std::count(unknown.err.begin(), unknown.err.end(), '\n') == 1);
  checkInputError(runStagecut("inspekt p.json"),
                    "unknown command 'inspekt', did you mean 'inspect'?");
  checkInputError(runStagecut("inspect"),
                    "file is required; run 'stagecut inspect --help' for usage");
}

TEST_CASE("version and help exit 0 and say what stagecut is", "[cli]") {
  const CommandResult version = runStagecut("--version");
  CHECK(version.exit_code == 0);
  CHECK_THAT(version.out, Contains("stagecut 0.1.0"));
  const CommandResult help = runStagecut("--help");
  CHECK(help.exit_code == 0);
  CHECK_THAT(help.out, Contains("inspect"));
  CHECK_THAT(help.out, Contains("bubble"));
}

TEST_CASE("help shows no default that a flag does not have", "[cli]") {
  // --recompute takes an optional value: given bare it means full, absent it means none. CLI11
  // would print the bare value as "TEXT=full", which reads as the default.
  for (const char* command : {"partition --help", "simulate --help"}) {
    INFO(command);
    const CommandResult help = runStagecut(command);
    CHECK(help.exit_code == 0);
    CHECK_THAT(help.out, Contains("--recompute [MODE]"));
    CHECK_THAT(help.out, !Contains("=full"));
  }
}

TEST_CASE("every sample file shipped in data/samples inspects cleanly", "[cli][inspect][data]") {
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(STAGECUT_SOURCE_DIR "/data/samples")) {
    if (entry.path().extension() != ".json") continue;
    INFO(entry.path().string());
    const CommandResult result = runStagecut("inspect '" + entry.path().string() + "'");
    CHECK(result.exit_code == 0);
    CHECK(result.err.empty());
    ++checked;
  }
  CHECK(checked > 0);
}

// ---- Standard output that cannot be written must not end in exit code 0 (issue #21). ----

TEST_CASE("output into a full disk on standard output ends in exit code 1 and one line",
          "[cli][stdout][errors]") {
  const TempDir dir;
  stagecut::writeProfileFile(dir.file("p.json"), makeProfile(3));
  const std::string message = "stagecut: cannot write standard output (No space left on device)\n";
  for (const std::string& args : {"inspect '" + dir.file("p.json") + "'",
                                 "partition '" + dir.file("p.json") + "' --stages 2 --json", std::string("--help")}) {
    INFO(args);
    const CommandResult result = stagecut::testing::runStagecutWithStdout(args, ">/dev/full");
    CHECK(result.exit_code == 1);
    CHECK(result.err == message);
  }
}

TEST_CASE("a closed standard output ends in exit code 1 and one line", "[cli][stdout][errors]") {
  const TempDir dir;
  stagecut::writeProfileFile(dir.file("p.json"), makeProfile(3));
  const CommandResult result = stagecut::testing::runStagecutWithStdout("inspect '" + dir.file("p.json") + "'", ">&-");
  CHECK(result.exit_code == 1);
  CHECK(result.err == "stagecut: cannot write standard output (Bad file descriptor)\n");
  // What it would have printed landed nowhere else, such as an output file opened later.
  const CommandResult written = stagecut::testing::runStagecutWithStdout(
      "partition '" + dir.file("p.json") + "' --stages 2 -o '" + dir.file("out.json") + "'", ">&-");
  CHECK(written.exit_code == 1);
  CHECK_NOTHROW(stagecut::parseJsonDocument(stagecut::readTextFile(dir.file("out.json")), "out.json"));
}

TEST_CASE("a pipe whose reader has gone ends the command quietly", "[cli][stdout]") {
  // More than a pipe holds, so stagecut writes after `head` has exited.
  const TempDir dir;
  const std::string command = "('" + std::string(STAGECUT_BINARY) +
                              "' simulate --stages 200 --microbatches 400 --width 200 --schedule all 2>'" +
                              dir.file("err") + "'; echo $? >'" + dir.file("code") + "') | head -c 1 >/dev/null";
  REQUIRE(std::system(command.c_str()) == 0);
  const std::string code = stagecut::readTextFile(dir.file("code"));
  const std::string err = stagecut::readTextFile(dir.file("err"));
  // SIGPIPE by default (128 + 13, nothing printed); where the caller ignores SIGPIPE, one line.
  const bool killed_quietly = code == "141\n" && err.empty();
  const bool one_line = code == "1\n" && err == "stagecut: cannot write standard output (Broken pipe)\n";
  INFO("exit code " << code << "stderr: " << err);
  CHECK((killed_quietly || one_line));
}

TEST_CASE("inspect marks layers whose times were copied and says how far the timed ones were apart",
          "[cli][inspect]") {
  const TempDir dir;
  stagecut::Profile profile = makeProfile(6);
  for (auto& layer : profile.layers) layer.kind = "TransformerBlock";
  profile.layers[3].times_from = std::vector<int>{1, 2, 5};
  profile.layers[4].times_from = std::vector<int>{1, 2, 5};
  stagecut::writeProfileFile(dir.file("p.json"), profile);
  const CommandResult result = runStagecut("inspect " + dir.file("p.json"));
  CHECK(result.exit_code == 0);
  CHECK_THAT(result.out, Contains("layer.3 =") && Contains("layer.4 ="));
  CHECK_THAT(result.out, !Contains("layer.2 ="));
  // The timed layers' forward + backward: the slowest over the fastest, minus 1.
  const auto ms = [&](int i) {
    return profile.layers[static_cast<std::size_t>(i)].forward_ms.median +
           profile.layers[static_cast<std::size_t>(i)].backward_ms.median;
  };
  const double spread = std::max({ms(1), ms(2), ms(5)}) / std::min({ms(1), ms(2), ms(5)}) - 1;
  char expected[160];
  std::snprintf(expected, sizeof expected,
                "5 TransformerBlock layers: timed 1, 2, 5 (%.1f%% apart), the other 2 take their samples", 100 * spread);
  CHECK_THAT(result.out, Contains(expected));
}
