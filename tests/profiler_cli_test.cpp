#include <catch2/catch.hpp>

#include <sched.h>
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

using stagecut::testing::kQuickProfileFlags;

namespace {


// The oracle for --threads' bound: the CPUs the kernel lets this process run on.
int affinityCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  REQUIRE(::sched_getaffinity(0, sizeof set, &set) == 0);
  return CPU_COUNT(&set);
}

}  // namespace

TEST_CASE("stagecut profile writes a valid profile and prints its table", "[profiler][cli]") {
  const TempDir dir;
  const CommandResult result =
      runStagecut("profile --model mlp --layers 2 --hidden 32 --microbatch 2" + kQuickProfileFlags +
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
      runStagecut("profile --model mlp --layers 1 --hidden 16 --json" + kQuickProfileFlags);
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
                    "--model resnet: not a built-in model; use one of: mlp, gpt, llama, vgg16");
  checkInputError(runStagecut("profile --model gpt --preset gpt-tiny --heads 5"),
                    "--hidden 128 is not divisible by --heads 5; pick a head count that divides the width");
  checkInputError(runStagecut("profile --device tpu"),
                  "--device tpu: unknown device; use cpu, cuda or cuda:K (K a device number, e.g. cuda:0)");
  checkInputError(runStagecut("profile --threads 0"),
                  "--threads 0: use 1 to " + std::to_string(affinityCores()) +
                      " threads (the cores this process may run on); more threads than cores measure the contention, "
                      "not the model");
  const CommandResult cuda = runStagecut("profile --device cuda");
  CHECK(cuda.exit_code == 2);
  CHECK_THAT(cuda.err, Contains("--device cuda: this stagecut is linked against a CPU-only LibTorch"));
  CHECK_THAT(cuda.err, Contains("or profile with --device cpu"));
}

TEST_CASE("an unwritable output path fails with one line and leaves nothing behind", "[profiler][cli][errors]") {
  const TempDir dir;
  const CommandResult result = runStagecut("profile --model mlp --layers 1 --hidden 8" + kQuickProfileFlags +
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
      runStagecut("profile --model mlp --layers 1 --hidden 8 --microbatch 2" + kQuickProfileFlags + " -o " + full);
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

TEST_CASE("profile refuses numbers that are no request, before LibTorch runs anything", "[profiler][cli][errors]") {
  const std::string threads_rule = " threads (the cores this process may run on); more threads than cores measure the "
                                   "contention, not the model";
  const std::string cores = std::to_string(affinityCores());
  const std::pair<std::string, std::string> cases[] = {
      // Zero is not "the preset's": leaving the flag out is.
      {"--model gpt --layers 0", "--layers 0: must be 1 or more; leave it out for the preset's"},
      {"--model gpt --seq 0", "--seq 0: must be 1 or more; leave it out for the preset's"},
      {"--model gpt --heads 0", "--heads 0: must be 1 or more; leave it out for the preset's"},
      {"--model gpt --vocab 0", "--vocab 0: must be 1 or more; leave it out for the preset's"},
      {"--model vgg16 --classes 0", "--classes 0: must be 1 or more; leave it out for the preset's"},
      {"--model mlp --layers -1", "--layers -1: must be 1 or more; leave it out for the preset's"},
      // Too large to be meant, or for the machine's memory.
      {"--model gpt --hidden 1000000", "--hidden 1000000: at most 65536 for a zoo model; choose a smaller size"},
      // Built one layer at a time, so its largest layer is what must fit.
      {"--model gpt --layers 4096 --hidden 65536 --heads 64",
       "--model gpt: the weights and their gradients of its largest layer alone would take "},
      // Seeds are digits, not wrapped negatives or rounded floats.
      {"--seed -1", "--seed -1: a seed is a whole number from 0 to 18446744073709551615, in digits"},
      {"--seed 1e3", "--seed 1e3: a seed is a whole number from 0 to 18446744073709551615, in digits"},
      {"--seed 18446744073709551616",
       "--seed 18446744073709551616: a seed is a whole number from 0 to 18446744073709551615, in digits"},
      {"--budget nan", "--budget nan: must be a finite number of seconds per layer above 0 and at most 86400"},
      {"--budget inf", "--budget inf: must be a finite number of seconds per layer above 0 and at most 86400"},
      {"--cv-target -0.1",
       "--cv-target -0.1: must be a finite number of coefficient of variation above 0 and at most 10"},
      // -1 is the default's own marker ("auto"), not a value a user may give.
      {"--warmup -1", "--warmup -1: use 0 to 1000 rounds"},
      {"--warmup -5", "--warmup -5: use 0 to 1000 rounds"},
      {"--max-repeats 2 --min-repeats 3",
       "--max-repeats 2: use 3 to 1000000 timed rounds (no fewer than --min-repeats)"},
      {"--threads 100000", "--threads 100000: use 1 to " + cores + threads_rule},
      {"--threads 4096", "--threads 4096: use 1 to " + cores + threads_rule},
      // --input belongs to a TorchScript module; the zoo's sizes to the zoo.
      {"--model gpt --input 4x8:int64", "--input 4x8:int64: is the sample input of a --torchscript module; a zoo "
                                        "model makes its own"},
      {"--torchscript m.pt --input 4x8:float32 --hidden 64",
       "--hidden: sizes a zoo model; a --torchscript module has its own"},
      // A setting belongs to the families the registry says take it.
      {"--model mlp --heads 4", "--heads: is a setting of --model gpt or llama, not of --model mlp"},
      {"--model gpt --image-size 64", "--image-size: is a setting of --model vgg16, not of --model gpt"},
      {"--model gpt2 --layers 2", "--model gpt2: not a built-in model, did you mean 'gpt'?"},
  };
  for (const auto& [args, message] : cases) {
    INFO(args);
    const CommandResult result = runStagecut("profile " + args);
    CHECK(result.exit_code == 2);
    CHECK(result.out.empty());
    CHECK_THAT(result.err, StartsWith("stagecut: " + message));
    CHECK(std::count(result.err.begin(), result.err.end(), '\n') == 1);
  }
}
