#include <catch2/catch.hpp>

#include <memory>
#include <set>
#include <vector>

#include "core/error.h"
#include "profiler/profile_request.h"
#include "profiler/round_pace.h"

namespace {

// Probes that return `values` in turn, then the last one for ever; counts its calls.
struct ScriptedProbe {
  std::vector<double> values;
  int calls = 0;
  double operator()() {
    const double ms = values[static_cast<std::size_t>(std::min<int>(calls, static_cast<int>(values.size()) - 1))];
    ++calls;
    return ms;
  }
};

stagecut::PaceOptions everyRound(const std::shared_ptr<ScriptedProbe>& probe) {
  stagecut::PaceOptions options;
  options.probe_ms = [probe] { return (*probe)(); };
  options.probe_every_s = 0.0;
  return options;
}

stagecut::ProfileRequest tinyGptRequest() {
  stagecut::ProfileRequest request;
  request.zoo.family = "gpt";
  request.zoo.preset = "gpt-tiny";
  request.zoo.layers = 2;
  request.zoo.seq = 16;
  request.zoo.hidden = 32;
  request.zoo.heads = 2;
  request.zoo.vocab = 128;
  request.measure.microbatch_size = 2;
  request.measure.warmup_rounds = 0;
  request.measure.min_repeats = 3;
  request.measure.max_repeats = 3;
  return request;
}

}  // namespace

TEST_CASE("a probe off the median marks the rounds on either side of it", "[profiler][pace]") {
  auto probe = std::make_shared<ScriptedProbe>(ScriptedProbe{{10, 10, 14, 10, 10}});
  stagecut::RoundPace pace(everyRound(probe));
  for (int round = 0; round < 4; ++round) pace.beforeRound(round);
  pace.afterRounds(4);
  REQUIRE(probe->calls == 5);
  // The probe before round 2 took 14 ms against a median of 10: rounds 1 (before it) and 2 (after).
  CHECK(pace.oddRounds() == std::set<int>{1, 2});
  pace.noteDropped({1, 2});
  CHECK(pace.oddRounds().empty());
  const auto json = pace.json();
  CHECK(json["median_ms"].get<double>() == Approx(10.0));
  CHECK(json["probes"].size() == 5u);
  CHECK(json["retimed_rounds"] == nlohmann::json::array({1, 2}));
}

TEST_CASE("two probes cannot say which of them is odd", "[profiler][pace]") {
  auto probe = std::make_shared<ScriptedProbe>(ScriptedProbe{{10, 30}});
  stagecut::RoundPace pace(everyRound(probe));
  pace.beforeRound(0);
  pace.afterRounds(1);
  CHECK(probe->calls == 2);
  CHECK(pace.oddRounds().empty());
}

TEST_CASE("a pace within the tolerance marks nothing, and a disabled one never probes", "[profiler][pace]") {
  auto probe = std::make_shared<ScriptedProbe>(ScriptedProbe{{10, 11.4, 8.6, 10, 11}});
  stagecut::RoundPace pace(everyRound(probe));
  for (int round = 0; round < 4; ++round) pace.beforeRound(round);
  pace.afterRounds(4);
  CHECK(pace.oddRounds().empty());
  stagecut::RoundPace off{stagecut::PaceOptions{}};
  off.beforeRound(0);
  off.afterRounds(1);
  CHECK(off.json().is_null());
}

TEST_CASE("dropping a round removes its samples from every list and its share of the time", "[profiler][pace]") {
  stagecut::UnitSampleLog log;
  log.forward = {1, 2};
  log.backward = {10, 20};
  log.spent_s = 4.0;
  std::vector<int> tags;
  stagecut::tagNewSamples(log, tags, -1);  // resumed
  log.forward.insert(log.forward.end(), {3, 4});
  log.backward.insert(log.backward.end(), {30, 40});
  stagecut::tagNewSamples(log, tags, 5);
  CHECK(tags == std::vector<int>{-1, -1, 5, 5});
  log.forward.push_back(5);
  log.backward.push_back(50);
  stagecut::tagNewSamples(log, tags, 6);
  stagecut::dropRoundSamples(log, tags, {5, -7});
  CHECK(log.forward == std::vector<double>{1, 2, 5});
  CHECK(log.backward == std::vector<double>{10, 20, 50});
  CHECK(tags == std::vector<int>{-1, -1, 6});
  CHECK(log.spent_s == Approx(4.0 * 3 / 5));
}

TEST_CASE("a profile times again the rounds of an odd phase, or refuses them under --strict", "[profiler][pace]") {
  // Probes before rounds 0, 1, 2 and after: the one before round 1 is slow, so rounds 0 and 1 go.
  auto probe = std::make_shared<ScriptedProbe>(ScriptedProbe{{10, 20, 10}});
  stagecut::ProfileRequest request = tinyGptRequest();
  request.measure.pace = everyRound(probe);
  const stagecut::Profile profile = stagecut::runProfile(request);
  const auto& pace = profile.run.extra.at("pace");
  CHECK(pace["retimed_rounds"] == nlohmann::json::array({0, 1}));
  CHECK(pace["odd_rounds_kept"].empty());
  CHECK(pace["probes"].size() >= 5u);
  for (const auto& layer : profile.layers) {
    INFO(layer.name);
    CHECK(layer.forward_ms.repeats == 3);
  }
  CHECK(profile.run.extra.at("whole_model_repeats").get<int>() == 3);

  SECTION("with no passes left the odd rounds stay, and the file says which") {
    probe->calls = 0;
    request.measure.pace.retime_passes = 0;
    const stagecut::Profile kept = stagecut::runProfile(request);
    CHECK(kept.run.extra.at("pace")["odd_rounds_kept"] == nlohmann::json::array({0, 1}));
    CHECK(kept.run.extra.at("pace")["retimed_rounds"].empty());
  }
  SECTION("--strict") {
    probe->calls = 0;
    request.measure.pace.strict = true;
    try {
      stagecut::runProfile(request);
      FAIL("expected a refusal");
    } catch (const stagecut::Error& error) {
      CHECK(error.kind() == stagecut::ErrorKind::kRuntime);
      CHECK_THAT(error.what(), Catch::Matchers::Contains("--strict: the machine's pace moved") &&
                                   Catch::Matchers::Contains("+100.0%"));
    }
  }
}
