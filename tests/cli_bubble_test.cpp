#include <catch2/catch.hpp>

#include "tests/test_support.h"

using stagecut::testing::CommandResult;
using stagecut::testing::runStagecut;
using Catch::Matchers::Contains;

TEST_CASE("stagecut bubble prints the closed form for the lesson's pipelines", "[cli][bubble]") {
  const CommandResult eight = runStagecut("bubble --stages 4 --microbatches 8");
  CHECK(eight.exit_code == 0);
  CHECK_THAT(eight.out, Contains("(N-1)/(M+N-1) = 3/11 = 27.3%"));
  // The grid around M reaches M = 64, where the bubble is down to 3/67.
  CHECK_THAT(eight.out, Contains("4.5%"));

  const CommandResult sixty_four = runStagecut("bubble --stages 4 --microbatches 64");
  CHECK_THAT(sixty_four.out, Contains("(N-1)/(M+N-1) = 3/67 = 4.5%"));
}

TEST_CASE("stagecut bubble marks a microbatch count that is not a power of two", "[cli][bubble]") {
  const CommandResult result = runStagecut("bubble --stages 8 --microbatches 12");
  CHECK(result.exit_code == 0);
  CHECK_THAT(result.out, Contains(">  12"));
  CHECK_THAT(result.out, Contains("7/19 = 36.8%"));
}

TEST_CASE("stagecut bubble rejects empty pipelines with exit 2", "[cli][bubble][errors]") {
  const CommandResult zero = runStagecut("bubble --stages 0 --microbatches 8");
  CHECK(zero.exit_code == 2);
  CHECK(zero.err == "stagecut: --stages 0: use 1 to 2147483647 stages\n");
  const CommandResult words = runStagecut("bubble --stages four");
  CHECK(words.exit_code == 2);
  CHECK_THAT(words.err, Contains("four"));
}
