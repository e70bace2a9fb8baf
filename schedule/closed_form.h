#pragma once

namespace stagecut {

/// Bubble of GPipe and 1F1B with equal stage costs and no communication: the idle fraction of a
/// step, (N - 1) / (M + N - 1), for N stages and M microbatches. Both schedules fill and drain
/// the pipeline once per step, so they share it. Throws Error (input) when N < 1 or M < 1.
double pipelineBubbleFraction(int stages, int microbatches);

/// Step time of GPipe and 1F1B in units of one microbatch's forward + backward on one stage:
/// M + N - 1 (M slots of useful work plus N - 1 slots of fill and drain).
double pipelineStepSlots(int stages, int microbatches);

}  // namespace stagecut
