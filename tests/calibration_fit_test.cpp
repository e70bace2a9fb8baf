#include <catch2/catch.hpp>

#include <cmath>
#include <map>

#include "calibration/calibration_fit.h"
#include "core/error.h"
#include "core/profile_json.h"
#include "tests/test_support.h"

using stagecut::CalibrationInput;
using stagecut::Profile;
using stagecut::ValidationReport;
using stagecut::testing::makePartition;

namespace {

// A chain of four kinds, as a GPT is: an embedding, blocks, a head and the loss; B and W timed
// as zero-bubble runs them.
Profile gptLikeProfile() {
  Profile profile = stagecut::testing::makeProfile(8);
  profile.run.extra[stagecut::kWeightGradientTimingKey] = stagecut::kWeightGradientTimedAfterInput;
  for (std::size_t i = 0; i < profile.layers.size(); ++i) {
    auto& layer = profile.layers[i];
    layer.kind = i == 0 ? "Embedding" : i == 6 ? "Head" : i == 7 ? "Loss" : "Block";
    const double backward = layer.backward_ms.median;
    layer.backward_input_ms = stagecut::TimeStatsMs::exactly(i == 0 ? 0.0 : 0.55 * backward);
    layer.backward_weight_ms = stagecut::TimeStatsMs::exactly(i == 7 ? 0.0 : 0.5 * backward);
  }
  return profile;
}

// The machine the runs "measure": each kind's ops `factor` times the profile's.
using TrueFactors = std::map<std::string, std::map<std::string, double>>;

Profile scaled(const Profile& profile, const TrueFactors& factors) {
  Profile truth = profile;
  for (auto& layer : truth.layers) {
    const auto& by_op = factors.at(layer.kind);
    layer.forward_ms.median *= by_op.at("forward_ms");
    layer.backward_ms.median *= by_op.at("backward_ms");
    layer.backward_input_ms->median *= by_op.at("backward_input_ms");
    layer.backward_weight_ms->median *= by_op.at("backward_weight_ms");
  }
  return truth;
}

// A validate run as the simulator on the true costs would measure it: its timeline is the true
// step, op by op.
CalibrationInput simulatedRun(const Profile& truth, const std::vector<int>& split, const std::string& schedule,
                              const std::string& source, bool fitted = true) {
  stagecut::PredictionOptions options;
  options.schedule = stagecut::parseScheduleName(schedule);
  options.microbatches = 8;
  const stagecut::Partition partition = makePartition(split);
  const auto measured = stagecut::predictPipeline(truth, partition, options, source);
  ValidationReport report;
  report.schedule = schedule;
  report.stages = static_cast<int>(split.size());
  report.microbatches = 8;
  report.microbatch_size = truth.run.microbatch_size;
  report.ops = measured.schedule;
  report.measured = measured.simulated;
  report.measured_replicas = {measured.simulated};
  report.measured_step_median_ms = measured.simulated.step_ms;
  for (std::size_t s = 0; s < split.size(); ++s) {
    stagecut::RankComparison rank;
    rank.rank = rank.stage = static_cast<int>(s);
    rank.first_layer = partition.stages[s].first;
    rank.last_layer = partition.stages[s].last;
    report.ranks.push_back(rank);
  }
  return CalibrationInput{source, report, fitted};
}

double stepOf(const Profile& profile, const std::vector<int>& split, const std::string& schedule) {
  stagecut::PredictionOptions options;
  options.schedule = stagecut::parseScheduleName(schedule);
  options.microbatches = 8;
  return stagecut::predictPipeline(profile, makePartition(split), options, "split").simulated.step_ms;
}

double factorOf(const Profile& calibrated, const std::string& kind, const std::string& op) {
  for (const auto& factor : calibrated.calibration->factors) {
    if (factor.kind == kind && factor.op == op) return factor.factor;
  }
  FAIL("no factor for " << kind << " " << op);
  return 0.0;
}

const TrueFactors kSlowerMachine = {
    {"Embedding", {{"forward_ms", 1.0}, {"backward_ms", 1.3}, {"backward_input_ms", 1.0}, {"backward_weight_ms", 1.3}}},
    {"Block", {{"forward_ms", 1.12}, {"backward_ms", 1.2}, {"backward_input_ms", 1.15}, {"backward_weight_ms", 1.25}}},
    {"Head", {{"forward_ms", 0.9}, {"backward_ms", 0.95}, {"backward_input_ms", 0.95}, {"backward_weight_ms", 0.95}}},
    {"Loss", {{"forward_ms", 1.4}, {"backward_ms", 1.4}, {"backward_input_ms", 1.4}, {"backward_weight_ms", 1.0}}},
};

}  // namespace

TEST_CASE("calibration recovers the machine's factors and predicts a held-out split", "[calibration]") {
  const Profile profile = gptLikeProfile();
  const Profile truth = scaled(profile, kSlowerMachine);
  // Two splits fitted (the head and the loss apart in one of them), a third held out.
  const std::vector<CalibrationInput> runs = {simulatedRun(truth, {3, 3, 2}, "zb-h1", "a.json"),
                                              simulatedRun(truth, {2, 4, 1, 1}, "zb-h1", "b.json"),
                                              simulatedRun(truth, {4, 4}, "zb-h1", "held.json", false)};
  stagecut::CalibrationOptions options;
  options.prior_weight = 1e-6;
  const Profile calibrated = stagecut::calibrateProfile(profile, "sha256:raw", runs, options);
  for (const char* kind : {"Block", "Head", "Loss"}) {
    INFO(kind);
    CHECK(factorOf(calibrated, kind, "forward_ms") == Approx(kSlowerMachine.at(kind).at("forward_ms")).epsilon(1e-3));
    CHECK(factorOf(calibrated, kind, "backward_input_ms") ==
          Approx(kSlowerMachine.at(kind).at("backward_input_ms")).epsilon(1e-3));
  }
  CHECK(factorOf(calibrated, "Block", "backward_weight_ms") == Approx(1.25).epsilon(1e-3));
  CHECK(factorOf(calibrated, "Embedding", "backward_weight_ms") == Approx(1.3).epsilon(1e-3));
  REQUIRE(calibrated.calibration->runs.size() == 3);
  for (const auto& run : calibrated.calibration->runs) {
    INFO(run.source);
    CHECK(run.predicted_before_ms < run.measured_step_ms);
    CHECK(run.predicted_after_ms == Approx(run.measured_step_ms).epsilon(1e-3));
  }
  CHECK_FALSE(calibrated.calibration->runs[2].fitted);
  CHECK(calibrated.calibration->uncalibrated_fingerprint == "sha256:raw");
  // Every consumer sees the calibrated times: another split's prediction is the true machine's.
  CHECK(stepOf(calibrated, {1, 5, 2}, "zb-h1") == Approx(stepOf(truth, {1, 5, 2}, "zb-h1")).epsilon(1e-3));
}

TEST_CASE("a calibrated profile keeps its measured times and reads back", "[calibration]") {
  const Profile profile = gptLikeProfile();
  const Profile truth = scaled(profile, kSlowerMachine);
  const std::vector<CalibrationInput> runs = {simulatedRun(truth, {3, 3, 2}, "1f1b", "a.json")};
  const Profile calibrated = stagecut::calibrateProfile(profile, "sha256:raw", runs, {});
  for (std::size_t i = 0; i < profile.layers.size(); ++i) {
    REQUIRE(calibrated.layers[i].uncalibrated.has_value());
    CHECK(calibrated.layers[i].uncalibrated->forward_ms == profile.layers[i].forward_ms);
    CHECK(calibrated.layers[i].uncalibrated->backward_weight_ms == profile.layers[i].backward_weight_ms);
  }
  const Profile read_back = stagecut::profileFromJson(stagecut::profileToJson(calibrated), "calibrated.json");
  CHECK(read_back.layers == calibrated.layers);
  CHECK(read_back.calibration == calibrated.calibration);
  const Profile restored = stagecut::uncalibratedProfile(read_back);
  CHECK(restored.layers == profile.layers);
  CHECK_FALSE(restored.calibration.has_value());
  // Calibrating a calibrated profile refits from the measured times: the same result.
  const Profile again = stagecut::calibrateProfile(calibrated, "sha256:raw", runs, {});
  CHECK(again.layers == calibrated.layers);
  CHECK(again.calibration == calibrated.calibration);
}

TEST_CASE("calibration carries a factor to the ops no run measured", "[calibration]") {
  // 1F1B runs measure the whole backward only: B and W take its factor, marked as carried over.
  const Profile profile = gptLikeProfile();
  const Profile truth = scaled(profile, kSlowerMachine);
  const std::vector<CalibrationInput> runs = {simulatedRun(truth, {3, 3, 2}, "1f1b", "a.json"),
                                              simulatedRun(truth, {2, 5, 1}, "1f1b", "b.json")};
  stagecut::CalibrationOptions options;
  options.prior_weight = 1e-6;
  const Profile calibrated = stagecut::calibrateProfile(profile, "", runs, options);
  const double block_backward = factorOf(calibrated, "Block", "backward_ms");
  CHECK(block_backward == Approx(1.2).epsilon(1e-3));
  CHECK(factorOf(calibrated, "Block", "backward_input_ms") == block_backward);
  CHECK(factorOf(calibrated, "Block", "backward_weight_ms") == block_backward);
  for (const auto& factor : calibrated.calibration->factors) {
    if (factor.op == "backward_input_ms" || factor.op == "backward_weight_ms") CHECK(factor.observations == 0);
    if (factor.op == "forward_ms") CHECK(factor.observations > 0);
  }
}

TEST_CASE("the prior keeps factors at 1 when it outweighs the runs", "[calibration]") {
  const Profile profile = gptLikeProfile();
  const std::vector<CalibrationInput> runs = {
      simulatedRun(scaled(profile, kSlowerMachine), {3, 3, 2}, "zb-h1", "a.json")};
  stagecut::CalibrationOptions options;
  options.prior_weight = 1e6;
  const Profile calibrated = stagecut::calibrateProfile(profile, "", runs, options);
  for (const auto& factor : calibrated.calibration->factors) CHECK(factor.factor == Approx(1.0).epsilon(1e-3));
}

TEST_CASE("calibration refuses runs it cannot fit on", "[calibration]") {
  const Profile profile = gptLikeProfile();
  const Profile truth = scaled(profile, kSlowerMachine);
  using Catch::Matchers::Contains;
  // Only held-out runs: nothing to fit.
  CHECK_THROWS_WITH(stagecut::calibrateProfile(profile, "", {simulatedRun(truth, {4, 4}, "1f1b", "a.json", false)}, {}),
                    Contains("no run to fit on"));
  // A zero-bubble run on a profile whose W was timed alone.
  Profile older = profile;
  older.run.extra.erase(stagecut::kWeightGradientTimingKey);
  CHECK_THROWS_WITH(stagecut::calibrateProfile(older, "", {simulatedRun(truth, {4, 4}, "zb-h1", "a.json")}, {}),
                    Contains("a.json: schedule zb-h1 runs B and W apart"));
  // A run of a chain of another length.
  Profile shorter = profile;
  shorter.layers.pop_back();
  CHECK_THROWS_WITH(stagecut::calibrateProfile(shorter, "", {simulatedRun(truth, {4, 4}, "1f1b", "a.json")}, {}),
                    Contains("a.json: its stages cover 8 layers, the profile has 7"));
  // Another microbatch size.
  CalibrationInput other_size = simulatedRun(truth, {4, 4}, "1f1b", "a.json");
  other_size.report.microbatch_size = 8;
  CHECK_THROWS_WITH(stagecut::calibrateProfile(profile, "", {other_size}, {}), Contains("a.json: ran microbatches of 8"));
}

TEST_CASE("a factor the runs put beyond the box is held at its bound and marked", "[calibration]") {
  // The embedding's W all but vanishes on this "machine": the unbounded fit would give 0.02.
  TrueFactors factors = kSlowerMachine;
  factors["Embedding"]["backward_weight_ms"] = 0.02;
  const Profile profile = gptLikeProfile();
  const Profile truth = scaled(profile, factors);
  const std::vector<CalibrationInput> runs = {simulatedRun(truth, {3, 3, 2}, "zb-h1", "a.json"),
                                              simulatedRun(truth, {2, 4, 1, 1}, "zb-h1", "b.json")};
  stagecut::CalibrationOptions options;
  options.prior_weight = 1e-6;
  const Profile calibrated = stagecut::calibrateProfile(profile, "", runs, options);
  for (const auto& factor : calibrated.calibration->factors) {
    INFO(factor.kind << " " << factor.op << " " << factor.factor);
    const bool embedding_w = factor.kind == "Embedding" && factor.op == "backward_weight_ms";
    CHECK(factor.at_bound == embedding_w);
    CHECK(factor.factor >= stagecut::kMinFactor);
    CHECK(factor.factor <= stagecut::kMaxFactor);
  }
  CHECK(factorOf(calibrated, "Embedding", "backward_weight_ms") == stagecut::kMinFactor);
  // The box costs the fit little: the embedding's W is small beside its stage's blocks'.
  for (const auto& run : calibrated.calibration->runs) {
    INFO(run.source);
    CHECK(std::abs(run.predicted_after_ms / run.measured_step_ms - 1) < 0.01);
    CHECK(std::abs(run.predicted_after_ms / run.measured_step_ms - 1) <
          std::abs(run.predicted_before_ms / run.measured_step_ms - 1));
  }
  const Profile read_back = stagecut::profileFromJson(stagecut::profileToJson(calibrated), "calibrated.json");
  CHECK(read_back.calibration == calibrated.calibration);
  CHECK(calibrated.calibration->method == "per-kind-ridge/2");
}
