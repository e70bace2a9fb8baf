#include "profiler/cupti_timer.h"

#include "core/error.h"
#include "core/sample_stats.h"

namespace stagecut {

KernelSum sumKernelsInside(const std::vector<KernelActivity>& kernels, std::uint64_t start_ns, std::uint64_t end_ns) {
  KernelSum sum;
  std::uint64_t total_ns = 0;
  for (const auto& kernel : kernels) {
    if (kernel.start_ns < start_ns || kernel.start_ns > end_ns) continue;
    ++sum.kernels;
    if (kernel.end_ns > kernel.start_ns) total_ns += kernel.end_ns - kernel.start_ns;
  }
  sum.kernel_ms = static_cast<double>(total_ns) / 1e6;
  return sum;
}

double LayerKernelShare::backwardKernelShare() const {
  return backward_event_ms_total > 0 ? backward_kernel_ms_total / backward_event_ms_total : 0.0;
}

CuptiTimer::CuptiTimer(std::unique_ptr<CuptiActivityApi> api, std::unique_ptr<RegionTimer> fence)
    : api_(std::move(api)), fence_(std::move(fence)) {
  if (!api_ || !fence_) throw Error("CuptiTimer needs a CUPTI activity API and a fence timer", ErrorKind::kRuntime);
  api_->enableKernels();
}

CuptiTimer::~CuptiTimer() { api_->disableKernelsNoThrow(); }

void CuptiTimer::start() {
  // Records flushed here are of work before this region (between regions, or the previous
  // region's stragglers on other streams): dropped, except those that start from now on.
  KernelActivityBatch earlier = api_->flush();
  dropped_ += earlier.dropped;
  window_start_ns_ = api_->timestampNs();
  std::vector<KernelActivity> kept;
  for (const auto* list : {&carried_, &earlier.kernels}) {
    for (const auto& kernel : *list) {
      if (kernel.start_ns >= window_start_ns_) kept.push_back(kernel);
    }
  }
  carried_ = std::move(kept);
  forwards_in_region_ = 0;
  in_region_ = true;
  fence_->start();
}

double CuptiTimer::stopMs() {
  if (!in_region_) throw Error("CuptiTimer::stopMs called without start()", ErrorKind::kRuntime);
  in_region_ = false;
  last_event_ms_ = fence_->stopMs();
  const std::uint64_t window_end_ns = api_->timestampNs();
  KernelActivityBatch batch = api_->flush();
  dropped_ += batch.dropped;
  std::vector<KernelActivity> kernels = std::move(carried_);
  carried_.clear();
  kernels.insert(kernels.end(), batch.kernels.begin(), batch.kernels.end());
  const KernelSum sum = sumKernelsInside(kernels, window_start_ns_, window_end_ns);
  for (const auto& kernel : kernels) {
    if (kernel.start_ns > window_end_ns) carried_.push_back(kernel);
  }
  last_kernels_ = sum.kernels;
  attribute(last_event_ms_, sum.kernel_ms);
  return sum.kernel_ms;
}

void CuptiTimer::noteLayerForward(int layer) {
  if (!in_region_ || layer < 0) return;
  ++forwards_in_region_;
  last_forward_layer_ = layer;
}

void CuptiTimer::attribute(double event_ms, double kernel_ms) {
  if (forwards_in_region_ > 1) {
    backward_owner_ = -1;
    return;
  }
  if (forwards_in_region_ == 1) {
    backward_owner_ = last_forward_layer_;
    if (warmup_) return;
    if (static_cast<int>(layers_.size()) <= backward_owner_) layers_.resize(backward_owner_ + 1);
    layers_[backward_owner_].forward_event_ms.push_back(event_ms);
    layers_[backward_owner_].forward_kernel_ms.push_back(kernel_ms);
    return;
  }
  if (backward_owner_ < 0 || warmup_) return;
  if (static_cast<int>(layers_.size()) <= backward_owner_) layers_.resize(backward_owner_ + 1);
  layers_[backward_owner_].backward_event_ms += event_ms;
  layers_[backward_owner_].backward_kernel_ms += kernel_ms;
}

std::vector<LayerKernelShare> CuptiTimer::layerBreakdown(int layers) const {
  std::vector<LayerKernelShare> breakdown(layers > 0 ? layers : 0);
  for (int i = 0; i < static_cast<int>(breakdown.size()); ++i) {
    LayerKernelShare& share = breakdown[i];
    share.layer = i;
    if (i >= static_cast<int>(layers_.size())) continue;
    const LayerRegions& regions = layers_[i];
    share.forward_samples = static_cast<int>(regions.forward_event_ms.size());
    share.forward_event_ms = summarizeSamples(regions.forward_event_ms).median;
    share.forward_kernel_ms = summarizeSamples(regions.forward_kernel_ms).median;
    share.backward_event_ms_total = regions.backward_event_ms;
    share.backward_kernel_ms_total = regions.backward_kernel_ms;
  }
  return breakdown;
}

nlohmann::json layerBreakdownJson(const std::vector<LayerKernelShare>& breakdown,
                                  const std::vector<std::string>& layer_names) {
  nlohmann::json layers = nlohmann::json::array();
  for (const auto& share : breakdown) {
    const std::string name =
        share.layer < static_cast<int>(layer_names.size()) ? layer_names[share.layer] : std::to_string(share.layer);
    layers.push_back({{"name", name},
                      {"forward_event_ms", share.forward_event_ms},
                      {"forward_kernel_ms", share.forward_kernel_ms},
                      {"backward_kernel_share", share.backwardKernelShare()}});
  }
  return layers;
}

}  // namespace stagecut
