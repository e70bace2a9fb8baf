// When a validate run stops measuring the split: the environment's assessment against hand-made
// ranks, each threshold crossed alone, and its JSON block.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/error.h"
#include "validation/run_environment.h"

namespace {

using stagecut::RankEnvironment;
using Catch::Matchers::Contains;

// A rank on `host` with `cores` usable, whose steps took 10 s of wall and 9.5 s of its CPU.
RankEnvironment quietRank(int rank, const std::string& host = "host1", int cores = 2) {
  RankEnvironment environment;
  environment.rank = rank;
  environment.host = host;
  environment.usable_cores = cores;
  environment.threads = 1;
  environment.reference_before_ms = 10.0;
  environment.reference_after_ms = 10.2;
  environment.window_s = 10.0;
  environment.own_cpu_s = 9.5;
  return environment;
}

// The host's busy CPU: its ranks' own plus `other` cores over the 10 s.
std::vector<RankEnvironment> onHost(std::vector<RankEnvironment> ranks, double other) {
  double own = 0.0;
  for (const RankEnvironment& rank : ranks) own += rank.own_cpu_s;
  for (RankEnvironment& rank : ranks) rank.host_busy_cpu_s = own + other * 10.0;
  return ranks;
}

}  // namespace

TEST_CASE("a quiet machine: trusted, with the load and drift it measured", "[validation][environment]") {
  const auto environment = stagecut::assessEnvironment(10.0, 1, onHost({quietRank(0), quietRank(1)}, 0.05));
  CHECK(environment.trusted());
  CHECK(environment.warnings.empty());
  CHECK(environment.usable_cores == 2);
  CHECK(environment.ranks_on_host == 2);
  CHECK(environment.other_load_known);
  CHECK(environment.other_load_cores == Approx(0.05));
  CHECK(environment.reference_drift == Approx(0.02));
  CHECK(environment.reference_change == Approx(0.02));
}

TEST_CASE("each reason to distrust a run is one warning naming the fix", "[validation][environment]") {
  SECTION("more ranks x threads than usable cores") {
    std::vector<RankEnvironment> ranks = onHost({quietRank(0), quietRank(1)}, 0.0);
    for (RankEnvironment& rank : ranks) rank.threads = 2;
    const auto environment = stagecut::assessEnvironment(10.0, 2, ranks);
    REQUIRE(environment.warnings.size() == 1);
    CHECK_THAT(environment.warnings[0], Contains("oversubscribed: 2 rank(s) x 2 thread(s) on 2 usable core(s) of host1"));
  }
  SECTION("another process busy beside the ranks") {
    const auto environment = stagecut::assessEnvironment(10.0, 1, onHost({quietRank(0), quietRank(1)}, 0.95));
    REQUIRE(environment.warnings.size() == 1);
    CHECK_THAT(environment.warnings[0], Contains("other processes kept 0.95 core(s) of host1 busy"));
    CHECK_THAT(environment.warnings[0], Contains("rerun on a quiet machine"));
  }
  SECTION("the machine slower than at profile time") {
    std::vector<RankEnvironment> ranks = onHost({quietRank(0), quietRank(1)}, 0.0);
    ranks[1].reference_before_ms = 12.9;
    ranks[1].reference_after_ms = 13.0;
    const auto environment = stagecut::assessEnvironment(10.0, 1, ranks);
    REQUIRE(environment.warnings.size() == 1);
    CHECK_THAT(environment.warnings[0], Contains("the reference kernel ran 30% slower on rank 1"));
  }
  SECTION("the machine faster than at profile time") {
    std::vector<RankEnvironment> ranks = onHost({quietRank(0), quietRank(1)}, 0.0);
    ranks[0].reference_between_steps_ms = {7.6, 7.7, 7.7};
    ranks[0].reference_after_ms = 7.8;
    ranks[0].reference_before_ms = 7.7;
    const auto environment = stagecut::assessEnvironment(10.0, 1, ranks);
    REQUIRE(environment.warnings.size() == 1);
    CHECK_THAT(environment.warnings[0], Contains("ran 23% faster on rank 0 during the steps than when the model was "
                                                 "profiled (7.70 ms against 10.00 ms): the profile was measured on a "
                                                 "slower or busier machine"));
    // 1 / 1.25 of the profile's time is as far off as 1.25 times it: not yet beyond.
    for (double& ms : ranks[0].reference_between_steps_ms) ms = 8.1;
    ranks[0].reference_after_ms = 8.1;
    CHECK(stagecut::assessEnvironment(10.0, 1, ranks).trusted());
  }
  SECTION("the machine's pace changing during the run") {
    std::vector<RankEnvironment> ranks = onHost({quietRank(0), quietRank(1)}, 0.0);
    ranks[0].reference_before_ms = 8.0;
    ranks[0].reference_after_ms = 10.4;
    const auto environment = stagecut::assessEnvironment(10.0, 1, ranks);
    REQUIRE(environment.warnings.size() == 1);
    CHECK_THAT(environment.warnings[0], Contains("changed 30% on rank 0 between before and after the steps"));
  }
  SECTION("a slow phase between the kernels before and after the steps") {
    std::vector<RankEnvironment> ranks = onHost({quietRank(0), quietRank(1)}, 0.0);
    ranks[0].reference_between_steps_ms = {10.1, 10.0, 10.2};
    ranks[1].reference_between_steps_ms = {13.4, 13.4, 13.4, 13.4, 10.0};
    const auto environment = stagecut::assessEnvironment(std::nullopt, 1, ranks);
    REQUIRE(environment.warnings.size() == 1);
    CHECK_THAT(environment.warnings[0], Contains("changed 34% on rank 1 from before the warm-up to the steps (10.00 ms, "
                                                 "then a median of 13.40 ms between and after them)"));
    CHECK(environment.reference_change == Approx(0.34));
    // Against the profile's kernel it is a slower machine as well.
    const auto against_profile = stagecut::assessEnvironment(10.0, 1, ranks);
    REQUIRE(against_profile.warnings.size() == 2);
    CHECK_THAT(against_profile.warnings[0],
               Contains("ran 34% slower on rank 1 during the steps than when the model was profiled (13.40 ms, the "
                        "median of its timings between and after them, against 10.00 ms)"));
    // One slow timing of six is not the steps' pace, as one slow step is not their median.
    ranks[1].reference_between_steps_ms = {10.1, 19.0, 10.2, 10.0, 10.1};
    CHECK(stagecut::assessEnvironment(10.0, 1, ranks).trusted());
  }
  SECTION("a slow moment before the warm-up, and steps at the profile's pace") {
    // Seen on this VM: both ranks' first kernel at 6.1 ms, every later one at 3.1, the step +0.3%.
    std::vector<RankEnvironment> ranks = onHost({quietRank(0), quietRank(1)}, 0.0);
    for (RankEnvironment& rank : ranks) {
      rank.reference_before_ms = 19.6;
      rank.reference_between_steps_ms = {10.1, 9.9, 10.0, 10.0, 9.9};
    }
    const auto environment = stagecut::assessEnvironment(10.0, 1, ranks);
    CHECK(environment.trusted());
    CHECK(environment.reference_drift == Approx(0.0).margin(0.011));
    CHECK(environment.reference_change < -0.4);
    // Timed before and after only, the same first kernel voids the run: nothing shows the steps.
    for (RankEnvironment& rank : ranks) rank.reference_between_steps_ms.clear();
    CHECK_FALSE(stagecut::assessEnvironment(10.0, 1, ranks).trusted());
  }
  SECTION("other threads than the profile's") {
    const auto environment = stagecut::assessEnvironment(10.0, 4, onHost({quietRank(0), quietRank(1)}, 0.0));
    REQUIRE(environment.warnings.size() == 1);
    CHECK_THAT(environment.warnings[0], Contains("validate with --threads 4"));
  }
}

TEST_CASE("steps whose times spread beyond the threshold void the run", "[validation][environment]") {
  // A run whose first three steps fell in a slow phase of the VM, with normal kernels around it.
  auto environment = stagecut::assessEnvironment(10.0, 1, onHost({quietRank(0), quietRank(1)}, 0.0));
  REQUIRE(environment.trusted());
  stagecut::assessStepSpread(environment, {968.0, 1035.0, 905.0, 763.0, 741.0});
  CHECK(environment.step_spread == Approx(1035.0 / 741.0 - 1.0));
  REQUIRE(environment.warnings.size() == 1);
  CHECK_THAT(environment.warnings[0], Contains("the measured steps took from 741.0 ms to 1035 ms, 40% apart: the machine's pace "
                                               "changed during the steps; rerun on a quiet machine"));
  CHECK_FALSE(environment.trusted());

  auto quiet = stagecut::assessEnvironment(10.0, 1, onHost({quietRank(0), quietRank(1)}, 0.0));
  stagecut::assessStepSpread(quiet, {734.0, 679.0, 678.0, 675.0, 704.0});
  CHECK(quiet.step_spread == Approx(734.0 / 675.0 - 1.0));
  CHECK(quiet.trusted());
  // Too few steps, or too short ones, are not judged.
  auto few = quiet;
  few.step_spread = 0.0;
  stagecut::assessStepSpread(few, {700.0, 1000.0});
  stagecut::assessStepSpread(few, {5.0, 9.0, 5.0});
  CHECK(few.step_spread == 0.0);
  CHECK(few.trusted());
}

TEST_CASE("hosts are judged apart, and what cannot be known is a note", "[validation][environment]") {
  // One rank on each of two one-core hosts: not oversubscribed; host2 busy.
  std::vector<RankEnvironment> ranks = onHost({quietRank(0, "host1", 1)}, 0.0);
  const std::vector<RankEnvironment> second = onHost({quietRank(1, "host2", 1)}, 0.6);
  ranks.push_back(second[0]);
  const auto environment = stagecut::assessEnvironment(10.0, 1, ranks);
  REQUIRE(environment.warnings.size() == 1);
  CHECK_THAT(environment.warnings[0], Contains("of host2"));
  CHECK(environment.ranks_on_host == 1);

  std::vector<RankEnvironment> unknown = {quietRank(0), quietRank(1)};  // no /proc/stat
  const auto blind = stagecut::assessEnvironment(std::nullopt, 0, unknown);
  CHECK(blind.trusted());
  CHECK_FALSE(blind.other_load_known);
  CHECK(std::isnan(blind.reference_drift));
  CHECK(blind.notes.size() == 2);
}

TEST_CASE("the environment block reads back as written and must agree with itself", "[validation][environment]") {
  std::vector<RankEnvironment> ranks = onHost({quietRank(0), quietRank(1)}, 1.0);
  ranks[0].reference_between_steps_ms = {10.1, 10.3};
  auto environment = stagecut::assessEnvironment(std::nullopt, 1, ranks);
  stagecut::assessStepSpread(environment, {100.0, 110.0, 105.0});
  const nlohmann::json document = stagecut::runEnvironmentToJson(environment);
  CHECK(document["trusted"] == false);
  CHECK(document["reference_kernel_drift"].is_null());
  const auto back = stagecut::runEnvironmentFromJson(document, "v.json");
  CHECK(back.warnings == environment.warnings);
  CHECK(back.notes == environment.notes);
  CHECK(back.ranks == environment.ranks);
  CHECK(back.other_load_cores == Approx(environment.other_load_cores));
  CHECK(back.step_spread == Approx(0.1));
  CHECK(back.ranks[0].reference_between_steps_ms == std::vector<double>{10.1, 10.3});
  // Runs from before the samples and the spread read as having neither.
  nlohmann::json older = document;
  older.erase("step_spread");
  older["ranks"][0].erase("reference_between_steps_ms");
  const auto old_run = stagecut::runEnvironmentFromJson(older, "v.json");
  CHECK(old_run.step_spread == 0.0);
  CHECK(old_run.ranks[0].reference_between_steps_ms.empty());
  nlohmann::json lying = document;
  lying["trusted"] = true;
  CHECK_THROWS_WITH(stagecut::runEnvironmentFromJson(lying, "v.json"),
                    Contains("field \"environment.trusted\" disagrees with its warnings"));
}
