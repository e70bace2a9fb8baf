#include <catch2/catch.hpp>

#include <torch/script.h>

#include "core/error.h"
#include "profiler/input_spec.h"
#include "profiler/torchscript_chain.h"
#include "tests/test_support.h"

using stagecut::testing::TempDir;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

torch::jit::Module linearModule(const std::string& name, int64_t in, int64_t out) {
  torch::jit::Module module(name);
  module.register_parameter("weight", torch::randn({in, out}).requires_grad_(), false);
  module.define("def forward(self, x):\n  return torch.relu(torch.matmul(x, self.weight))\n");
  return module;
}

// A module of three children; `forward_body` decides whether it runs them as a chain.
std::string saveModule(const TempDir& dir, const std::string& forward_body, const std::string& metadata = "") {
  torch::jit::Module model("Model");
  model.register_module("encoder", linearModule("Encoder", 8, 16));
  model.register_module("middle", linearModule("Middle", 16, 16));
  model.register_module("decoder", linearModule("Decoder", 16, 4));
  model.define("def forward(self, x):\n" + forward_body);
  const std::string path = dir.file("model.pt");
  torch::jit::ExtraFilesMap extra_files;
  if (!metadata.empty()) extra_files["stagecut.json"] = metadata;
  model.save(path, extra_files);
  return path;
}

const char* const kChainForward = "  return self.decoder.forward(self.middle.forward(self.encoder.forward(x)))\n";

// tools/stagecut_export.py's metadata for saveModule's three children, as it writes it.
std::string exporterMetadata(const std::string& middle_child) {
  return R"({"format": "stagecut-chain", "version": 1, "source": "module:m.py:build", "input": "5x8:float32",
    "layers": [{"child": "encoder", "name": "enc.0", "kind": "Linear", "module": "enc.0"},
               {"child": ")" + middle_child + R"(", "name": "enc.1", "kind": "Residual", "module": "enc.1"},
               {"child": "decoder", "name": "head", "kind": "Linear", "module": "head"}]})";
}

}  // namespace

TEST_CASE("a TorchScript chain's layers are its children in order", "[profiler][torchscript]") {
  const TempDir dir;
  const std::string path = saveModule(dir, "  return self.decoder.forward(self.middle.forward(self.encoder.forward(x)))\n");
  const auto chain = stagecut::loadTorchScriptChain(path, stagecut::parseInputSpec("5x8:float32"), 0);
  REQUIRE(chain.layers.size() == 3u);
  CHECK(chain.layers[0].name == "encoder");
  CHECK(chain.layers[1].name == "middle");
  CHECK(chain.layers[2].name == "decoder");
  CHECK(chain.layers[0].parameters.size() == 1u);
  const auto batch = chain.make_batch(3, 0);
  CHECK(chain.forward(batch).sizes() == torch::IntArrayRef({3, 4}));
}

TEST_CASE("an exported chain's layers take the names and kinds its stagecut.json gives", "[profiler][torchscript]") {
  const TempDir dir;
  const std::string path = saveModule(dir, kChainForward, exporterMetadata("middle"));
  const auto chain = stagecut::loadTorchScriptChain(path, stagecut::parseInputSpec("5x8:float32"), 0);
  REQUIRE(chain.layers.size() == 3u);
  CHECK(chain.layers[0].name == "enc.0");
  CHECK(chain.layers[1].name == "enc.1");
  CHECK(chain.layers[1].kind == "Residual");
  CHECK(chain.layers[2].name == "head");
  // And a failing layer is named as the profile names it.
  CHECK_THROWS_WITH(stagecut::loadTorchScriptChain(path, stagecut::parseInputSpec("5x7:float32"), 0),
                    StartsWith(path + ": layer 0 (enc.0, Linear) failed on the sample input (mat1 and mat2 shapes "
                                      "cannot be multiplied (5x7 and 8x16))"));
}

TEST_CASE("a stagecut.json that does not describe the module's children is refused", "[profiler][torchscript][errors]") {
  const TempDir dir;
  const std::string path = saveModule(dir, kChainForward, exporterMetadata("mid"));
  CHECK_THROWS_WITH(stagecut::loadTorchScriptChain(path, stagecut::parseInputSpec("5x8:float32"), 0),
                    path + ": its stagecut.json names child 1 \"mid\", the module's is \"middle\"; export the "
                           "model again with tools/stagecut_export.py");
  const std::string newer = saveModule(dir, kChainForward, R"({"format": "stagecut-chain", "version": 2, "layers": []})");
  CHECK_THROWS_WITH(stagecut::loadTorchScriptChain(newer, stagecut::parseInputSpec("5x8:float32"), 0),
                    newer + ": its stagecut.json has version 2; this stagecut reads version 1: update stagecut, or "
                            "export with its own exporter");
  const std::string short_list = saveModule(dir, kChainForward, R"({"format": "stagecut-chain", "version": 1, "layers": []})");
  CHECK_THROWS_WITH(stagecut::loadTorchScriptChain(short_list, stagecut::parseInputSpec("5x8:float32"), 0),
                    short_list + ": its stagecut.json describes 0 layers, the module has 3 children; export the "
                                 "model again with tools/stagecut_export.py");
}

TEST_CASE("a module whose forward is not its children in order is rejected", "[profiler][torchscript][errors]") {
  const TempDir dir;
  // The children in order, then one more step: whatever the random weights, the two differ.
  const std::string path =
      saveModule(dir, "  return self.decoder.forward(self.middle.forward(self.encoder.forward(x))) * 2.0 + 1.0\n");
  CHECK_THROWS_WITH(stagecut::loadTorchScriptChain(path, stagecut::parseInputSpec("5x8:float32"), 0),
                    StartsWith(path + ": the module's forward is not its children run in order (") &&
                        Contains("export a chain: an nn.Sequential, or a module whose forward calls "
                                 "its children one after another on one tensor"));
}

TEST_CASE("a file that is not a TorchScript module is rejected", "[profiler][torchscript][errors]") {
  const TempDir dir;
  dir.write("junk.pt", "this is not a zip archive");
  CHECK_THROWS_WITH(stagecut::loadTorchScriptChain(dir.file("junk.pt"), stagecut::parseInputSpec("1x8:float32"), 0),
                    StartsWith(dir.file("junk.pt") + ": not a TorchScript module (") &&
                        Contains("save one with torch.jit.save(torch.jit.script(model), path)"));
}

TEST_CASE("input specs parse shapes, dtypes and integer ranges", "[profiler][input]") {
  const auto image = stagecut::parseInputSpec("8x3x224x224:float32");
  CHECK(image.shape == std::vector<std::int64_t>{8, 3, 224, 224});
  CHECK(image.dtype == "float32");
  const auto tokens = stagecut::parseInputSpec("4x512:int64:0..50257");
  CHECK(tokens.shape == std::vector<std::int64_t>{4, 512});
  CHECK(tokens.low == 0);
  CHECK(tokens.high == 50257);
}

TEST_CASE("malformed input specs are rejected with the accepted form", "[profiler][input][errors]") {
  const std::string form = "; use DIMSxDIMS:DTYPE, e.g. 8x3x224x224:float32, or 4x512:int64:0..50257 for integers";
  CHECK_THROWS_WITH(stagecut::parseInputSpec("8x3x224"), "--input \"8x3x224\": expected a shape and a dtype" + form);
  CHECK_THROWS_WITH(stagecut::parseInputSpec("8xx3:float32"),
                    "--input \"8xx3:float32\": dimension \"\" is not a whole number >= 1" + form);
  CHECK_THROWS_WITH(stagecut::parseInputSpec("0x3:float32"),
                    "--input \"0x3:float32\": dimension \"0\" is not a whole number >= 1" + form);
  CHECK_THROWS_WITH(stagecut::parseInputSpec("4x512:int64"),
                    "--input \"4x512:int64\": an integer input needs its range LOW..HIGH" + form);
  CHECK_THROWS_WITH(stagecut::parseInputSpec("4x512:int64:9..3"),
                    "--input \"4x512:int64:9..3\": range \"9..3\" is not LOW..HIGH with LOW < HIGH" + form);
  CHECK_THROWS_WITH(stagecut::parseInputSpec("4x4:float"),
                    "--input \"4x4:float\": unknown dtype \"float\", did you mean 'float32'?");
}
