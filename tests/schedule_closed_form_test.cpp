#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "schedule/closed_form.h"

using stagecut::pipelineBubbleFraction;

namespace {

// Independent oracle: play GPipe out slot by slot with unit forward and backward times.
// F(m, s) starts when stage s is free and F(m, s-1) is done; the backwards run in reverse stage
// order after the last forward. Returns the idle fraction over N stages x the step time.
double gpipeBubbleBySlots(int stages, int microbatches) {
  std::vector<double> free_at(stages, 0.0);
  std::vector<std::vector<double>> forward_end(microbatches, std::vector<double>(stages));
  for (int m = 0; m < microbatches; ++m) {
    for (int s = 0; s < stages; ++s) {
      const double ready = s == 0 ? 0.0 : forward_end[m][s - 1];
      forward_end[m][s] = std::max(free_at[s], ready) + 1.0;
      free_at[s] = forward_end[m][s];
    }
  }
  std::vector<std::vector<double>> backward_end(microbatches, std::vector<double>(stages));
  for (int m = 0; m < microbatches; ++m) {
    for (int s = stages - 1; s >= 0; --s) {
      const double ready = s == stages - 1 ? forward_end[m][s] : backward_end[m][s + 1];
      backward_end[m][s] = std::max(free_at[s], ready) + 1.0;
      free_at[s] = backward_end[m][s];
    }
  }
  const double step = *std::max_element(free_at.begin(), free_at.end());
  const double busy = 2.0 * microbatches * stages;
  return 1.0 - busy / (step * stages);
}

}  // namespace

TEST_CASE("the bubble closed form gives the lesson's two figures", "[schedule][closed-form]") {
  CHECK(pipelineBubbleFraction(4, 8) == Approx(3.0 / 11.0));
  CHECK(pipelineBubbleFraction(4, 8) == Approx(0.273).margin(0.0005));
  CHECK(pipelineBubbleFraction(4, 64) == Approx(0.045).margin(0.0005));
}

TEST_CASE("the bubble closed form matches a slot-by-slot GPipe run", "[schedule][closed-form]") {
  for (int stages = 1; stages <= 8; ++stages) {
    for (int microbatches = 1; microbatches <= 32; ++microbatches) {
      INFO("N = " << stages << ", M = " << microbatches);
      CHECK(pipelineBubbleFraction(stages, microbatches) ==
            Approx(gpipeBubbleBySlots(stages, microbatches)));
    }
  }
}

TEST_CASE("one stage has no bubble and the bubble shrinks as M grows", "[schedule][closed-form]") {
  CHECK(pipelineBubbleFraction(1, 1) == 0.0);
  for (int m = 1; m < 64; ++m) CHECK(pipelineBubbleFraction(4, m + 1) < pipelineBubbleFraction(4, m));
}

TEST_CASE("the bubble closed form rejects empty pipelines", "[schedule][closed-form][errors]") {
  CHECK_THROWS_WITH(pipelineBubbleFraction(0, 8), "--stages 0: a pipeline needs at least 1 stage");
  CHECK_THROWS_WITH(pipelineBubbleFraction(4, -1),
                    "--microbatches -1: a step needs at least 1 microbatch");
}
