#pragma once

// Built only when CMake found CUDA (STAGECUT_HAVE_CUDA). Free of CUDA and CUPTI headers: the
// timer talks to CUPTI through CuptiActivityApi, so tests drive it with fake kernel records.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiler/cupti_activity_api.h"
#include "profiler/region_timer.h"

namespace stagecut {

/// The kernels of one region: the sum of their durations and how many there were.
struct KernelSum {
  double kernel_ms = 0.0;
  int kernels = 0;
};

/// Sums the kernels that started inside [start_ns, end_ns] (both in CUPTI's timestamp base),
/// each with its whole duration. A kernel that started before the window belongs to an earlier
/// region and is left out; records with end < start (never seen, but not trusted) count as 0.
KernelSum sumKernelsInside(const std::vector<KernelActivity>& kernels, std::uint64_t start_ns, std::uint64_t end_ns);

/// The CUPTI timer's figures for one layer, to see host and launch overhead next to GPU work:
/// medians of the forward region's fence (event) time and kernel sum, and the share of the
/// layer's backward regions' event time that kernels filled.
struct LayerKernelShare {
  int layer = 0;
  int forward_samples = 0;
  double forward_event_ms = 0.0;   ///< median
  double forward_kernel_ms = 0.0;  ///< median
  double backward_event_ms_total = 0.0;
  double backward_kernel_ms_total = 0.0;
  /// backward_kernel_ms_total / backward_event_ms_total; 0 when no backward was timed.
  double backwardKernelShare() const;
};

/// `--timer cupti`: times a region as the sum of the durations of the GPU kernels that ran in it,
/// as CUPTI's activity API records them (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL). The gap between
/// this and the CUDA-event time of the same region is time the GPU sat idle: kernel launch
/// latency and host work (Python-free here, but LibTorch dispatch and autograd bookkeeping).
///
/// Each region is bracketed by a `fence` timer (the CudaEventTimer of the same device and
/// stream): its stopMs() waits until the region's work is done, so every kernel record of the
/// region is complete when stopMs() flushes CUPTI's buffers. The fence's time is kept too
/// (lastEventMs(), layer breakdown) so one profile shows both.
class CuptiTimer : public RegionTimer {
 public:
  /// Enables kernel activity recording on `api`. Throws what the api throws (Error, kRuntime).
  CuptiTimer(std::unique_ptr<CuptiActivityApi> api, std::unique_ptr<RegionTimer> fence);
  ~CuptiTimer() override;
  CuptiTimer(const CuptiTimer&) = delete;
  CuptiTimer& operator=(const CuptiTimer&) = delete;

  /// Discards the records of earlier work, stamps the window's start, starts the fence.
  void start() override;
  /// Stops the fence (waiting for the region's work), flushes CUPTI and returns the kernel
  /// milliseconds that started in the window. Records that started after the window are kept
  /// for the next region.
  double stopMs() override;
  std::string name() const override { return "cupti"; }

  /// The fence's (CUDA-event) milliseconds for the region last stopped.
  double lastEventMs() const { return last_event_ms_; }
  /// Kernels counted in the region last stopped.
  int lastKernelCount() const { return last_kernels_; }
  /// Records CUPTI dropped so far for want of a buffer; any drop makes kernel sums too small.
  std::uint64_t droppedRecords() const { return dropped_; }

  /// Attribution of regions to layers, for the breakdown. Call when layer `layer`'s forward
  /// runs: a region in which exactly one layer's forward ran is that layer's forward; a region
  /// in which none ran is a backward of the layer whose forward region came last; a region in
  /// which several ran (the whole model) and the backwards after it are left out.
  void noteLayerForward(int layer);
  /// While true (warm-up rounds), regions are timed but left out of the breakdown.
  void setWarmup(bool warmup) { warmup_ = warmup; }
  /// Per-layer figures for layers 0..layers-1 (a layer never seen has zero samples).
  std::vector<LayerKernelShare> layerBreakdown(int layers) const;

 private:
  struct LayerRegions {
    std::vector<double> forward_event_ms, forward_kernel_ms;
    double backward_event_ms = 0.0, backward_kernel_ms = 0.0;
  };
  void attribute(double event_ms, double kernel_ms);

  std::unique_ptr<CuptiActivityApi> api_;
  std::unique_ptr<RegionTimer> fence_;
  std::uint64_t window_start_ns_ = 0;
  std::vector<KernelActivity> carried_;  ///< records that started after the last window
  double last_event_ms_ = 0.0;
  int last_kernels_ = 0;
  std::uint64_t dropped_ = 0;

  bool in_region_ = false;
  bool warmup_ = false;
  int forwards_in_region_ = 0;
  int last_forward_layer_ = -1;
  int backward_owner_ = -1;  ///< layer whose backward regions follow; -1: none or the whole model
  std::vector<LayerRegions> layers_;
};

/// The breakdown as the profile's run.extra["cupti"]["layers"] holds it: per layer its name,
/// forward_event_ms, forward_kernel_ms, backward_kernel_share.
nlohmann::json layerBreakdownJson(const std::vector<LayerKernelShare>& breakdown,
                                  const std::vector<std::string>& layer_names);

}  // namespace stagecut
