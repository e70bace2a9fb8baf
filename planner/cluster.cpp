#include "planner/cluster.h"

#include <cmath>

#include "core/error.h"
#include "core/suggest.h"

namespace stagecut {

namespace {

constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;

// Link figures are the bus bandwidth a ring collective reaches (nccl-tests' busbw), not the
// marketing figure: NVLink 4's 450 GB/s a direction gives about 360 GB/s in an 8-GPU ring,
// 400 Gb/s InfiniBand about 40 GB/s per GPU; NVLink 3 about 230 GB/s, 200 Gb/s HDR about 20 GB/s.
// Latencies are per ring step. docs/planner.md lists them; every one can be overridden.
Cluster clusterFigures(const char* name, const char* gpu, std::uint64_t memory_bytes, double intra_gb_s, double intra_us,
               double inter_gb_s, double inter_us, double peak_tflops) {
  Cluster cluster;
  cluster.name = name;
  cluster.gpu = gpu;
  cluster.gpus_per_node = 8;
  cluster.memory_bytes = memory_bytes;
  cluster.intra_node = BoundaryLink{intra_gb_s * 1e9, intra_us / 1000.0};
  cluster.inter_node = BoundaryLink{inter_gb_s * 1e9, inter_us / 1000.0};
  cluster.peak_bf16_flops = peak_tflops * 1e12;
  return cluster;
}

}  // namespace

const std::vector<Cluster>& clusterPresets() {
  static const std::vector<Cluster> presets = {
      clusterFigures("dgx-h100", "H100 SXM", 80 * kGiB, 360, 3, 40, 8, 989.4),
      clusterFigures("dgx-h200", "H200 SXM", 141'000'000'000ull, 360, 3, 40, 8, 989.4),
      clusterFigures("dgx-a100", "A100 SXM", 80 * kGiB, 230, 4, 20, 10, 312),
  };
  return presets;
}

Cluster clusterPreset(const std::string& name, int gpus) {
  std::vector<std::string> names;
  for (const Cluster& known : clusterPresets()) {
    if (known.name == name) {
      Cluster cluster = known;
      cluster.gpus = gpus;
      return cluster;
    }
    names.push_back(known.name);
  }
  throw Error("--cluster: unknown cluster '" + name + "'" + unknownNameHint(name, names) +
              "; give --gpus-per-node, --gpu-memory and the links instead");
}

void checkCluster(const Cluster& cluster) {
  if (cluster.gpus < 1) throw Error("--gpus " + std::to_string(cluster.gpus) + ": a plan needs at least 1 GPU");
  if (cluster.gpus_per_node < 1) {
    throw Error("--gpus-per-node " + std::to_string(cluster.gpus_per_node) + ": a node holds at least 1 GPU");
  }
  if (cluster.memory_bytes == 0) throw Error("--gpu-memory: give each GPU's memory, e.g. 80GiB");
  for (const auto& [flag, link] : {std::pair{"--intra-node-bandwidth", &cluster.intra_node},
                                   std::pair{"--inter-node-bandwidth", &cluster.inter_node}}) {
    if (!(link->bandwidth_bytes_per_s > 0) || !std::isfinite(link->bandwidth_bytes_per_s) || !(link->latency_ms >= 0) ||
        !std::isfinite(link->latency_ms)) {
      throw Error(std::string(flag) + ": each link needs a bandwidth above 0 and a latency of 0 or more, e.g. 360GB/s and 3us");
    }
  }
}

bool profiledOnClusterGpu(const Profile& profile, const Cluster& cluster) {
  if (profile.device.kind != "cuda" || cluster.gpu.empty()) return false;
  const std::string model = cluster.gpu.substr(0, cluster.gpu.find(' '));
  return profile.device.name.find(model) != std::string::npos;
}

bool groupInNode(const Cluster& cluster, int stride, int size) {
  // Ranks r, r + stride, ... r + (size - 1) stride share a node when the span they cover does
  // and nodes start at multiples of gpus_per_node (the span divides it, as Megatron's groups do).
  const long long span = static_cast<long long>(stride) * size;
  return size <= 1 || (span <= cluster.gpus_per_node && cluster.gpus_per_node % span == 0);
}

const BoundaryLink& groupLink(const Cluster& cluster, int stride, int size) {
  return groupInNode(cluster, stride, size) ? cluster.intra_node : cluster.inter_node;
}

}  // namespace stagecut
