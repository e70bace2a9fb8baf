#pragma once

// The one search over layouts: every TP x CP x PP x DP = G the profile's degrees allow, every
// chunk count and schedule the framework runs, every measured microbatch size dividing the
// global batch, recomputation where memory needs it and the optimizer sharded or not. Each
// candidate is held to layoutProblem() first; the rest are taken in order of their step's lower
// bound and priced in full by evaluateLayout() until the bound passes the slowest layout kept,
// so the layouts it ranks are exactly the fastest of all (tests/planner_layout_search_test.cpp
// holds it to pricing every candidate).

#include <string>
#include <variant>
#include <vector>

#include "planner/layout_evaluation.h"
#include "planner/parallel_layout.h"

namespace stagecut {

/// What the search may try beyond what the profile measured.
struct LayoutSearchOptions {
  LayoutPin pin;            ///< what the user fixed (--fix); the rest is searched
  int most_chunks = 8;      ///< the largest v interleaved-1f1b is tried with
  std::size_t keep = 10;    ///< how many of the fastest layouts are ranked
};

/// A layout that cannot run, and why.
struct RejectedLayout {
  ParallelLayout layout;
  LayoutProblem problem;
};

/// The search's answer.
struct LayoutPlan {
  std::vector<LayoutFigures> ranked;     ///< the fastest first, at most `keep`
  std::vector<RejectedLayout> rejected;  ///< every candidate that cannot run
  long long candidates = 0;              ///< layouts enumerated (pins applied)
  long long evaluated = 0;               ///< priced in full: split and simulated step
  long long pruned = 0;                  ///< left out by the bound: none of them can be faster
  double seconds = 0.0;                  ///< wall time of the search
  /// Splits whose search stopped at its node budget (kLayoutChunkSearchNodes) with the best it
  /// found, and the largest of their slowest ranks over their proven bounds, less 1.
  long long unproven_splits = 0;
  double largest_split_gap = 0.0;
};

/// Every layout `inputs` allows that `options.pin` admits, problems included: the candidates.
std::vector<ParallelLayout> candidateLayouts(const PlanInputs& inputs, const LayoutSearchOptions& options);

/// Prices one candidate: its figures, or why it cannot run. Recomputation: a layout whose
/// recompute is not pinned that fits no GPU without it is tried again with auto (each stage the
/// cheapest of none, selective and full that fits).
std::variant<LayoutFigures, LayoutProblem> tryLayout(const PlanInputs& inputs, const ParallelLayout& layout,
                                                     bool recompute_pinned);

/// The search (see the file comment). Throws Error (input) when the pins admit no candidate.
LayoutPlan searchLayouts(const PlanInputs& inputs, const LayoutSearchOptions& options);

}  // namespace stagecut
