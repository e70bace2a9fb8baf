// Large chains end to end: a profile of L layers is written, read, partitioned (exact, with
// communication), and its partition simulated under 1F1B, each size in a fresh child process so
// that its peak resident memory is its own. Prints time per phase and peak RSS; the RSS per layer
// staying flat from 10,000 to 100,000 layers is what shows that nothing is quadratic.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/json_document.h"
#include "core/profile_json.h"
#include "partitioner/profile_partitioner.h"
#include "schedule/generators.h"
#include "schedule/profile_costs.h"
#include "schedule/simulator.h"

namespace {

stagecut::Profile syntheticProfile(int layers) {
  stagecut::Profile profile;
  profile.model.name = "limits-chain";
  profile.device.kind = "cpu";
  profile.run.microbatch_size = 4;
  for (int i = 0; i < layers; ++i) {
    stagecut::LayerCost layer;
    layer.index = i;
    layer.name = "block." + std::to_string(i);
    layer.kind = "TransformerBlock";
    layer.forward_ms = stagecut::TimeStatsMs::exactly(1.0 + (i * 7919 % 13) * 0.1);
    layer.backward_ms = stagecut::TimeStatsMs::exactly(2.0 + (i * 104729 % 17) * 0.1);
    layer.params = 7'000'000;
    layer.param_bytes = 28'000'000;
    layer.activation_bytes = 50'000'000;
    layer.output_bytes = 6'291'456;
    profile.layers.push_back(layer);
  }
  return profile;
}

double msSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

double peakRssMiB() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

void runOneSize(int layers, int stages, int microbatches) {
  const std::string path = "/tmp/stagecut-limits-" + std::to_string(getpid()) + ".json";
  const double rss_start = peakRssMiB();
  {
    const stagecut::Profile generated = syntheticProfile(layers);
    stagecut::writeProfileFile(path, generated);
  }
  auto start = std::chrono::steady_clock::now();
  const stagecut::Profile profile = stagecut::readProfileFile(path);
  const double read_ms = msSince(start);
  const double rss_read = peakRssMiB();
  std::remove(path.c_str());

  stagecut::PartitionOptions options;
  options.placement = stagecut::Placement::loop(stages, 1);
  options.microbatches = microbatches;
  options.bandwidth_bytes_per_s = 25e9;
  options.latency_ms = 0.01;
  start = std::chrono::steady_clock::now();
  const stagecut::Partition partition =
      stagecut::partitionProfile(profile, options, "limits", stagecut::SplitMethod::kCompute);
  const double partition_ms = msSince(start);

  start = std::chrono::steady_clock::now();
  const auto schedule = stagecut::generateSchedule("1f1b", stages, microbatches);
  const auto costs = stagecut::costsFromPartition(profile, partition, stagecut::Placement::loop(stages, 1), {25e9, 0.01}, "limits");
  const auto result = stagecut::simulate(schedule, costs.costs);
  const double simulate_ms = msSince(start);
  const double rss_end = peakRssMiB();

  std::printf("%9d  %8.0f  %12.0f  %11.1f  %13.1f  %14.1f  %15.0f   (step %.0f ms)\n", layers, read_ms,
              partition_ms, simulate_ms, rss_read, rss_end, (rss_end - rss_start) * 1048576.0 / layers,
              result.step_ms);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const int stages = 64, microbatches = 256;
  std::printf("limits: L layers -> write, read, partition (exact, %d stages, communication charged), "
              "simulate 1f1b (M = %d); each size in its own process\n\n",
              stages, microbatches);
  std::printf("%9s  %8s  %12s  %11s  %13s  %14s  %15s\n", "layers", "read ms", "partition ms", "simulate ms",
              "RSS read MiB", "RSS peak MiB", "peak B / layer");
  for (int layers : {10'000, 30'000, 100'000}) {
    if (argc > 1 && std::atoi(argv[1]) > 0) layers = std::atoi(argv[1]);
    std::fflush(stdout);  // or the child inherits and prints the buffered header again
    const pid_t child = fork();
    if (child == 0) {
      runOneSize(layers, stages, microbatches);
      std::_Exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "bench_limits: the run with %d layers failed\n", layers);
      return 1;
    }
    if (argc > 1) break;
  }
  return 0;
}
