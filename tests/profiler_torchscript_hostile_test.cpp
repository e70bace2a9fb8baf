// TorchScript files of every wrong shape, written here with LibTorch's C++ API, given to
// `stagecut profile --torchscript`: each ends in one line naming the file (and the layer where
// one is at fault) and exit code 2, never "internal error" or a TorchScript traceback. And the
// model's fingerprint, which validate and --resume check against the file.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <torch/script.h>
#include <torch/serialize.h>

#include "core/json_document.h"
#include "core/partition_json.h"
#include "core/profile_json.h"
#include "core/sha256.h"
#include "profiler/torch_compat.h"
#include "tests/test_support.h"

using stagecut::testing::CommandResult;
using stagecut::testing::checkInputError;
using stagecut::testing::runStagecut;
using stagecut::testing::TempDir;

using stagecut::testing::kQuickProfileFlags;

namespace {

const char* const kAdvice =
    "export a chain: an nn.Sequential, or a module whose forward calls its children one after "
    "another on one tensor";

// A child module: `body` is its forward's body (argument x), `weight` its parameter's shape.
torch::jit::Module child(const std::string& type, const std::string& body, std::vector<int64_t> weight = {8, 8}) {
  torch::jit::Module module(type);
  module.register_parameter("weight", torch::randn(weight).requires_grad_(), false);
  module.define("def forward(self, x):\n" + body);
  return module;
}

torch::jit::Module linear(const std::string& type = "Linear") {
  return child(type, "  return torch.matmul(x, self.weight)\n");
}

// A model of `children` (named a, b, c, ...) whose forward runs them in order.
std::string saveChain(const TempDir& dir, std::vector<torch::jit::Module> children,
                      const std::string& forward = "") {
  torch::jit::Module model("Model");
  std::string body = "  y = x\n";
  for (std::size_t i = 0; i < children.size(); ++i) {
    const std::string name(1, static_cast<char>('a' + i));
    model.register_module(name, children[i]);
    body += "  y = self." + name + ".forward(y)\n";
  }
  body += "  return y\n";
  model.define("def forward(self, x):\n" + (forward.empty() ? body : forward));
  const std::string path = dir.file("model.pt");
  model.save(path);
  return path;
}

CommandResult profile(const std::string& path, const std::string& input) {
  return runStagecut("profile --torchscript " + path + " --input " + input + kQuickProfileFlags + " -o " +
                     path + ".json");
}

// One hostile module: how it is made, the --input it is profiled with, and the one line
// expected ("PATH" stands for the model file's path).
struct HostileModule {
  std::string what;
  std::function<std::string(const TempDir&)> make;
  std::string input;
  std::string message;
};

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

std::string saveModel(const TempDir& dir, torch::jit::Module model) {
  model.save(dir.file("model.pt"));
  return dir.file("model.pt");
}

// A linear child then `second`, the model's forward returning the first child's output only
// where the second child cannot be called in a chain.
std::string saveLinearThen(const TempDir& dir, torch::jit::Module second) {
  return saveChain(dir, {linear(), std::move(second)}, "  return self.a.forward(x)\n");
}

const std::string kFailed = "; check --input, or " + std::string(kAdvice);

// LibTorch's own words for a matrix product of two dtypes, which 2.0 changed.
std::string dtypeMismatch(const char* first, const char* first_1x, const char* second, const char* second_1x) {
#if STAGECUT_TORCH_AT_LEAST(2, 0)
  (void)first_1x, (void)second_1x;
  return std::string("expected m1 and m2 to have the same dtype, but got: ") + first + " != " + second;
#else
  (void)first, (void)second;
  return std::string("expected scalar type ") + first_1x + " but found " + second_1x;
#endif
}

std::vector<HostileModule> hostileModules() {
  return {
      {"an empty file", [](const TempDir& dir) { dir.write("model.pt", ""); return dir.file("model.pt"); },
       "4x8:float32",
       "PATH: not a TorchScript module (PytorchStreamReader failed reading zip archive: not a ZIP archive); save "
       "one with torch.jit.save(torch.jit.script(model), path)"},
      {"text", [](const TempDir& dir) { dir.write("model.pt", "def forward(x): return x\n"); return dir.file("model.pt"); },
       "4x8:float32",
       "PATH: not a TorchScript module (PytorchStreamReader failed reading zip archive: failed finding central "
       "directory); save "
       "one with torch.jit.save(torch.jit.script(model), path)"},
      {"a folder", [](const TempDir& dir) { ::mkdir(dir.file("model.pt").c_str(), 0755); return dir.file("model.pt"); },
       "4x8:float32", "PATH: is a folder; give the TorchScript file saved in it"},
      {"a missing file", [](const TempDir& dir) { return dir.file("model.pt"); }, "4x8:float32",
       "PATH: cannot be read (No such file or directory); give the TorchScript file's path"},
      {"a tensor saved with torch.save",
       [](const TempDir& dir) { torch::save(torch::ones({2}), dir.file("model.pt")); return dir.file("model.pt"); },
       "4x8:float32", "PATH: the module has no child modules to use as layers; " + std::string(kAdvice)},
      {"a module without children",
       [](const TempDir& dir) {
         torch::jit::Module model("Model");
         model.define("def forward(self, x):\n  return x * 2\n");
         return saveModel(dir, model);
       },
       "4x8:float32", "PATH: the module has no child modules to use as layers; " + std::string(kAdvice)},
      {"a child returning a tuple", [](const TempDir& dir) { return saveLinearThen(dir, child("Pair", "  return (x, x)\n")); },
       "4x8:float32", "PATH: layer 1 (b, Pair) returns a tuple, not one tensor; " + std::string(kAdvice)},
      {"a child returning a dict",
       [](const TempDir& dir) { return saveLinearThen(dir, child("Named", "  return {\"y\": x}\n")); }, "4x8:float32",
       "PATH: layer 1 (b, Named) returns a dict, not one tensor; " + std::string(kAdvice)},
      {"a child returning a list", [](const TempDir& dir) { return saveLinearThen(dir, child("Listed", "  return [x]\n")); },
       "4x8:float32", "PATH: layer 1 (b, Listed) returns a list, not one tensor; " + std::string(kAdvice)},
      {"a child returning None", [](const TempDir& dir) { return saveLinearThen(dir, child("Nothing", "  return None\n")); },
       "4x8:float32", "PATH: layer 1 (b, Nothing) returns None, not one tensor; " + std::string(kAdvice)},
      {"a forward returning a tuple",
       [](const TempDir& dir) {
         return saveChain(dir, {linear(), linear()}, "  return (self.b.forward(self.a.forward(x)), x)\n");
       },
       "4x8:float32", "PATH: the module's forward returns a tuple, not one tensor; " + std::string(kAdvice)},
      {"the control: a well-formed chain",
       [](const TempDir& dir) { return saveChain(dir, {linear(), linear()}, "  return self.b.forward(self.a.forward(x))\n"); },
       "4x8:float32", ""},
      {"a child of two inputs",
       [](const TempDir& dir) {
         torch::jit::Module two("Two");
         two.define("def forward(self, x, y):\n  return x + y\n");
         return saveLinearThen(dir, two);
       },
       "4x8:float32",
       "PATH: layer 1 (b, Two) failed on the sample input (forward() is missing value for argument 'y'. Declaration: "
       "forward(__torch__.Two self, Tensor x, Tensor y) -> Tensor)" + kFailed},
      {"a child without forward",
       [](const TempDir& dir) {
         torch::jit::Module holder("Holder");
         holder.register_parameter("w", torch::ones({2}), false);
         torch::jit::Module model("Model");
         model.register_module("a", holder);
         model.define("def forward(self, x):\n  return x\n");
         return saveModel(dir, model);
       },
       "4x8:float32", "PATH: layer 0 (a, Holder) failed on the sample input (Method 'forward' is not defined)" + kFailed},
      {"a child that raises",
       [](const TempDir& dir) {
         return saveChain(dir, {linear(), child("Refuses", "  assert bool(x.sum() > 1e30), \"the child refuses\"\n  return x\n")});
       },
       "4x8:float32", "PATH: layer 1 (b, Refuses) failed on the sample input (AssertionError: the child refuses)" + kFailed},
      {"an input of the wrong shape", [](const TempDir& dir) { return saveChain(dir, {linear(), linear()}); }, "4x7:float32",
       "PATH: layer 0 (a, Linear) failed on the sample input (mat1 and mat2 shapes cannot be multiplied (4x7 and 8x8))" + kFailed},
      {"an input of the wrong dtype", [](const TempDir& dir) { return saveChain(dir, {linear(), linear()}); },
       "4x8:int64:0..5", "PATH: layer 0 (a, Linear) failed on the sample input (" + dtypeMismatch("long int", "Long", "float", "Float") + ")" + kFailed},
      {"a child of another dtype",
       [](const TempDir& dir) {
         return saveChain(dir, {linear(), child("Double", "  return torch.matmul(x, self.weight.double())\n")});
       },
       "4x8:float32", "PATH: layer 1 (b, Double) failed on the sample input (" + dtypeMismatch("float", "Float", "double", "Double") + ")" + kFailed},
      {"a child that detaches",
       [](const TempDir& dir) { return saveChain(dir, {linear(), child("Cut", "  return x.detach()\n")}); }, "4x8:float32",
       "PATH: layer 1 (b, Cut) returns a tensor without a gradient (float32; made by detach(), argmax or another step "
       "autograd cannot follow); a pipeline trains through every layer, so keep such steps out of the chain"},
      {"a child returning integers",
       [](const TempDir& dir) { return saveChain(dir, {linear(), child("Argmax", "  return torch.argmax(x, 1)\n")}); },
       "4x8:float32",
       "PATH: layer 1 (b, Argmax) returns a tensor without a gradient (int64; made by detach(), argmax or another step "
       "autograd cannot follow); a pipeline trains through every layer, so keep such steps out of the chain"},
      {"a child whose backward fails",
       [](const TempDir& dir) {
         return saveChain(dir, {linear(), child("Sigmoid", "  y = torch.sigmoid(x)\n  y.mul_(2.0)\n  return y\n")});
       },
       "4x8:float32",
       "PATH: the backward of layer 1 (b, Sigmoid) fails on the sample input (one of the variables needed for gradient "
       "computation has been modified by an inplace operation: [CPUFloatType [4, 8]], which is output 0 of "
       "SigmoidBackward0, is at version 1; expected version 0 instead); fix the module, or leave that step out "
       "of the chain"},
      {"a sample input larger than memory", [](const TempDir& dir) { return saveChain(dir, {linear(), linear()}); },
       "100000000x100000000:float32", "MEMORY"},
      {"a dimension past int", [](const TempDir& dir) { return saveChain(dir, {linear(), linear()}); },
       "100000000000x8:float32",
       "--input \"100000000000x8:float32\": dimension 100000000000 is more than 999999999; use DIMSxDIMS:DTYPE, e.g. "
       "8x3x224x224:float32, or 4x512:int64:0..50257 for integers"},
  };
}

}  // namespace

TEST_CASE("profile --torchscript refuses modules of every wrong shape with one line and exit 2",
          "[profiler][torchscript][hostile]") {
  for (const HostileModule& hostile : hostileModules()) {
    INFO(hostile.what);
    const TempDir dir;
    const std::string path = hostile.make(dir);
    const std::vector<std::string> before = dir.list();
    const CommandResult result = profile(path, hostile.input);
    if (hostile.message.empty()) {
      CHECK(result.exit_code == 0);
      continue;
    }
    if (hostile.message == "MEMORY") {
      // The machine's memory is in the message; the rest is fixed.
      checkInputError(result, result.err.substr(10, result.err.size() - 11));
      CHECK_THAT(result.err, Catch::Matchers::StartsWith("stagecut: " + path + ": its sample input "
                                                         "100000000x100000000:float32 alone would take 35.5 PiB, "
                                                         "more than this machine's "));
      CHECK_THAT(result.err, Catch::Matchers::EndsWith(" of memory; give a smaller --input\n"));
    } else {
      checkInputError(result, replaced(hostile.message, "PATH", path));
    }
    CHECK(dir.list() == before);  // no profile, no side file
  }
}

TEST_CASE("modules with two-input forwards are refused: the model's and a child's",
          "[profiler][torchscript][hostile]") {
  const TempDir dir;
  torch::jit::Module model("Model");
  model.register_module("a", linear());
  model.define("def forward(self, x, y):\n  return self.a.forward(x + y)\n");
  const std::string path = saveModel(dir, model);
  checkInputError(profile(path, "4x8:float32"),
                  path + ": the module's forward failed on the sample input (forward() is missing value for argument "
                         "'y'. Declaration: forward(__torch__.Model self, Tensor x, Tensor y) -> Tensor)" + kFailed);
}

// ReLU(inplace=True) and the like write into their input: on a layer's leaf input autograd
// refuses that ("a leaf Variable that requires grad is being used in an in-place operation",
// VGG16's case), so the profiler and the pipeline give such a layer a copy.
TEST_CASE("layers that write into their input are profiled and validated", "[profiler][torchscript][inplace]") {
  const TempDir dir;
  const std::string path = saveChain(dir, {child("ReLU", "  return torch.relu_(x)\n"), linear(),
                                           child("ReLU", "  return torch.relu_(x)\n"), linear("Last")});
  const CommandResult profiled = profile(path, "4x8:float32");
  REQUIRE(profiled.exit_code == 0);
  const stagecut::Profile read = stagecut::readProfileFile(path + ".json");
  REQUIRE(read.layers.size() == 4u);
  for (const auto& layer : read.layers) CHECK(layer.forward_ms.median > 0);
  // Stage 1 starts at the second ReLU: its input is the received activation, a leaf.
  stagecut::writePartitionFile(dir.file("split.json"), stagecut::testing::makePartition({2, 2}));
  for (const char* schedule : {"1f1b", "zb-h1"}) {
    for (const char* recompute : {"none", "full"}) {
      INFO(schedule << " --recompute " << recompute);
      const CommandResult validated =
          runStagecut("validate " + path + ".json --partition " + dir.file("split.json") + " --schedule " + schedule +
                      " --recompute " + recompute + " --microbatches 2 --steps 1 --json");
      REQUIRE(validated.exit_code == 0);
      CHECK(nlohmann::json::parse(validated.out)["grad_check"] == "pass");
    }
  }
}

// Provenance: a profile records what it measured, and the later steps check it.
TEST_CASE("a profile records its model's fingerprint: the TorchScript file's SHA-256, a zoo model's config",
          "[profiler][fingerprint]") {
  const TempDir dir;
  const std::string path = saveChain(dir, {linear(), linear()});
  REQUIRE(profile(path, "4x8:float32").exit_code == 0);
  CHECK(stagecut::readProfileFile(path + ".json").model.fingerprint ==
        "sha256:" + stagecut::sha256Hex(stagecut::readTextFile(path)));
  REQUIRE(runStagecut("profile --model mlp --layers 1 --hidden 8 --seed 5" + kQuickProfileFlags + " -o " +
                      dir.file("a.json")).exit_code == 0);
  REQUIRE(runStagecut("profile --model mlp --layers 1 --hidden 8 --seed 6" + kQuickProfileFlags + " -o " +
                      dir.file("b.json")).exit_code == 0);
  const stagecut::Profile a = stagecut::readProfileFile(dir.file("a.json"));
  const stagecut::Profile b = stagecut::readProfileFile(dir.file("b.json"));
  CHECK(a.model.fingerprint.rfind("sha256:", 0) == 0);
  CHECK(a.model.fingerprint != b.model.fingerprint);  // the seed draws other weights
}

TEST_CASE("validate refuses a TorchScript model changed since it was profiled, before any rank starts",
          "[profiler][fingerprint][errors]") {
  const TempDir dir;
  const std::string path = saveChain(dir, {linear(), linear()});
  REQUIRE(profile(path, "4x8:float32").exit_code == 0);
  stagecut::writePartitionFile(dir.file("split.json"), stagecut::testing::makePartition({1, 1}));
  const std::string validate = "validate " + path + ".json --partition " + dir.file("split.json") +
                               " --microbatches 2 --steps 1";
  REQUIRE(runStagecut(validate).exit_code == 0);
  // The profile's layers named the other way round: refused by the launcher, exit 2.
  const std::string profiled = stagecut::readTextFile(path + ".json");
  nlohmann::json swapped = nlohmann::json::parse(profiled);
  const nlohmann::json first_name = swapped["layers"][0]["name"];
  swapped["layers"][0]["name"] = swapped["layers"][1]["name"];
  swapped["layers"][1]["name"] = first_name;
  dir.write("model.pt.json", swapped.dump());
  checkInputError(runStagecut(validate), path + ".json: layer 0 of the rebuilt model is " + first_name.dump() +
                                             ", the profile's " + swapped["layers"][0]["name"].dump() +
                                             "; profile the model again");
  dir.write("model.pt.json", profiled);
  saveChain(dir, {linear(), linear()});  // same children, new random weights
  checkInputError(runStagecut(validate), path + ".json: its TorchScript model " + path +
                                             " has changed since it was profiled (its fingerprint differs from "
                                             "model.fingerprint); profile the model again, or validate with the "
                                             "file that was profiled");
}

TEST_CASE("validate refuses a zoo profile whose model.config was edited after profiling",
          "[profiler][fingerprint][errors]") {
  const TempDir dir;
  REQUIRE(runStagecut("profile --model mlp --layers 1 --hidden 8" + kQuickProfileFlags + " -o " + dir.file("p.json"))
              .exit_code == 0);
  stagecut::writePartitionFile(dir.file("split.json"), stagecut::testing::makePartition({1, 1}));
  nlohmann::json document = nlohmann::json::parse(stagecut::readTextFile(dir.file("p.json")));
  document["model"]["config"]["seed"] = 99;
  dir.write("p.json", document.dump());
  checkInputError(runStagecut("validate " + dir.file("p.json") + " --partition " + dir.file("split.json")),
                  dir.file("p.json") + ": model.config is not the one that was profiled (it no longer matches "
                                       "model.fingerprint); profile the model again");
  // A profile from before fingerprints (none recorded) is still validated.
  document["model"].erase("fingerprint");
  dir.write("p.json", document.dump());
  CHECK(runStagecut("validate " + dir.file("p.json") + " --partition " + dir.file("split.json") +
                    " --microbatches 2 --steps 1").exit_code == 0);
}

TEST_CASE("profile --resume refuses samples of a TorchScript file that changed since", "[profiler][fingerprint][resume][errors]") {
  const TempDir dir;
  const std::string path = saveChain(dir, {linear(), linear()});
  const std::string command = "profile --torchscript " + path + " --input 4x8:float32 --warmup 0 --min-repeats 3 "
                              "--max-repeats 3 -o " + dir.file("p.json");
  REQUIRE(runStagecut(command, "STAGECUT_TEST_INTERRUPT_AFTER=2").exit_code == 130);
  saveChain(dir, {linear(), linear()});
  checkInputError(runStagecut(command + " --resume"),
                  dir.file("p.json.resume.json") + ": holds samples of another version of " + path +
                      ", which has changed since they were taken; delete the file to profile the new one from the start");
  CHECK(dir.list() == std::vector<std::string>{"model.pt", "p.json.resume.json"});
}
