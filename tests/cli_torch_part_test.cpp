#include <catch2/catch.hpp>

#include <filesystem>

#include "tests/test_support.h"

using Catch::Matchers::Contains;
using stagecut::testing::CommandResult;
using stagecut::testing::runProgram;
using stagecut::testing::runStagecut;
using stagecut::testing::TempDir;

using stagecut::testing::kExampleGptProfile;

namespace {


}  // namespace

TEST_CASE("the LibTorch-free commands start without loading LibTorch", "[cli][startup]") {
  // The dynamic loader names every library it loads: LibTorch's (libtorch*, libc10*) must not be among them.
  for (const std::string& command : {"inspect '" + kExampleGptProfile + "'", "partition '" + kExampleGptProfile + "' --stages 2",
                                     std::string("--version"), std::string("--help")}) {
    INFO(command);
    const CommandResult result = runStagecut(command, "LD_DEBUG=libs");
    REQUIRE(result.exit_code == 0);
    CHECK_THAT(result.err, Contains("calling init"));  // the loader did report what it loaded
    CHECK_THAT(result.err, !Contains("libtorch"));
    CHECK_THAT(result.err, !Contains("libc10"));
  }
}

TEST_CASE("help lists the LibTorch commands beside the others", "[cli][startup]") {
  const CommandResult help = runStagecut("--help");
  REQUIRE(help.exit_code == 0);
  for (const char* command : {"inspect", "partition", "calibrate", "profile", "validate", "demo"}) {
    CHECK_THAT(help.out, Contains(std::string("  ") + command + " "));
  }
  CHECK_THAT(runStagecut("profil").err, Contains("did you mean 'profile'?"));
}

TEST_CASE("a LibTorch command without the LibTorch part is one line", "[cli][startup][errors]") {
  // stagecut alone in a folder: the part it hands profile to is not next to it.
  const TempDir dir;
  std::filesystem::copy_file(STAGECUT_BINARY, dir.file("stagecut"));
  std::filesystem::permissions(dir.file("stagecut"), std::filesystem::perms::owner_all);
  for (const char* command : {"profile --model gpt", "validate x.json --partition y.json", "demo --help"}) {
    INFO(command);
    const CommandResult result = runProgram(dir.file("stagecut"), command);
    CHECK(result.out.empty());
    CHECK(std::count(result.err.begin(), result.err.end(), '\n') == 1);
#ifdef STAGECUT_TEST_TORCH_PART
    CHECK(result.exit_code == 1);
    CHECK_THAT(result.err, Contains(": needs stagecut's LibTorch part, " + dir.file("stagecut-torch") + ", which is missing"));
#else
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.err, Contains("needs LibTorch, and this stagecut was built without it (STAGECUT_TORCH=OFF)"));
#endif
  }
}

#ifdef STAGECUT_TEST_TORCH_PART
TEST_CASE("stagecut hands the LibTorch commands to its LibTorch part", "[cli][startup]") {
  const CommandResult help = runStagecut("profile --help");
  REQUIRE(help.exit_code == 0);
  CHECK_THAT(help.out, Contains("--model"));
  const CommandResult version = runStagecut("--version");
  CHECK_THAT(version.out, Contains("profile, validate and demo run stagecut-torch, built against LibTorch "));
  // Its errors are its own, one line, exit 2.
  const CommandResult bad = runStagecut("profile --model nosuch");
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Contains("nosuch"));
  CHECK(std::count(bad.err.begin(), bad.err.end(), '\n') == 1);
}
#endif
