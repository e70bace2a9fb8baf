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

double interleavedBubbleFraction(int stages, int microbatches, int chunks) {
  checkShape(stages, microbatches);
  if (chunks < 1) {
    throw Error("--chunks " + std::to_string(chunks) + ": each rank needs at least 1 model chunk");
  }
  return (stages - 1.0) / (static_cast<double>(chunks) * microbatches + stages - 1);
}

double zeroBubbleH1BubbleFraction(int stages, int microbatches) {
  checkShape(stages, microbatches);
  if (microbatches < stages) {
    throw Error("--microbatches " + std::to_string(microbatches) +
                ": the ZB-H1 closed form holds for M >= N = " + std::to_string(stages) +
                "; simulate it instead");
  }
  return (stages - 1.0) / (3.0 * microbatches + stages - 1);
}

std::optional<double> closedFormBubble(const std::string& name, int stages, int microbatches,
                                       int chunks, bool equal_f_b_w) {
  if (stages < 1 || microbatches < 1 || chunks < 1) return std::nullopt;
  if (name == "gpipe" || name == "1f1b") return pipelineBubbleFraction(stages, microbatches);
  if (name == "interleaved-1f1b" && microbatches % stages == 0) {
    return interleavedBubbleFraction(stages, microbatches, chunks);
  }
  if (name == "zb-h1" && equal_f_b_w && microbatches >= stages) {
    return zeroBubbleH1BubbleFraction(stages, microbatches);
  }
  return std::nullopt;
}

std::string closedFormText(const std::string& name) {
  if (name == "gpipe" || name == "1f1b") return "(N-1)/(M+N-1)";
  if (name == "interleaved-1f1b") return "(N-1)/(vM+N-1)";
  if (name == "zb-h1") return "(N-1)/(3M+N-1)";
  return "";
}

}  // namespace stagecut
