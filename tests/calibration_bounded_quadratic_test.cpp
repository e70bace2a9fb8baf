#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>

#include "calibration/bounded_quadratic.h"

using stagecut::minimizeBoxedQuadratic;

namespace {

double objective(const Eigen::MatrixXd& h, const Eigen::VectorXd& b, const Eigen::VectorXd& x) {
  return 0.5 * x.dot(h * x) - b.dot(x);
}

// The oracle: every assignment of each coordinate to free, lower or upper (3^n of them), the free
// ones solved exactly; the best point in the box. A convex problem's minimum is among them.
Eigen::VectorXd bruteForceMinimum(const Eigen::MatrixXd& h, const Eigen::VectorXd& b, double lower, double upper) {
  const Eigen::Index n = b.size();
  int assignments = 1;
  for (Eigen::Index i = 0; i < n; ++i) assignments *= 3;
  Eigen::VectorXd best;
  double best_value = std::numeric_limits<double>::infinity();
  for (int code = 0; code < assignments; ++code) {
    Eigen::VectorXd x = Eigen::VectorXd::Zero(n);
    std::vector<Eigen::Index> free;
    int rest = code;
    for (Eigen::Index i = 0; i < n; ++i, rest /= 3) {
      if (rest % 3 == 0) free.push_back(i);
      else x(i) = rest % 3 == 1 ? lower : upper;
    }
    const auto m = static_cast<Eigen::Index>(free.size());
    if (m > 0) {
      Eigen::MatrixXd reduced(m, m);
      Eigen::VectorXd right(m);
      for (Eigen::Index a = 0; a < m; ++a) {
        right(a) = b(free[a]) - h.row(free[a]).dot(x);
        for (Eigen::Index c = 0; c < m; ++c) reduced(a, c) = h(free[a], free[c]);
      }
      const Eigen::VectorXd solved = reduced.llt().solve(right);
      for (Eigen::Index a = 0; a < m; ++a) x(free[a]) = solved(a);
    }
    if ((x.array() < lower - 1e-12).any() || (x.array() > upper + 1e-12).any()) continue;
    const double value = objective(h, b, x);
    if (value < best_value) {
      best_value = value;
      best = x;
    }
  }
  return best;
}

}  // namespace

TEST_CASE("the boxed quadratic's minimum is the brute-force active-set minimum", "[calibration]") {
  std::mt19937 random(20261202);
  std::uniform_real_distribution<double> entry(-1.0, 1.0);
  std::uniform_real_distribution<double> target(-5.0, 20.0);
  int held = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const Eigen::Index n = 1 + trial % 5;
    Eigen::MatrixXd a(n + 2, n);
    for (Eigen::Index r = 0; r < a.rows(); ++r) {
      for (Eigen::Index c = 0; c < n; ++c) a(r, c) = entry(random);
    }
    // Nearly collinear columns now and then, as two kinds always on one stage make them.
    if (n > 1 && trial % 3 == 0) a.col(1) = a.col(0) + 1e-3 * a.col(1);
    const Eigen::MatrixXd h = a.transpose() * a + 0.01 * Eigen::MatrixXd::Identity(n, n);
    Eigen::VectorXd wanted(n);
    for (Eigen::Index i = 0; i < n; ++i) wanted(i) = target(random);
    const Eigen::VectorXd b = h * wanted;
    const auto got = minimizeBoxedQuadratic(h, b, 0.1, 10.0);
    const Eigen::VectorXd oracle = bruteForceMinimum(h, b, 0.1, 10.0);
    INFO("trial " << trial << ": got " << got.point.transpose() << ", oracle " << oracle.transpose());
    REQUIRE(got.point.size() == n);
    CHECK(objective(h, b, got.point) <= objective(h, b, oracle) + 1e-9 * (1 + std::abs(objective(h, b, oracle))));
    CHECK((got.point - oracle).cwiseAbs().maxCoeff() < 1e-6);
    for (Eigen::Index i = 0; i < n; ++i) {
      CHECK(got.point(i) >= 0.1);
      CHECK(got.point(i) <= 10.0);
      const bool on_bound = got.point(i) == 0.1 || got.point(i) == 10.0;
      CHECK(got.at_bound[static_cast<std::size_t>(i)] == on_bound);
      if (on_bound) ++held;
    }
  }
  CHECK(held > 100);  // the trials do exercise the box
}

TEST_CASE("a minimum inside the box is the unconstrained one, none at a bound", "[calibration]") {
  Eigen::MatrixXd h(2, 2);
  h << 2.0, 0.5, 0.5, 1.0;
  const Eigen::Vector2d inside(1.2, 0.8);
  const auto got = minimizeBoxedQuadratic(h, h * inside, 0.1, 10.0);
  CHECK((got.point - inside).cwiseAbs().maxCoeff() < 1e-12);
  CHECK_FALSE(got.at_bound[0]);
  CHECK_FALSE(got.at_bound[1]);
}
