// How long generating and simulating a schedule takes at the sizes a partitioner search or a
// large pipeline needs (the figure to beat: N = 64, M = 1,024, v = 4 interleaved, about 500,000
// ops, in under 0.5 s). Prints the median of repeated runs and the cost per op.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "schedule/chrome_trace.h"
#include "schedule/generators.h"
#include "schedule/simulator.h"

namespace {

template <typename Fn>
double medianMs(int repeats, Fn&& fn) {
  std::vector<double> samples;
  fn();  // warm-up: first-touch page faults and allocator growth are not the simulator's cost
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    samples.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::nth_element(samples.begin(), samples.begin() + repeats / 2, samples.end());
  return samples[repeats / 2];
}

struct Case {
  stagecut::ScheduleKind schedule;
  stagecut::Placement placement;
  int microbatches;
};

}  // namespace

int main() {
  using stagecut::Placement;
  using stagecut::ScheduleKind;
  const Case cases[] = {{ScheduleKind::kOneFOneB, Placement::loop(8, 1), 64},
                        {ScheduleKind::kZeroBubbleH1, Placement::loop(8, 1), 64},
                        {ScheduleKind::kOneFOneB, Placement::loop(64, 1), 1024},
                        {ScheduleKind::kZeroBubbleH1, Placement::loop(64, 1), 1024},
                        {ScheduleKind::kInterleavedOneFOneB, Placement::loop(64, 4), 1024}};
  const int repeats = 11;
  std::printf("median of %d runs after one warm-up\n", repeats);
  std::printf("%-18s %4s %6s %3s %9s %12s %12s %10s %12s\n", "schedule", "N", "M", "v", "ops",
              "generate ms", "simulate ms", "ns/op", "gen+sim ms");
  for (const Case& c : cases) {
    stagecut::Schedule schedule;
    const double generate_ms = medianMs(repeats, [&] {
      schedule = stagecut::generateSchedule(c.schedule, c.placement, c.microbatches);
    });
    const stagecut::PipelineCosts costs = stagecut::unitCosts(schedule);
    stagecut::SimulationResult result;
    const double simulate_ms =
        medianMs(repeats, [&] { result = stagecut::simulate(schedule, costs); });
    const double both_ms = medianMs(repeats, [&] {
      const stagecut::Schedule fresh =
          stagecut::generateSchedule(c.schedule, c.placement, c.microbatches);
      result = stagecut::simulate(fresh, stagecut::unitCosts(fresh));
    });
    const auto ops = schedule.opCount();
    std::printf("%-18s %4d %6d %3d %9zu %12.2f %12.2f %10.1f %12.2f\n", stagecut::scheduleName(c.schedule),
                c.placement.ranks, c.microbatches, c.placement.chunks_per_rank, ops, generate_ms, simulate_ms,
                simulate_ms * 1e6 / static_cast<double>(ops), both_ms);
  }

  const stagecut::Schedule big = stagecut::generateSchedule("interleaved-1f1b", 64, 1024, 4);
  const stagecut::SimulationResult big_result = stagecut::simulate(big, stagecut::unitCosts(big));
  std::size_t bytes = 0;
  const double trace_ms = medianMs(5, [&] {
    bytes = stagecut::renderChromeTrace({{&big, &big_result}}).size();
  });
  std::printf("\nChrome trace of the interleaved case: %.0f ms (median of 5), %.1f MB\n", trace_ms,
              static_cast<double>(bytes) / 1e6);
  return 0;
}
