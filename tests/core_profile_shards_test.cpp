#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "core/parallel_degrees.h"
#include "core/profile_json.h"
#include "core/profile_shards.h"
#include "tests/test_support.h"

using Catch::Matchers::Contains;
using nlohmann::json;
using stagecut::ParallelDegrees;
using stagecut::Profile;
using stagecut::ShardCosts;
using stagecut::testing::profileRejection;

namespace {

// A profile of `layers` at TP 1 (model.config's degree), with TP `others` beside it: each
// shard's layers at 1/t of the compute and parameters, measured at microbatch sizes 1 and 2.
Profile shardedProfile(const std::vector<int>& others) {
  const auto costs = [](int t) {
    return [t](stagecut::LayerCost& layer, int size) {
      layer.forward_ms = stagecut::TimeStatsMs::exactly(4.0 * size / t);
      layer.backward_ms = stagecut::TimeStatsMs::exactly(8.0 * size / t);
      layer.params = 1000 / static_cast<std::uint64_t>(t);
      layer.activation_bytes = static_cast<std::uint64_t>(64 * size / t);
    };
  };
  Profile profile = stagecut::testing::makeSizedProfile(3, {1, 2}, costs(1));
  stagecut::writeParallelDegrees(ParallelDegrees{}, profile.model.config);
  profile.shards.push_back({ParallelDegrees{}, profile.layers, profile.whole_model, profile.microbatch_sizes});
  for (int t : others) {
    const Profile at = stagecut::testing::makeSizedProfile(3, {1, 2}, costs(t));
    ParallelDegrees degrees;
    degrees.tensor_parallel = t;
    profile.shards.push_back({degrees, at.layers, at.whole_model, at.microbatch_sizes});
  }
  return profile;
}

}  // namespace

TEST_CASE("a profile at several parallel degrees is format 3 and survives write then read",
          "[core][profile][shards]") {
  const Profile original = shardedProfile({2, 4});
  const json document = stagecut::profileToJson(original);
  CHECK(document["format"] == "stagecut.profile/3");
  // model.config's degree is the profile's own layers, written once.
  REQUIRE(document["shards"].size() == 2);
  CHECK(document["shards"][0]["degrees"]["tensor_parallel"] == 2);
  const Profile back = stagecut::profileFromJson(document, "p.json");
  REQUIRE(back.shards.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(back.shards[i].degrees == original.shards[i].degrees);
    CHECK(back.shards[i].layers == original.shards[i].layers);
    REQUIRE(back.shards[i].microbatch_sizes.size() == 2);
    CHECK(back.shards[i].microbatch_sizes[0].layers == original.shards[i].microbatch_sizes[0].layers);
  }
  CHECK(stagecut::profileToJson(back) == document);
  // One degree seen as a profile, and one size of it.
  ParallelDegrees four;
  four.tensor_parallel = 4;
  const Profile at_four = stagecut::shardProfile(back, four, "p.json");
  CHECK(at_four.layers[0].forward_ms.median == Approx(2.0));
  CHECK(stagecut::readParallelDegrees(at_four.model.config, "view").tensor_parallel == 4);
  const Profile small = stagecut::profileAtMicrobatchSize(back, 1, "p.json");
  CHECK(small.shards[2].layers[0].forward_ms.median == Approx(1.0));
  CHECK(small.shards[2].microbatch_sizes.empty());
  // A profile at one degree keeps the format it had.
  Profile single = original;
  single.shards.clear();
  CHECK(stagecut::profileToJson(single)["format"] == "stagecut.profile/2");
}

TEST_CASE("the profile reader refuses shards that are not the profile's chain at another degree",
          "[core][profile][shards][errors]") {
  const json good = stagecut::profileToJson(shardedProfile({2}));
  json doc = good;
  doc["format"] = "stagecut.profile/2";
  CHECK_THAT(profileRejection(doc), Contains("field \"shards\" needs format \"stagecut.profile/3\""));
  doc = good;
  doc["shards"] = json::array();
  CHECK_THAT(profileRejection(doc), Contains("\"shards\" is empty"));
  doc = good;
  doc["shards"][0]["degrees"]["tensor_parallel"] = 1;
  CHECK_THAT(profileRejection(doc), Contains("shards[0] repeats TP 1, CP 1, the degree of model.config"));
  doc = good;
  doc["shards"].push_back(doc["shards"][0]);
  CHECK_THAT(profileRejection(doc), Contains("shards[1] repeats TP 2, CP 1, listed before"));
  doc = good;
  doc["shards"][0]["layers"].erase(2);
  CHECK_THAT(profileRejection(doc), Contains("has 2 layers but the profile has 3"));
  doc = good;
  doc["shards"][0]["layers"][1]["name"] = "other";
  CHECK_THAT(profileRejection(doc), Contains("shards[0]: layer 1 is other but the profile's is"));
  doc = good;
  doc["shards"][0].erase("microbatch_sizes");
  CHECK_THAT(profileRejection(doc), Contains("has no \"microbatch_sizes\" table and the profile has one"));
  doc = good;
  doc["shards"][0]["microbatch_sizes"].erase(0);
  CHECK_THAT(profileRejection(doc), Contains("lists other sizes than the profile's"));
  doc = good;
  doc["shards"][0]["degrees"]["tensor_parallel"] = 0;
  CHECK_THAT(profileRejection(doc), Contains("shards[0]: degrees"));
  doc = good;
  doc["shards"][0]["layers"][0]["forward_ms"]["median"] = 1e308;
  CHECK_THAT(profileRejection(doc), Contains("shards[0]: layer 0"));
}

TEST_CASE("profiles measured one degree at a time become one profile with a shard per degree",
          "[core][profile][shards]") {
  const Profile sharded = shardedProfile({2, 4});
  std::vector<Profile> points;
  for (const ShardCosts& shard : sharded.shards) {
    Profile point = stagecut::shardProfile(sharded, shard.degrees, "p.json");
    points.push_back(point);
  }
  const Profile merged = stagecut::profileOfDegrees(points, "p.json");
  REQUIRE(merged.shards.size() == 3);
  CHECK(merged.layers == sharded.layers);
  CHECK(stagecut::readParallelDegrees(merged.model.config, "p").tensor_parallel == 1);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(merged.shards[i].degrees == sharded.shards[i].degrees);
    CHECK(merged.shards[i].layers == sharded.shards[i].layers);
  }
  // One point is a profile at one degree; a repeated degree or another chain is refused.
  CHECK(stagecut::profileOfDegrees({points[1]}, "p.json").shards.empty());
  CHECK_THROWS_WITH(stagecut::profileOfDegrees({points[0], points[0]}, "p.json"),
                    "p.json: TP 1, CP 1 was measured twice");
  points[2].layers.pop_back();
  CHECK_THROWS_WITH(stagecut::profileOfDegrees(points, "p.json"),
                    Contains("the layers measured at TP 4, CP 1 are not those at TP 1, CP 1"));
}
