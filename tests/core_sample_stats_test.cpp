#include <catch2/catch.hpp>

#include "core/sample_stats.h"

TEST_CASE("repeated timings reduce to median, extremes and coefficient of variation", "[core][stats]") {
  const auto odd = stagecut::summarizeSamples({3.0, 1.0, 2.0});
  CHECK(odd.median == 2.0);
  CHECK(odd.min == 1.0);
  CHECK(odd.max == 3.0);
  // mean 2, sample standard deviation 1.
  CHECK(odd.cv == Approx(0.5));
  const auto even = stagecut::summarizeSamples({4.0, 1.0, 2.0, 3.0});
  CHECK(even.median == 2.5);
  CHECK(stagecut::summarizeSamples({5.0}).cv == 0.0);
  CHECK(stagecut::summarizeSamples({}).median == 0.0);
}

TEST_CASE("medianOf is summarizeSamples' median", "[core][stats]") {
  CHECK(stagecut::medianOf({3.0, 1.0, 2.0}) == 2.0);
  CHECK(stagecut::medianOf({4.0, 1.0, 2.0, 3.0}) == 2.5);
  CHECK(stagecut::medianOf({}) == 0.0);
}
