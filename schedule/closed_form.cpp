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

double zeroBubbleVBubbleFraction(int stages, int microbatches) {
  checkShape(stages, microbatches);
  if (microbatches < 2 * stages - 1) {
    throw Error("--microbatches " + std::to_string(microbatches) +
                ": the ZB-V closed form holds for M >= 2N - 1 = " + std::to_string(2 * stages - 1) +
                "; simulate it instead");
  }
  return (stages - 1.0) / (6.0 * microbatches + stages - 1);
}

std::optional<double> closedFormBubble(ScheduleKind kind, const Placement& placement, int microbatches,
                                       bool equal_f_b_w) {
  const int stages = placement.ranks;
  const int chunks = placement.chunks_per_rank;
  if (stages < 1 || microbatches < 1 || chunks < 1) return std::nullopt;
  if (placement.chunked() && !runsPlacement(kind, placement)) return std::nullopt;
  switch (kind) {
    case ScheduleKind::kGpipe:
    case ScheduleKind::kOneFOneB:
      return pipelineBubbleFraction(stages, microbatches);
    case ScheduleKind::kInterleavedOneFOneB:
      if (!microbatchCountProblem(kind, stages, microbatches).empty()) return std::nullopt;
      return interleavedBubbleFraction(stages, microbatches, chunks);
    case ScheduleKind::kZeroBubbleH1:
      if (!equal_f_b_w || microbatches < stages) return std::nullopt;
      return zeroBubbleH1BubbleFraction(stages, microbatches);
    case ScheduleKind::kZeroBubbleV:
      if (!equal_f_b_w || microbatches < 2 * stages - 1) return std::nullopt;
      return zeroBubbleVBubbleFraction(stages, microbatches);
    case ScheduleKind::kDualPipeV:
      if (!equal_f_b_w || !microbatchCountProblem(kind, stages, microbatches).empty()) return std::nullopt;
      return zeroBubbleVBubbleFraction(stages, microbatches);
  }
  return std::nullopt;
}

std::string closedFormText(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::kGpipe:
    case ScheduleKind::kOneFOneB:
      return "(N-1)/(M+N-1)";
    case ScheduleKind::kInterleavedOneFOneB:
      return "(N-1)/(vM+N-1)";
    case ScheduleKind::kZeroBubbleH1:
      return "(N-1)/(3M+N-1)";
    case ScheduleKind::kZeroBubbleV:
    case ScheduleKind::kDualPipeV:
      return "(N-1)/(6M+N-1)";
  }
  return "";
}

}  // namespace stagecut
