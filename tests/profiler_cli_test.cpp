#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>

#include "core/json_document.h"
#include "core/profile_json.h"
#include "tests/test_support.h"

using stagecut::testing::CommandResult;
using stagecut::testing::checkInputError;
using stagecut::testing::runStagecut;
using stagecut::testing::TempDir;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

const char* const kQuick = " --warmup 0 --min-repeats 1 --max-repeats 1";

}  // namespace

TEST_CASE("stagecut profile writes a valid profile and prints its table", "[profiler][cli]") {
  const TempDir dir;
  const CommandResult result =
      runStagecut("profile --model mlp --layers 2 --hidden 32 --microbatch 2" + std::string(kQuick) +
                  " -o " + dir.file("mlp.json"));
  REQUIRE(result.exit_code == 0);
  CHECK(result.err.empty());  // no progress bar when stderr is not a terminal
  CHECK_THAT(result.out, Contains("fc.1"));
  CHECK_THAT(result.out, Contains("whole model"));
  const stagecut::Profile profile = stagecut::readProfileFile(dir.file("mlp.json"));
  REQUIRE(profile.layers.size() == 3u);
  CHECK(profile.device.threads == 1);
  CHECK(profile.device.extra["blas_threads"] == 1);
  CHECK(profile.run.extra["command"].get<std::string>().find("profile --model mlp") != std::string::npos);
  CHECK(dir.list() == std::vector<std::string>{"mlp.json"});
}

TEST_CASE("stagecut profile --json prints the profile document", "[profiler][cli]") {
  const CommandResult result =
      runStagecut("profile --model mlp --layers 1 --hidden 16 --json" + std::string(kQuick));
  REQUIRE(result.exit_code == 0);
  const auto profile = stagecut::profileFromJson(nlohmann::json::parse(result.out), "stdout");
  CHECK(profile.layers.size() == 2u);
}

TEST_CASE("stagecut profile rejects bad requests with one line and exit 2", "[profiler][cli][errors]") {
  checkInputError(runStagecut("profile --torchscript model.pt"),
                    "--torchscript model.pt: needs --input, e.g. --input 8x3x224x224:float32");
  checkInputError(runStagecut("profile --torchscript model.pt --input 8x3:float16"),
                    "--input \"8x3:float16\": unknown dtype \"float16\", did you mean 'float32'?");
  checkInputError(runStagecut("profile --model resnet"),
                    "--model resnet: not a built-in model; use one of: mlp, gpt, vgg16");
  checkInputError(runStagecut("profile --model gpt --preset gpt-tiny --heads 5"),
                    "--hidden 128 is not divisible by --heads 5; pick a head count that divides the width");
  checkInputError(runStagecut("profile --device tpu"), "--device tpu: unknown device; use cpu, cuda or cuda:K");
  checkInputError(runStagecut("profile --threads 0"), "--threads 0: use 1 or more threads");
  const CommandResult cuda = runStagecut("profile --device cuda");
  CHECK(cuda.exit_code == 2);
  CHECK_THAT(cuda.err, Contains("--device cuda: this stagecut is linked against a CPU-only LibTorch"));
  CHECK_THAT(cuda.err, Contains("or profile with --device cpu"));
}

TEST_CASE("an unwritable output path fails with one line and leaves nothing behind", "[profiler][cli][errors]") {
  const TempDir dir;
  const CommandResult result = runStagecut("profile --model mlp --layers 1 --hidden 8" + std::string(kQuick) +
                                           " -o " + dir.file("missing/out.json"));
  CHECK(result.exit_code == 2);
  CHECK(result.err == "stagecut: cannot write " + dir.file("missing/out.json") +
                          " (No such file or directory); check that its folder exists and is writable\n");
  CHECK(dir.list().empty());
}

TEST_CASE("stagecut profile -o onto its TorchScript model is refused before any work and the model kept",
          "[profiler][cli][output][errors]") {
  const TempDir dir;
  dir.write("m.pt", "the model's bytes");  // refused before it is loaded, so any bytes do
  checkInputError(runStagecut("profile --torchscript " + dir.file("m.pt") + " --input 4x8:float32 -o " + dir.file("m.pt")),
                  "-o " + dir.file("m.pt") + ": that is the --torchscript model " + dir.file("m.pt") +
                      "; write to another file");
  checkInputError(runStagecut("profile --model mlp --layers 1 --hidden 8 -o ''"),
                  "-o '': the file name is empty; name the file to write");
  CHECK(stagecut::readTextFile(dir.file("m.pt")) == "the model's bytes");
  CHECK(dir.list() == std::vector<std::string>{"m.pt"});
}

TEST_CASE("a profile whose final write hits a full disk keeps its samples for --resume and no temporary",
          "[profiler][cli][output][errors]") {
  const TempDir dir;
  const std::string full = dir.file("full");
  if (::mknod(full.c_str(), S_IFCHR | 0666, makedev(1, 7)) != 0) {
    WARN("cannot make a device node here (needs root); a private /dev/full as -o not tested");
    return;
  }
  const CommandResult result =
      runStagecut("profile --model mlp --layers 1 --hidden 8 --microbatch 2" + std::string(kQuick) + " -o " + full);
  CHECK(result.exit_code == 1);
  CHECK(result.out.empty());
  CHECK_THAT(result.err, StartsWith("stagecut: cannot write " + full +
                                    " (No space left on device); free some space or write to another disk; "));
  CHECK_THAT(result.err, Contains(" timed samples kept in " + full +
                                  ".resume.json; rerun the same command with --resume to continue from them\n"));
  CHECK(std::count(result.err.begin(), result.err.end(), '\n') == 1);
  CHECK(dir.list() == std::vector<std::string>{"full", "full.resume.json"});  // no *.tmp.* left
  struct stat info {};
  REQUIRE(::lstat(full.c_str(), &info) == 0);
  CHECK(S_ISCHR(info.st_mode));
}
