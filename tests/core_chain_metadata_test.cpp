#include <catch2/catch.hpp>

#include "core/chain_metadata.h"
#include "core/error.h"

using stagecut::parseChainMetadata;

TEST_CASE("the exporter's chain metadata reads back its names, kinds and module paths", "[core][chain]") {
  const auto metadata = parseChainMetadata(
      R"({"format": "stagecut-chain", "version": 1, "source": "torchvision:vgg16", "input": "8x3x224x224:float32",
          "exporter": {"torch": "1.13.1"},
          "layers": [{"child": "features_0", "name": "features.0", "kind": "Conv2d", "module": "features.0"},
                     {"child": "flatten", "name": "flatten", "kind": "Flatten", "inserted": true}]})",
      "v.pt");
  CHECK(metadata.source == "torchvision:vgg16");
  CHECK(metadata.input == "8x3x224x224:float32");
  REQUIRE(metadata.layers.size() == 2u);
  CHECK(metadata.layers[0].child == "features_0");
  CHECK(metadata.layers[0].name == "features.0");
  CHECK(metadata.layers[0].kind == "Conv2d");
  CHECK(metadata.layers[1].module.empty());
}

TEST_CASE("chain metadata that is broken is refused in one line naming the file", "[core][chain][errors]") {
  const auto refusal = [](const std::string& text) {
    try {
      parseChainMetadata(text, "m.pt");
    } catch (const stagecut::Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK(refusal("{").rfind("m.pt: its stagecut.json is not JSON (", 0) == 0);
  CHECK(refusal("[]") == "m.pt: its stagecut.json is not a JSON object; export the model again with "
                         "tools/stagecut_export.py");
  CHECK(refusal(R"({"format": "other", "version": 1, "layers": []})") ==
        "m.pt: its stagecut.json: field \"format\" must be \"stagecut-chain\"; export the model again with "
        "tools/stagecut_export.py");
  CHECK(refusal(R"({"format": "stagecut-chain", "version": 3, "layers": []})") ==
        "m.pt: its stagecut.json has version 3; this stagecut reads version 1: update stagecut, or export with "
        "its own exporter");
  CHECK(refusal(R"({"format": "stagecut-chain", "version": 1, "layers": [{"child": "a"}]})") ==
        "m.pt: its stagecut.json: field \"layers[0].name\" is missing; it is required");
  CHECK(refusal(R"({"format": "stagecut-chain", "version": 1,
                    "layers": [{"child": "a", "name": "x"}, {"child": "b", "name": "x"}]})") ==
        "m.pt: its stagecut.json: field \"layers[1].name\" repeats \"x\"; export the model again with "
        "tools/stagecut_export.py");
}
