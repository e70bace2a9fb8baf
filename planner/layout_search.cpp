#include "planner/layout_search.h"

#include <algorithm>
#include <chrono>
#include <map>

#include "core/error.h"

namespace stagecut {

namespace {

std::vector<int> divisorsOfGpus(int n) {
  std::vector<int> divisors;
  for (int d = 1; d <= n; ++d) {
    if (n % d == 0) divisors.push_back(d);
  }
  return divisors;
}

// The placements `schedule` runs on `ranks` pipeline ranks: one chunk, a V, or v = 2 .. most.
std::vector<Placement> schedulePlacements(ScheduleKind schedule, int ranks, int most_chunks, std::size_t layers) {
  if (!choosesChunks(schedule)) return {schedulePlacement(schedule, ranks)};
  std::vector<Placement> placements;
  for (int v = 2; v <= most_chunks && static_cast<std::size_t>(ranks) * v <= layers; ++v) {
    placements.push_back(schedulePlacement(schedule, ranks, v));
  }
  return placements;
}

// Every (schedule, placement, sharding) of one TP x CP x PP x DP and microbatch size.
void addScheduleVariants(const PlanInputs& inputs, const LayoutSearchOptions& options, ParallelLayout base,
                         std::vector<ParallelLayout>* out) {
  const std::size_t layers = inputs.profile().layerCount();
  const bool can_shard = base.data_parallel * base.degrees.context_parallel > 1;
  for (ScheduleKind schedule : frameworkSchedules(inputs.target().framework)) {
    // Without a pipeline every schedule is the same step: one of them stands for all.
    if (base.placement.ranks == 1 && schedule != ScheduleKind::kOneFOneB) continue;
    base.schedule = schedule;
    for (const Placement& placement : schedulePlacements(schedule, base.placement.ranks, options.most_chunks, layers)) {
      base.placement = placement;
      for (bool sharded : {true, false}) {
        if (sharded && !can_shard) continue;
        base.sharded_data_parallel = sharded;
        if (options.pin.admits(base)) out->push_back(base);
      }
    }
  }
}

// Why the pins admit no candidate: the first pinned value nothing measured or runs.
std::string emptyPinReason(const PlanInputs& inputs, const LayoutPin& pin) {
  // Each value once, ascending: several degrees share a CP, several sizes a degree.
  const auto listed = [](std::vector<int> values) {
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    std::string text;
    for (int value : values) text += (text.empty() ? "" : ", ") + std::to_string(value);
    return text;
  };
  std::vector<int> tps, cps, sizes;
  for (const ParallelDegrees& degrees : inputs.degrees()) {
    tps.push_back(degrees.tensor_parallel);
    cps.push_back(degrees.context_parallel);
    for (int size : inputs.microbatchSizes(degrees)) sizes.push_back(size);
  }
  const auto has = [](const std::vector<int>& values, int value) {
    return std::find(values.begin(), values.end(), value) != values.end();
  };
  if (pin.tensor_parallel && !has(tps, *pin.tensor_parallel)) {
    return "tp=" + std::to_string(*pin.tensor_parallel) + ": the profile measured TP " + listed(tps) +
           "; profile with --tensor-parallel listing it to plan it";
  }
  if (pin.context_parallel && !has(cps, *pin.context_parallel)) {
    // stagecut profile does not measure a context-parallel share yet (docs/planner.md, "Not yet").
    return "cp=" + std::to_string(*pin.context_parallel) + ": the profile measured CP " + listed(cps) +
           " only, and stagecut profile does not measure context parallelism yet; pin cp=" + listed(cps);
  }
  if (pin.microbatch_size && !has(sizes, *pin.microbatch_size)) {
    return "mbs=" + std::to_string(*pin.microbatch_size) + ": the profile measured microbatch " + listed(sizes);
  }
  if (pin.schedule) {
    const std::vector<ScheduleKind> runs = frameworkSchedules(inputs.target().framework);
    if (std::find(runs.begin(), runs.end(), *pin.schedule) == runs.end()) {
      return std::string("schedule=") + scheduleName(*pin.schedule) + ": " + frameworkName(inputs.target().framework) +
             " does not run it";
    }
  }
  long long product = 1;
  for (const auto& value : {pin.tensor_parallel, pin.context_parallel, pin.pipeline_parallel, pin.data_parallel}) {
    product *= value.value_or(1);
  }
  if (inputs.cluster().gpus % product != 0) {
    return ": the pinned degrees multiply to " + std::to_string(product) + ", which does not divide the " +
           std::to_string(inputs.cluster().gpus) + " GPUs";
  }
  return ": no TP x CP x PP x DP of " + std::to_string(inputs.cluster().gpus) + " GPUs with a measured microbatch size "
         "dividing the global batch " + std::to_string(inputs.target().global_batch) + " has them";
}

}  // namespace

std::vector<ParallelLayout> candidateLayouts(const PlanInputs& inputs, const LayoutSearchOptions& options) {
  const int gpus = inputs.cluster().gpus;
  const int global_batch = inputs.target().global_batch;
  std::vector<ParallelLayout> layouts;
  for (const ParallelDegrees& degrees : inputs.degrees()) {
    if (gpus % degrees.ranks() != 0) continue;
    for (int pp : divisorsOfGpus(gpus / degrees.ranks())) {
      if (static_cast<std::size_t>(pp) > inputs.profile().layerCount()) continue;
      ParallelLayout layout;
      layout.degrees = degrees;
      layout.placement = Placement::loop(pp, 1);
      layout.data_parallel = gpus / degrees.ranks() / pp;
      if (options.pin.recompute) layout.recompute = *options.pin.recompute;
      for (int size : inputs.microbatchSizes(degrees)) {
        const long long per_step = static_cast<long long>(size) * layout.data_parallel;
        if (global_batch % per_step != 0) continue;
        layout.microbatch_size = size;
        layout.microbatches = static_cast<int>(global_batch / per_step);
        addScheduleVariants(inputs, options, layout, &layouts);
      }
    }
  }
  return layouts;
}

std::variant<LayoutFigures, LayoutProblem> tryLayout(const PlanInputs& inputs, const ParallelLayout& layout,
                                                     bool recompute_pinned) {
  if (const auto found = layoutProblem(inputs, layout)) return *found;
  ParallelLayout attempt = layout;
  for (;;) {
    try {
      return evaluateLayout(inputs, attempt);
    } catch (const Error& error) {
      if (error.kind() != ErrorKind::kInput) throw;
      const std::string reason = error.what();
      // The solvers refuse a cap no split meets as --memory-cap; evaluateLayout a peak over the GPU.
      const bool memory = reason.rfind("--memory-cap", 0) == 0 || reason.find("of a GPU") != std::string::npos;
      if (memory && !recompute_pinned && attempt.recompute.mode == RecomputePolicy::Mode::kNone) {
        attempt.recompute.mode = RecomputePolicy::Mode::kAuto;
        continue;
      }
      return LayoutProblem{memory ? LayoutProblem::Kind::kMemory : LayoutProblem::Kind::kFramework, reason};
    }
  }
}

LayoutPlan searchLayouts(const PlanInputs& inputs, const LayoutSearchOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  LayoutPlan plan;
  const std::vector<ParallelLayout> layouts = candidateLayouts(inputs, options);
  plan.candidates = static_cast<long long>(layouts.size());
  if (layouts.empty()) {
    const std::string reason = emptyPinReason(inputs, options.pin);
    throw Error("--fix" + (reason.front() == ':' ? reason : " " + reason));
  }
  std::vector<std::pair<double, const ParallelLayout*>> runnable;  // (bound, layout)
  for (const ParallelLayout& layout : layouts) {
    if (const auto found = layoutProblem(inputs, layout)) {
      plan.rejected.push_back({layout, *found});
    } else {
      runnable.emplace_back(stepLowerBoundMs(inputs, layout), &layout);
    }
  }
  std::stable_sort(runnable.begin(), runnable.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [bound, layout] : runnable) {
    if (plan.ranked.size() >= options.keep && bound >= plan.ranked.back().step_ms) {
      ++plan.pruned;
      continue;
    }
    ++plan.evaluated;
    auto outcome = tryLayout(inputs, *layout, options.pin.recompute.has_value());
    if (auto* problem = std::get_if<LayoutProblem>(&outcome)) {
      plan.rejected.push_back({*layout, *problem});
      continue;
    }
    const LayoutFigures& figures = std::get<LayoutFigures>(outcome);
    if (!figures.split_proven) {
      ++plan.unproven_splits;
      plan.largest_split_gap = std::max(plan.largest_split_gap, figures.split.bottleneck_ms / figures.split_bound_ms - 1.0);
    }
    plan.ranked.push_back(std::move(std::get<LayoutFigures>(outcome)));
    std::stable_sort(plan.ranked.begin(), plan.ranked.end(),
                     [](const LayoutFigures& a, const LayoutFigures& b) { return a.step_ms < b.step_ms; });
    if (plan.ranked.size() > options.keep) plan.ranked.pop_back();
  }
  plan.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return plan;
}

}  // namespace stagecut
