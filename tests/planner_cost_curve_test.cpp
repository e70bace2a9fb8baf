// Fitted cost curves: least-squares lines, flags, interpolation, and a profile at any size.
#include <cmath>
#include <random>

#include <catch2/catch.hpp>

#include "core/error.h"
#include "planner/cost_curve.h"
#include "planner/sized_profile.h"
#include "tests/test_support.h"

using stagecut::CostCurve;
using stagecut::fitLine;
using stagecut::Profile;
using stagecut::SizedProfile;
using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;

TEST_CASE("fitLine recovers a line through exact points and reports no residual", "[planner][fit]") {
  std::mt19937 random(7);
  std::uniform_real_distribution<double> coefficient(0.0, 50.0);
  for (int trial = 0; trial < 50; ++trial) {
    const double a = coefficient(random), c = coefficient(random);
    const std::vector<double> x = {1, 2, 4, 8, 16, 64};
    std::vector<double> y;
    for (double v : x) y.push_back(a + c * v);
    const auto fit = fitLine(x, y);
    CHECK_THAT(fit.intercept, WithinAbs(a, 1e-9 * (a + c * 64)));
    CHECK_THAT(fit.slope, WithinRel(c, 1e-9));
    CHECK(fit.max_relative_residual < 1e-12);
  }
}

TEST_CASE("fitLine is least squares: the residuals of noisy points sum to zero", "[planner][fit]") {
  // Independent check of the normal equations: sum r_i = 0 and sum x_i r_i = 0.
  const std::vector<double> x = {1, 2, 4, 8};
  const std::vector<double> y = {3.1, 4.7, 9.2, 16.5};
  const auto fit = fitLine(x, y);
  double sum = 0, weighted = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sum += y[i] - fit.at(x[i]);
    weighted += x[i] * (y[i] - fit.at(x[i]));
  }
  CHECK_THAT(sum, WithinAbs(0.0, 1e-9));
  CHECK_THAT(weighted, WithinAbs(0.0, 1e-9));
  CHECK(fit.max_relative_residual > 0.01);
  CHECK_THROWS_AS(fitLine({}, {}), stagecut::Error);
  CHECK(fitLine({4}, {2.5}).intercept == 2.5);  // one size: flat
}

TEST_CASE("a curve a line does not fit is interpolated between measured sizes, never extrapolated",
          "[planner][fit]") {
  // Quadratic: 1, 4, 16, 64 at sizes 1, 2, 4, 8.
  const CostCurve curved({1, 2, 4, 8}, {1, 4, 16, 64}, 0.1);
  CHECK_FALSE(curved.fitsLine());
  CHECK(curved.at(4) == 16);                // measured
  CHECK_THAT(curved.at(6), WithinAbs(40, 1e-12));  // halfway between 16 and 64
  CHECK(curved.covers(3));
  CHECK_FALSE(curved.covers(16));
  const CostCurve straight({1, 2, 4, 8}, {3, 5, 9, 17}, 0.1);
  CHECK(straight.fitsLine());
  CHECK_THAT(straight.at(16), WithinAbs(33, 1e-9));
  CHECK(straight.covers(16));
  const CostCurve single({4}, {9}, 0.1);
  CHECK(single.covers(4));
  CHECK_FALSE(single.covers(8));  // one size says nothing about the slope
}

namespace {

// Every layer costs exactly a + c b: forward (0.5 + i) + 0.25 b, backward twice that; activation
// 1000 b bytes; measured at `sizes`.
Profile linearProfile(const std::vector<int>& sizes, int layers) {
  return stagecut::testing::makeSizedProfile(layers, sizes, [](stagecut::LayerCost& layer, int size) {
    const double forward = 0.5 + layer.index + 0.25 * size;
    layer.forward_ms = stagecut::TimeStatsMs::exactly(forward);
    layer.backward_ms = stagecut::TimeStatsMs::exactly(2 * forward);
    layer.backward_input_ms.reset();
    layer.backward_weight_ms.reset();
    layer.activation_bytes = 1000u * static_cast<unsigned>(size);
    layer.output_bytes = 100u * static_cast<unsigned>(size);
  });
}

}  // namespace

TEST_CASE("a sized profile gives measured costs at measured sizes and the line elsewhere",
          "[planner][fit]") {
  const SizedProfile sized(linearProfile({1, 2, 4, 8}, 3), 0.1, "p.json");
  for (const auto& fit : sized.fits()) CHECK(fit.fits_line);
  const Profile at3 = sized.at(3);
  CHECK(at3.run.microbatch_size == 3);
  CHECK(at3.microbatch_sizes.empty());
  CHECK_THAT(at3.layers[2].forward_ms.median, WithinAbs(2.5 + 0.75, 1e-9));
  CHECK_THAT(at3.layers[2].backward_ms.median, WithinAbs(2 * 3.25, 1e-9));
  CHECK(at3.layers[0].activation_bytes == 3000u);
  CHECK(at3.layers[0].output_bytes == 300u);
  CHECK(sized.at(16).layers[0].activation_bytes == 16000u);  // twice the largest: extrapolated
  CHECK_FALSE(sized.covers(17));
  CHECK_THROWS_WITH(sized.at(32), "p.json: microbatch size 32 is not planned: beyond twice the largest measured "
                                   "size (8); profile that size too (stagecut profile --microbatch ...)");
  CHECK(sized.at(4).layers == linearProfile({1, 2, 4, 8}, 3).microbatch_sizes[2].layers);
}

TEST_CASE("a layer whose costs bend is flagged and interpolated", "[planner][fit]") {
  Profile profile = linearProfile({1, 2, 4, 8}, 3);
  // Layer 1's forward jumps at size 8 (a kernel switch): no line fits it.
  profile.microbatch_sizes[3].layers[1].forward_ms = stagecut::TimeStatsMs::exactly(20.0);
  profile.layers = profile.microbatch_sizes[3].layers;
  const SizedProfile sized(profile, 0.1, "p.json");
  CHECK(sized.fits()[0].fits_line);
  CHECK_FALSE(sized.fits()[1].fits_line);
  CHECK(std::string(sized.fits()[1].worstFit().name) == "forward");
  // Size 6, between 4 (1.5 + 1 = 2.5 ms) and 8 (20 ms): halfway.
  CHECK_THAT(sized.at(6).layers[1].forward_ms.median, WithinAbs((2.5 + 20.0) / 2, 1e-9));
  CHECK_FALSE(sized.covers(16));
  CHECK(sized.notCoveredReason(16) ==
        "outside the measured sizes 1..8, and layer layer.1's costs do not follow a line");
}
