#include "prediction/tensor_parallel_comm.h"

#include <cstdio>

#include "core/parallel_degrees.h"
#include "core/units.h"

namespace stagecut {

int profileTensorParallel(const Profile& profile) {
  const std::string where = profile.model.name.empty() ? "the profile" : "the profile of " + profile.model.name;
  return readParallelDegrees(profile.model.config, where).tensor_parallel;
}

double tensorParallelCollectiveMs(double bytes, int ranks, const TensorParallelLink& link) {
  if (ranks < 2 || link.bandwidth_bytes_per_s <= 0) return 0.0;
  const double steps = 2.0 * (ranks - 1);
  return steps * link.latency_ms + steps / ranks * bytes / link.bandwidth_bytes_per_s * 1000.0;
}

namespace {

void addMs(TimeStatsMs& stats, double ms) {
  stats.median += ms;
  stats.min += ms;
  stats.max += ms;
}

// The collectives of every layer, ms per microbatch, forward and backward.
std::pair<double, double> collectiveMs(const LayerCost& layer, int ranks, const TensorParallelLink& link) {
  if (!layer.tp_collectives) return {0.0, 0.0};
  const double one = tensorParallelCollectiveMs(static_cast<double>(layer.tp_collectives->bytes), ranks, link);
  return {layer.tp_collectives->forward * one, layer.tp_collectives->backward * one};
}

}  // namespace

void priceTensorParallelComm(Profile& profile, const TensorParallelLink& link) {
  const int ranks = profileTensorParallel(profile);
  if (ranks < 2 || link.bandwidth_bytes_per_s <= 0) return;
  const auto price = [&](std::vector<LayerCost>& layers) {
    for (LayerCost& layer : layers) {
      const auto [forward, backward] = collectiveMs(layer, ranks, link);
      addMs(layer.forward_ms, forward);
      addMs(layer.backward_ms, backward);
      if (layer.backward_input_ms) addMs(*layer.backward_input_ms, backward);
    }
  };
  price(profile.layers);
  // A profile measured at several microbatch sizes (plan): each size's collectives, by its bytes.
  for (auto& size : profile.microbatch_sizes) price(size.layers);
  profile.run.extra["tp_link"] = {{"bandwidth_bytes_per_s", link.bandwidth_bytes_per_s}, {"latency_ms", link.latency_ms}};
}

std::string tensorParallelNote(const Profile& profile, const TensorParallelLink& link) {
  const int ranks = profileTensorParallel(profile);
  if (ranks < 2) return "";
  const std::string degree = "tensor parallel " + std::to_string(ranks) + ": each layer is one rank's shard; ";
  if (link.bandwidth_bytes_per_s <= 0) {
    return degree + "its collectives are not priced (give --tp-bandwidth, e.g. 300GB/s, and --tp-latency)";
  }
  double total = 0.0;
  for (const LayerCost& layer : profile.layers) {
    const auto [forward, backward] = collectiveMs(layer, ranks, link);
    total += forward + backward;
  }
  // In decimal GB/s, as interconnects are quoted and --tp-bandwidth is written (300GB/s, not 279 GiB/s).
  char bandwidth[32];
  std::snprintf(bandwidth, sizeof bandwidth, "%.4g GB/s", link.bandwidth_bytes_per_s / 1e9);
  return degree + "its collectives priced at " + bandwidth + ", " + formatMs(link.latency_ms) +
         " ms latency: " + formatMs(total) + " ms per microbatch in all";
}

}  // namespace stagecut
