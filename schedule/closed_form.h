#pragma once

#include <optional>
#include <string>

#include "schedule/schedule_kind.h"

namespace stagecut {

/// Bubble of GPipe and 1F1B with equal stage costs and no communication: the idle fraction of a
/// step, (N - 1) / (M + N - 1), for N stages and M microbatches. Both schedules fill and drain
/// the pipeline once per step, so they share it. Throws Error (input) when N < 1 or M < 1.
double pipelineBubbleFraction(int stages, int microbatches);

/// Step time of GPipe and 1F1B in units of one microbatch's forward + backward on one stage:
/// M + N - 1 (M slots of useful work plus N - 1 slots of fill and drain).
double pipelineStepSlots(int stages, int microbatches);

/// Bubble of interleaved 1F1B with v chunks per rank, equal chunk costs and no communication:
/// fill and drain shrink to (N - 1) / v of a stage's slot, so the bubble is
/// (N - 1) / (v M + N - 1) (Narayanan et al. 2021). Throws Error (input) when N, M or v < 1.
double interleavedBubbleFraction(int stages, int microbatches, int chunks);

/// Bubble of ZB-H1 with F = B = W on every stage and no communication, for M >= N: each rank
/// idles N - 1 op slots (a third of 1F1B's 3 (N - 1)), so the bubble is (N - 1) / (3 M + N - 1).
/// Throws Error (input) when N < 1 or M < N.
double zeroBubbleH1BubbleFraction(int stages, int microbatches);

/// Bubble of ZB-V with F = B = W on every chunk and no communication, for M >= 2N - 1: the step
/// is 6M + N - 1 chunk slots, so the bubble is (N - 1) / (6M + N - 1). No schedule can do
/// better: rank N - 1 cannot start before microbatch 0's forward has crossed the N - 1 chunks
/// above it, and then has 6M slots of its own work. Throws Error (input) when N < 1 or
/// M < 2N - 1.
double zeroBubbleVBubbleFraction(int stages, int microbatches);

/// The closed-form bubble of schedule `kind` where one is known for equal stage costs and no
/// communication: gpipe and 1f1b (any F : B), interleaved-1f1b (any F : B, M a multiple of N),
/// zb-h1 (only when `equal_f_b_w`, and M >= N), zb-v (only when `equal_f_b_w`, and
/// M >= 2N - 1), dualpipe-v (zb-v's (N - 1) / (6M + N - 1): its step reaches the same bound when
/// `equal_f_b_w` and M >= 2N; DeepSeek's table gives (N - 1)(F&B + B - 3W) with F&B the time of
/// a forward overlapped with a backward, which stagecut runs one after the other).
/// std::nullopt otherwise, and for a placement the schedule does not run. N and v are
/// `placement`'s.
std::optional<double> closedFormBubble(ScheduleKind kind, const Placement& placement, int microbatches,
                                       bool equal_f_b_w);

/// "(N-1)/(M+N-1)", "(N-1)/(vM+N-1)", "(N-1)/(3M+N-1)", "(N-1)/(6M+N-1)": the formula closedFormBubble() uses for
/// `kind`, for tables; "" where it has none.
std::string closedFormText(ScheduleKind kind);

}  // namespace stagecut
