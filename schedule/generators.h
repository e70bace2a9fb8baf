#pragma once

#include <optional>
#include <string>
#include <vector>

#include "schedule/pipeline_schedule.h"
#include "schedule/schedule_kind.h"

namespace stagecut {

/// The schedule names generateSchedule() knows, in the order the CLI lists and runs them:
/// gpipe, 1f1b, interleaved-1f1b, zb-h1, zb-v, dualpipe-v.
const std::vector<std::string>& scheduleNames();

/// Splits a comma-separated list such as "gpipe,1f1b" ("all" for every schedule) into
/// schedules, in the order given, without repeats. Throws Error (input) for an empty list or an
/// unknown name, suggesting the nearest: "--schedule: unknown schedule '1f1', did you mean '1f1b'?".
std::vector<ScheduleKind> parseScheduleList(const std::string& list);

/// Checks a pipeline's shape: N = placement.ranks, M = `microbatches` and v =
/// placement.chunks_per_rank must each be at least 1. Throws Error (input) naming the flag
/// (--stages, --microbatches, --chunks) otherwise.
void checkPipelineShape(const Placement& placement, int microbatches);

/// The op lists of schedule `kind` for the N ranks and v chunks per rank of `placement` and M =
/// `microbatches` (any v in loop order for interleaved-1f1b, which also needs M a multiple of N;
/// 2 in a V for zb-v and dualpipe-v, which also needs M >= 2N; 1 for the others: see
/// checkRunsPlacement). Throws Error (input) naming the flag (--stages, --microbatches,
/// --chunks, --schedule) and the fix for N, M or v < 1, a placement the schedule does not run,
/// or a shape it cannot run. Every generator also refuses more than 2^22 forward ops per step
/// (N x M x v), which no pipeline needs and which would exhaust memory before a mistyped flag
/// was reported.
Schedule generateSchedule(ScheduleKind kind, const Placement& placement, int microbatches);

/// generateSchedule() of the schedule called `name` (parseScheduleName) on `ranks` ranks with
/// its own placement (schedulePlacement, `chunks` for interleaved-1f1b), for tests and tools
/// that spell schedules out.
Schedule generateSchedule(const std::string& name, int ranks, int microbatches, std::optional<int> chunks = std::nullopt);

/// GPipe: all M forwards, then all M backwards (last microbatch first), on every rank.
Schedule generateGpipe(int stages, int microbatches);

/// 1F1B (PipeDream-Flush, as Megatron and DeepSpeed run it): rank r warms up with
/// min(N - 1 - r, M) forwards, then alternates one forward and one backward, then drains.
Schedule generateOneFOneB(int stages, int microbatches);

/// Interleaved 1F1B (Megatron's virtual pipeline): v chunks per rank in loop order, rank r
/// holding chunks r, r + N, ...; forwards run in groups of N microbatches per chunk. M must be
/// a multiple of N. With v = 1 it is 1F1B.
Schedule generateInterleavedOneFOneB(const Placement& placement, int microbatches);

/// ZB-H1 (Qi et al. 2023): 1F1B's order with the backward split into B (input gradient) and W
/// (weight gradient); rank r defers the W of its first r backwards to its cool-down, where the
/// pipeline would otherwise idle, so no rank holds more than N microbatches (1F1B's rank 0).
Schedule generateZeroBubbleH1(int stages, int microbatches);

/// ZB-V (Qi et al. 2023, section 6; PyTorch's ScheduleZBVZeroBubble): two chunks per rank in a
/// V (rank r holds model stages r and 2N - 1 - r, so the turn at the bottom stays on rank N - 1),
/// the backward split into B and W. Rank r warms up with 2(N - r) - 1 forwards of chunk 0, r
/// pairs of forwards, and N - r forward-B-W triples of chunk 1; the steady state runs F, B, W of
/// chunk 0 then of chunk 1; the cool-down runs the input gradients first and leaves W to fill the
/// drain. On equal F = B = W chunk costs its step is 6M + N - 1 units for M >= 2N - 1, the
/// least any schedule can take (see zeroBubbleVBubbleFraction).
Schedule generateZeroBubbleV(int stages, int microbatches);

/// DualPipeV (DeepSeek's DualPipe cut in half; PyTorch's ScheduleDualPipeV, whose order this is):
/// the V of zb-v, for M >= 2N. Rank r warms up with 2(N - r - 1) forwards of chunk 0, r + 1
/// pairs of forwards and N - r - 1 (B, W, F) of chunk 1; the steady state pairs a forward of one
/// chunk with the whole backward (B then W) of the other, as DualPipe overlaps them; the
/// cool-down splits the second half of its backwards and runs their W last. Where PyTorch
/// overlaps a forward with a backward in one action, the list runs the forward first. On equal
/// F = B = W chunk costs its step is 6M + N - 1 units, as zb-v's, with more microbatches in
/// flight (2N + 1 chunk activations on every rank).
Schedule generateDualPipeV(int stages, int microbatches);

}  // namespace stagecut
