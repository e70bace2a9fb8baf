#include <catch2/catch.hpp>

#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/json_document.h"
#include "core/profile_json.h"
#include "tests/test_support.h"

using stagecut::Error;
using stagecut::Profile;
using stagecut::profileFromJson;
using stagecut::profileToJson;
using stagecut::testing::makeProfile;
using stagecut::testing::TempDir;
using Catch::Matchers::Contains;
using nlohmann::json;

using stagecut::testing::profileRejection;

namespace {

// Runs the reader on a document and returns its error message ("" when it accepted it).
}  // namespace

TEST_CASE("a profile survives write then read unchanged", "[core][profile]") {
  const TempDir dir;
  Profile original = makeProfile(5);
  original.layers[2].recompute_ms = stagecut::TimeStatsMs{1.5, 1.25, 2.0, 0.1, 7};
  stagecut::writeProfileFile(dir.file("p.json"), original);
  const Profile back = stagecut::readProfileFile(dir.file("p.json"));
  CHECK(back.layers == original.layers);
  CHECK(back.model.name == original.model.name);
  CHECK(back.model.config == original.model.config);
  CHECK(back.device.threads == original.device.threads);
  CHECK(back.device.torch == original.device.torch);
  CHECK(back.run.microbatch_size == original.run.microbatch_size);
  CHECK(back.run.repeats == original.run.repeats);
  REQUIRE(back.whole_model.has_value());
  CHECK(back.whole_model->sum_of_layers_vs_whole == original.whole_model->sum_of_layers_vs_whole);
  CHECK(profileToJson(back) == profileToJson(original));
  CHECK(back.layers[2].recomputeMedianMs() == 1.5);
  CHECK(back.layers[1].recomputeMedianMs() == back.layers[1].forward_ms.median);
}

TEST_CASE("each layer's in-chain times survive a round trip and must list every layer", "[core][profile]") {
  Profile original = makeProfile(3);
  original.whole_model->in_chain_forward_ms = {0.25, 1.5, 2.75};
  original.whole_model->in_chain_backward_ms = {1.0, 3.5, 0.0};
  const Profile back = profileFromJson(profileToJson(original), "p.json");
  REQUIRE(back.whole_model.has_value());
  CHECK(back.whole_model->in_chain_forward_ms == original.whole_model->in_chain_forward_ms);
  CHECK(back.whole_model->in_chain_backward_ms == original.whole_model->in_chain_backward_ms);
  // Absent in older profiles: read as not measured, and not written back.
  const json without = profileToJson(makeProfile(3));
  CHECK_FALSE(without["whole_model"].contains("in_chain_forward_ms"));
  CHECK(profileFromJson(without, "p.json").whole_model->in_chain_forward_ms.empty());

  json short_list = profileToJson(original);
  short_list["whole_model"]["in_chain_backward_ms"] = json::array({1.0, 3.5});
  CHECK_THAT(profileRejection(short_list), Contains("in_chain_backward_ms") && Contains("expected 3"));
  json one_only = profileToJson(original);
  one_only["whole_model"].erase("in_chain_forward_ms");
  CHECK_THAT(profileRejection(one_only), Contains("in_chain_forward_ms"));
  json negative = profileToJson(original);
  negative["whole_model"]["in_chain_forward_ms"][1] = -1.0;
  CHECK_THAT(profileRejection(negative), Contains("in_chain_forward_ms"));
}

TEST_CASE("metadata fields another tool wrote are kept through a round trip", "[core][profile]") {
  json document = profileToJson(makeProfile(2));
  document["device"]["cuda_driver"] = "550.54";
  document["run"]["command"] = "stagecut profile --model gpt";
  const json back = profileToJson(profileFromJson(document, "p.json"));
  CHECK(back["device"]["cuda_driver"] == "550.54");
  CHECK(back["run"]["command"] == "stagecut profile --model gpt");
}

TEST_CASE("an imported profile may give a time as one number and omit optional fields",
          "[core][profile]") {
  const json document = {
      {"format", "stagecut.profile/1"}, {"model", json::object()}, {"device", json::object()},
      {"run", json::object()},
      {"layers", {{{"index", 0}, {"name", "conv1"}, {"forward_ms", 2.5}, {"backward_ms", 5},
                   {"params", 1728}, {"param_bytes", 6912}, {"activation_bytes", 1.6e7},
                   {"output_bytes", 1.6e7}}}}};
  const Profile profile = profileFromJson(document, "p.json");
  REQUIRE(profile.layers.size() == 1);
  CHECK(profile.layers[0].forward_ms.median == 2.5);
  CHECK(profile.layers[0].forward_ms.max == 2.5);
  CHECK(profile.layers[0].activation_bytes == 16000000u);
  CHECK_FALSE(profile.layers[0].backward_input_ms.has_value());
  CHECK_FALSE(profile.whole_model.has_value());
}

TEST_CASE("the profile reader rejects an unknown format version", "[core][profile][errors]") {
  json document = profileToJson(makeProfile(2));
  document["format"] = "stagecut.profile/4";
  CHECK(profileRejection(document) ==
        "p.json: format \"stagecut.profile/4\" is not a profile this stagecut reads; expected "
        "\"stagecut.profile/1\", \"stagecut.profile/2\" or \"stagecut.profile/3\"");
}

TEST_CASE("the profile reader names each missing required layer field", "[core][profile][errors]") {
  for (const char* field : {"index", "name", "forward_ms", "backward_ms", "params", "param_bytes",
                            "activation_bytes", "output_bytes"}) {
    json document = profileToJson(makeProfile(3));
    document["layers"][2].erase(field);
    CHECK(profileRejection(document) ==
          std::string("p.json: layer 2: field \"") + field + "\" is missing; it is required");
  }
}

TEST_CASE("the profile reader names each missing metadata block", "[core][profile][errors]") {
  for (const char* block : {"model", "device", "run", "layers"}) {
    json document = profileToJson(makeProfile(1));
    document.erase(block);
    CHECK(profileRejection(document) ==
          std::string("p.json: field \"") + block + "\" is missing; it is required");
  }
}

TEST_CASE("the profile reader rejects negative times and sizes naming layer and field",
          "[core][profile][errors]") {
  json document = profileToJson(makeProfile(4));
  document["layers"][3]["forward_ms"]["median"] = -1.5;
  CHECK(profileRejection(document) == "p.json: layer 3: field \"forward_ms.median\" must be >= 0, got -1.5");

  document = profileToJson(makeProfile(4));
  document["layers"][1]["backward_ms"] = -2;
  CHECK(profileRejection(document) == "p.json: layer 1: field \"backward_ms\" must be >= 0, got -2");

  document = profileToJson(makeProfile(4));
  document["layers"][0]["activation_bytes"] = -4096;
  CHECK(profileRejection(document) ==
        "p.json: layer 0: field \"activation_bytes\" must be >= 0, got -4096");

  document = profileToJson(makeProfile(4));
  document["layers"][2]["params"] = 12.5;
  CHECK(profileRejection(document) == "p.json: layer 2: field \"params\" must be a whole number, got 12.5");
}

TEST_CASE("the profile reader rejects non-finite and wrongly typed times", "[core][profile][errors]") {
  json document = profileToJson(makeProfile(2));
  document["layers"][1]["forward_ms"]["median"] = std::numeric_limits<double>::infinity();
  CHECK(profileRejection(document) ==
        "p.json: layer 1: field \"forward_ms.median\" must be finite, got null");

  document = profileToJson(makeProfile(2));
  document["layers"][0]["backward_ms"]["median"] = "fast";
  CHECK(profileRejection(document) ==
        "p.json: layer 0: field \"backward_ms.median\" must be a number, got \"fast\"");

  document = profileToJson(makeProfile(2));
  document["layers"][0]["forward_ms"] = {{"median", 2.0}, {"min", 3.0}, {"max", 4.0}};
  CHECK_THAT(profileRejection(document),
             Contains("layer 0: field \"forward_ms\" must have min <= median <= max"));
}

TEST_CASE("profile times are times a run can have: at most a day per op, named by layer and field",
          "[core][profile][errors]") {
  // A day is validate's longest --timeout: no step it runs, so no layer's op in it, is longer.
  // 1e308 ms is finite, so the finite check let it through and a step summed to "inf ms".
  const double day_ms = 24 * 3600 * 1000.0;
  json document = profileToJson(makeProfile(4));
  document["layers"][1]["forward_ms"] = 1e308;
  CHECK(profileRejection(document) ==
        "p.json: layer 1: field \"forward_ms\" is 1e+308 ms, longer than a day, which no run takes (validate "
        "stops a step at its longest --timeout, a day); measure the model again or correct the field");
  document = profileToJson(makeProfile(4));
  document["layers"][2]["backward_ms"]["max"] = day_ms + 1;
  CHECK_THAT(profileRejection(document),
             Catch::StartsWith("p.json: layer 2: field \"backward_ms.max\" is 86400001 ms, longer than a day"));
  // Every time field: the optional ones, a calibrated profile's raw times, the whole model's.
  const std::vector<std::pair<std::function<void(json&)>, std::string>> fields = {
      {[&](json& d) { d["layers"][0]["backward_input_ms"] = 2 * day_ms; }, "layer 0: field \"backward_input_ms\""},
      {[&](json& d) { d["layers"][0]["backward_weight_ms"] = 2 * day_ms; }, "layer 0: field \"backward_weight_ms\""},
      {[&](json& d) { d["layers"][3]["recompute_ms"] = {{"median", 2 * day_ms}}; }, "layer 3: field \"recompute_ms.median\""},
      {[&](json& d) { d["layers"][3]["uncalibrated"] = {{"forward_ms", 1.0}, {"backward_ms", 2 * day_ms}}; },
       "layer 3: field \"uncalibrated.backward_ms\""},
      {[&](json& d) { d["whole_model"]["forward_ms"] = 2 * day_ms; }, "field \"whole_model.forward_ms\""},
      {[&](json& d) {
         d["whole_model"]["in_chain_forward_ms"] = {1.0, 2 * day_ms, 1.0, 1.0};
         d["whole_model"]["in_chain_backward_ms"] = {1.0, 1.0, 1.0, 1.0};
       },
       "field \"whole_model.in_chain_forward_ms[1]\""},
  };
  for (const auto& [breakIt, named] : fields) {
    document = profileToJson(makeProfile(4));
    breakIt(document);
    INFO(document.dump());
    CHECK_THAT(profileRejection(document), Contains(named + " is 172800000 ms, longer than a day"));
  }
  // A day itself is a time a run can have.
  document = profileToJson(makeProfile(4));
  document["layers"][0]["forward_ms"] = day_ms;
  document["whole_model"]["backward_ms"] = day_ms;
  CHECK(profileFromJson(document, "p.json").layers[0].forward_ms.median == day_ms);
}

TEST_CASE("the profile reader rejects layer indices out of order, gaps and duplicates",
          "[core][profile][errors]") {
  json document = profileToJson(makeProfile(4));
  document["layers"][2]["index"] = 3;
  CHECK(profileRejection(document) ==
        "p.json: layer at position 2 has field \"index\" 3; layers must be listed in order 0, 1, "
        "2, ... with no gap or duplicate");
  document["layers"][2]["index"] = 1;
  CHECK_THAT(profileRejection(document), Contains("position 2 has field \"index\" 1"));
}

TEST_CASE("the profile reader rejects a profile without layers", "[core][profile][errors]") {
  json document = profileToJson(makeProfile(1));
  document["layers"] = json::array();
  CHECK(profileRejection(document) ==
        "p.json: field \"layers\" is empty; a profile needs at least one layer");
}

TEST_CASE("reading a file that is not JSON names the file and the position",
          "[core][profile][errors]") {
  const TempDir dir;
  dir.write("bad.json", "{\"format\": \"stagecut.profile/1\", \"layers\": [");
  try {
    stagecut::readProfileFile(dir.file("bad.json"));
    FAIL("a truncated file was accepted");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Contains(dir.file("bad.json") + ": not valid JSON: parse error at line 1"));
  }
  dir.write("empty.json", " \n");
  CHECK_THROWS_WITH(stagecut::readProfileFile(dir.file("empty.json")),
                    dir.file("empty.json") + ": file is empty; expected a stagecut JSON document");
  CHECK_THROWS_WITH(stagecut::readProfileFile(dir.file("missing.json")),
                    dir.file("missing.json") + ": cannot open (No such file or directory); check the path");
}

TEST_CASE("a number too large for a double is rejected as invalid JSON", "[core][profile][errors]") {
  CHECK_THROWS_WITH(stagecut::parseJsonDocument("{\"x\": 1e999}", "big.json"),
                    Contains("big.json: not valid JSON"));
}

TEST_CASE("a layer's times_from survives a round trip and must name timed layers of the profile",
          "[core][profile]") {
  Profile original = makeProfile(6);
  original.layers[2].times_from = std::vector<int>{1, 3, 5};
  original.layers[4].times_from = std::vector<int>{1, 3, 5};
  const Profile back = profileFromJson(profileToJson(original), "p.json");
  CHECK(back.layers == original.layers);
  CHECK_FALSE(back.layers[1].times_from.has_value());
  CHECK_FALSE(profileToJson(makeProfile(2))["layers"][0].contains("times_from"));

  const auto rejection = [&](int layer, const json& value) {
    json document = profileToJson(original);
    document["layers"][static_cast<std::size_t>(layer)]["times_from"] = value;
    return profileRejection(document);
  };
  CHECK(rejection(2, json::array({1, 3, 5})).empty());
  CHECK_THAT(rejection(2, json::array({2})), Contains("layer 2") && Contains("the layer itself"));
  CHECK_THAT(rejection(2, json::array({9})), Contains("names layer 9, which is not in the profile"));
  CHECK_THAT(rejection(2, json::array({4})), Contains("whose own times are copied"));
  CHECK_THAT(rejection(2, json::array()), Contains("times_from") && Contains("is empty"));
  CHECK_THAT(rejection(2, json::array({-1})), Contains("must list layer indices"));
  CHECK_THAT(rejection(2, json::array({"1"})), Contains("must list layer indices"));
}
