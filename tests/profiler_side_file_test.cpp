// The side file of an interrupted profile (profile --resume) read strictly: a digest of its
// contents, no unknown field, each microbatch size once, one layer count. Each forgery below is
// sealed with a correct digest, as a forger with stagecut's code could, so that the check named
// in it is what refuses it; the digest's own cases come last.
#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "profiler/measure_checkpoint.h"
#include "tests/test_support.h"

namespace {

using nlohmann::json;

const std::string kFix = "; delete it and run the profile again without --resume";

json unit(double forward_ms = 1.0) {
  return {{"forward", {forward_ms}}, {"backward", {2.0}}, {"backward_input", json::array()},
          {"backward_weight", json::array()}, {"spent_s", 0.5}};
}

json size(int microbatch_size, bool complete = true, json layers = json::array({unit(), unit()})) {
  return {{"microbatch_size", microbatch_size}, {"complete", complete}, {"whole_model", unit()}, {"layers", layers}};
}

json sealed(json sizes) {
  json document = {{"format", stagecut::kMeasureCheckpointFormat},
                   {"request", {{"model", "mlp"}, {"microbatch", {1, 2}}}},
                   {"sizes", std::move(sizes)}};
  document["digest"] = stagecut::measureCheckpointDigest(document);
  return document;
}

json resealed(json document) {
  document["digest"] = stagecut::measureCheckpointDigest(document);
  return document;
}

std::string refusal(const json& document) {
  return stagecut::testing::inputErrorOf([&] { stagecut::measureCheckpointFromJson(document, "s.json"); });
}

}  // namespace

TEST_CASE("a side file as stagecut writes it reads back", "[profiler][resume]") {
  const json document = sealed({size(1), size(2, false, json::array())});
  CHECK(refusal(document).empty());
  const stagecut::MeasureCheckpoint checkpoint = stagecut::measureCheckpointFromJson(document, "s.json");
  CHECK(stagecut::measureCheckpointToJson(checkpoint) == document);
}

TEST_CASE("a side file whose sizes contradict each other is refused", "[profiler][resume][errors]") {
  CHECK(refusal(sealed({size(2), size(2)})) == "s.json: sizes[1]: microbatch size 2 is listed twice" + kFix);
  CHECK(refusal(sealed({size(1, false), size(2, true), size(1, true)})) ==
        "s.json: sizes[2]: microbatch size 1 is listed twice" + kFix);
  CHECK(refusal(sealed({size(1), size(2, true, {unit(), unit(), unit()})})) ==
        "s.json: sizes[1]: lists 3 layers, but microbatch size 1 lists 2" + kFix);
  // A size not yet started lists no layers, which agrees with any count.
  CHECK(refusal(sealed({size(1), size(2, false, json::array()), size(3, false, {unit(), unit()})})).empty());
}

TEST_CASE("a side file with a field stagecut does not write, or one of the wrong type, is refused",
          "[profiler][resume][errors]") {
  json extra = sealed({size(1)});
  extra["note"] = "hand-made";
  CHECK(refusal(resealed(extra)) == "s.json: field \"note\" is not a field of this format" + kFix);
  json misspelt = size(1);
  misspelt["layers"][1]["forwrd"] = {0.001};
  CHECK(refusal(sealed({misspelt})) ==
        "s.json: sizes[0]: field \"layers[1].forwrd\" is not a field of this format" + kFix);
  json yes = size(1);
  yes["complete"] = "yes";
  CHECK(refusal(sealed({yes})) == "s.json: sizes[0]: field \"complete\" must be true or false, got \"yes\"" + kFix);
  json unsaid = size(1);
  unsaid.erase("complete");
  CHECK(refusal(sealed({unsaid})) == "s.json: sizes[0]: field \"complete\" is missing; it is required" + kFix);
  json spent = size(1);
  spent["whole_model"]["spent_s"] = -3600;
  CHECK(refusal(sealed({spent})) ==
        "s.json: sizes[0]: field \"whole_model.spent_s\" must be >= 0, got -3600" + kFix);
  json fast = size(1);
  fast["layers"][0]["forward"] = {-1.0};
  CHECK(refusal(sealed({fast})) == "s.json: sizes[0]: field \"layers[0].forward[0]\" must be >= 0, got -1.0" + kFix);
  CHECK(refusal(sealed({size(0)})) ==
        "s.json: sizes[0]: field \"microbatch_size\" must be between 1 and 999999999, got 0" + kFix);
  json no_request = sealed({size(1)});
  no_request.erase("request");
  CHECK(refusal(resealed(no_request)) == "s.json: field \"request\" is missing; it is required" + kFix);
}

TEST_CASE("a side file that marks a size complete without its samples is refused", "[profiler][resume][errors]") {
  const json empty = {{"forward", json::array()}, {"backward", json::array()}, {"backward_input", json::array()},
                      {"backward_weight", json::array()}, {"spent_s", 0}};
  CHECK(refusal(sealed({size(2, true, {unit(), empty})})) ==
        "s.json: sizes[0]: a size marked complete has no samples for layer 1" + kFix);
  json no_whole = size(2);
  no_whole["whole_model"] = empty;
  CHECK(refusal(sealed({no_whole})) == "s.json: sizes[0]: a size marked complete has no whole-model samples" + kFix);
  CHECK(refusal(sealed({size(2, true, json::array())})) ==
        "s.json: sizes[0]: a size marked complete has no layers" + kFix);
  CHECK(refusal(sealed({size(2, false, {unit(), empty})})).empty());
}

TEST_CASE("a side file changed after stagecut wrote it is refused by its digest", "[profiler][resume][errors]") {
  const std::string edited = "s.json: its digest does not match its contents, so it was changed after stagecut wrote it";
  json faster = sealed({size(1), size(2)});
  faster["sizes"][0]["layers"][0]["forward"][0] = 0.001;
  CHECK(refusal(faster) == edited + kFix);
  json twice = sealed({size(2)});
  twice["sizes"].push_back(twice["sizes"][0]);
  CHECK(refusal(twice) == edited + kFix);
  json other_request = sealed({size(1)});
  other_request["request"]["threads"] = 2;
  CHECK(refusal(other_request) == edited + kFix);
  json unsigned_file = sealed({size(1)});
  unsigned_file.erase("digest");
  CHECK(refusal(unsigned_file) == edited + kFix);
  json number = sealed({size(1)});
  number["digest"] = 7;
  CHECK(refusal(number) == edited + kFix);
  json older = sealed({size(1)});
  older["format"] = stagecut::kMeasureCheckpointFormatV1;
  older.erase("digest");
  CHECK(refusal(older) ==
        "s.json: written by an older stagecut (stagecut.profile-progress/1, without a digest)" + kFix);
  CHECK(refusal(json::array()) ==
        "s.json: not a stagecut profile progress file (no \"format\": \"stagecut.profile-progress/2\")" + kFix);
}
