// Format 2: a profile measured at several microbatch sizes.
#include <catch2/catch.hpp>

#include "core/error.h"
#include "core/profile_json.h"
#include "tests/test_support.h"

using stagecut::Error;
using stagecut::MicrobatchSizeCosts;
using stagecut::Profile;
using stagecut::profileFromJson;
using stagecut::profileToJson;
using stagecut::testing::makeProfile;
using nlohmann::json;

using stagecut::testing::profileRejection;

namespace {

// A profile with sizes 1, 2 and 4; the layers (run size 2) are the middle entry. Costs grow
// with the size so that every entry differs.
Profile makeSizedProfile(int layers) {
  Profile profile = makeProfile(layers);
  profile.run.microbatch_size = 2;
  for (int size : {1, 2, 4}) {
    MicrobatchSizeCosts entry;
    entry.microbatch_size = size;
    entry.layers = profile.layers;
    for (auto& layer : entry.layers) {
      const double scale = 0.5 + 0.25 * size;
      layer.forward_ms.median *= scale;
      layer.forward_ms.min *= scale;
      layer.forward_ms.max *= scale;
      layer.backward_ms.median *= scale;
      layer.backward_ms.min *= scale;
      layer.backward_ms.max *= scale;
      layer.activation_bytes = layer.activation_bytes / 2 * static_cast<std::uint64_t>(size);
      layer.output_bytes = layer.output_bytes / 2 * static_cast<std::uint64_t>(size);
    }
    entry.whole_model = stagecut::WholeModelCost{10.0 * size, 20.0 * size, 0.01, {}, {}, {}};
    profile.microbatch_sizes.push_back(entry);
  }
  profile.layers = profile.microbatch_sizes[1].layers;
  profile.whole_model = profile.microbatch_sizes[1].whole_model;
  return profile;
}

}  // namespace

TEST_CASE("a profile with several sizes is written as format 2 and read back unchanged",
          "[core][profile][sizes]") {
  const Profile original = makeSizedProfile(4);
  const json document = profileToJson(original);
  CHECK(document["format"] == "stagecut.profile/2");
  // Only the size-dependent fields are repeated per size; names and parameters live in layers.
  CHECK_FALSE(document["microbatch_sizes"][0]["layers"][0].contains("name"));
  CHECK_FALSE(document["microbatch_sizes"][0]["layers"][0].contains("params"));
  const Profile back = profileFromJson(document, "p.json");
  REQUIRE(back.microbatch_sizes.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(back.microbatch_sizes[i].microbatch_size == original.microbatch_sizes[i].microbatch_size);
    CHECK(back.microbatch_sizes[i].layers == original.microbatch_sizes[i].layers);
  }
  CHECK(back.microbatch_sizes[2].layers[3].name == original.layers[3].name);
  CHECK(back.microbatch_sizes[2].layers[3].params == original.layers[3].params);
  CHECK(profileToJson(back) == document);
}

TEST_CASE("a single-size profile is still written as format 1", "[core][profile][sizes]") {
  CHECK(profileToJson(makeProfile(3))["format"] == "stagecut.profile/1");
}

TEST_CASE("profileAtMicrobatchSize picks one size's costs", "[core][profile][sizes]") {
  const Profile sized = makeSizedProfile(3);
  CHECK(stagecut::measuredMicrobatchSizes(sized) == std::vector<int>{1, 2, 4});
  const Profile at4 = stagecut::profileAtMicrobatchSize(sized, 4, "p.json");
  CHECK(at4.run.microbatch_size == 4);
  CHECK(at4.microbatch_sizes.empty());
  CHECK(at4.layers == sized.microbatch_sizes[2].layers);
  CHECK(at4.whole_model->forward_ms == 40.0);
  CHECK(profileToJson(at4)["format"] == "stagecut.profile/1");
  CHECK_THROWS_WITH(stagecut::profileAtMicrobatchSize(sized, 3, "p.json"),
                    "p.json: microbatch size 3 was not measured; the profile has sizes 1,2,4 (add it "
                    "with profile --microbatch)");

  const Profile single = makeProfile(2);  // measured at its run.microbatch_size only
  CHECK(stagecut::measuredMicrobatchSizes(single) == std::vector<int>{single.run.microbatch_size});
  CHECK(stagecut::profileAtMicrobatchSize(single, single.run.microbatch_size, "p.json").layers ==
        single.layers);
  CHECK_THROWS_WITH(stagecut::profileAtMicrobatchSize(single, 64, "p.json"),
                    Catch::Matchers::StartsWith("p.json: the profile was measured at microbatch size"));
}

TEST_CASE("the format 2 reader rejects a malformed size table", "[core][profile][sizes][errors]") {
  const json good = profileToJson(makeSizedProfile(3));
  CHECK(profileRejection(good).empty());

  json v1_with_table = good;
  v1_with_table["format"] = "stagecut.profile/1";
  CHECK(profileRejection(v1_with_table) ==
        "p.json: field \"microbatch_sizes\" needs format \"stagecut.profile/2\", not "
        "\"stagecut.profile/1\"; change the format field");

  json no_table = good;
  no_table.erase("microbatch_sizes");
  CHECK(profileRejection(no_table) == "p.json: field \"microbatch_sizes\" is missing; it is required");

  json empty_table = good;
  empty_table["microbatch_sizes"] = json::array();
  CHECK(profileRejection(empty_table) ==
        "p.json: field \"microbatch_sizes\" is empty; list at least one measured microbatch size");

  json duplicate = good;
  duplicate["microbatch_sizes"][2]["microbatch_size"] = 2;
  CHECK(profileRejection(duplicate) ==
        "p.json: microbatch_sizes[2] has microbatch_size 2 after 2; list each size once, ascending");

  json zero = good;
  zero["microbatch_sizes"][0]["microbatch_size"] = 0;
  CHECK_THAT(profileRejection(zero), Catch::Matchers::StartsWith(
                                    "p.json: microbatch_sizes[0]: field \"microbatch_size\""));

  json short_entry = good;
  short_entry["microbatch_sizes"][1]["layers"].erase(2);
  CHECK(profileRejection(short_entry) ==
        "p.json: microbatch_sizes[1]: field \"layers\" has 2 layers but the profile has 3; every "
        "size lists every layer");

  json negative = good;
  negative["microbatch_sizes"][0]["layers"][1]["forward_ms"]["median"] = -1.0;
  CHECK_THAT(profileRejection(negative),
             Catch::Matchers::StartsWith("p.json: microbatch_sizes[0] layer 1: field \"forward_ms"));

  json disagreeing = good;
  disagreeing["microbatch_sizes"][1]["layers"][0]["activation_bytes"] = 1;
  CHECK(profileRejection(disagreeing) ==
        "p.json: microbatch_sizes[1] (size 2) differs from \"layers\", which hold the same size; make "
        "them equal or set run.microbatch_size to the size of \"layers\"");

  json missing_run_size = good;
  missing_run_size["microbatch_sizes"].erase(1);
  CHECK(profileRejection(missing_run_size) ==
        "p.json: \"microbatch_sizes\" has no entry for run.microbatch_size 2; add it (it repeats "
        "\"layers\")");
}
