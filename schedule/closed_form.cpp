#include "schedule/closed_form.h"

#include <string>

#include "core/error.h"

namespace stagecut {

namespace {

void checkShape(int stages, int microbatches) {
  if (stages < 1) {
    throw Error("--stages " + std::to_string(stages) + ": a pipeline needs at least 1 stage");
  }
  if (microbatches < 1) {
    throw Error("--microbatches " + std::to_string(microbatches) +
                ": a step needs at least 1 microbatch");
  }
}

}  // namespace

double pipelineStepSlots(int stages, int microbatches) {
  checkShape(stages, microbatches);
  return static_cast<double>(microbatches) + stages - 1;
}

double pipelineBubbleFraction(int stages, int microbatches) {
  return (stages - 1) / pipelineStepSlots(stages, microbatches);
}

}  // namespace stagecut
