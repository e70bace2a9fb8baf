#pragma once

// Built only when CMake found CUDA (STAGECUT_HAVE_CUDA). Free of CUDA headers, so that tests
// and profile_run.cpp include it without the toolkit's include path.

#include <memory>
#include <string>

#include "profiler/region_timer.h"

namespace stagecut {

/// Times a region on the GPU: records one CUDA event at start() and one at stopMs() on a stream
/// of device `device_ordinal`, waits for the end event, and returns the milliseconds between the
/// two (the GPU's time for the region's work, launch gaps included; resolution about 0.5 us).
/// Uses the CUDA driver API, loaded at run time (see CudaDriver), in the device's primary
/// context, which is the one LibTorch's CUDA runtime launches its kernels in.
class CudaEventTimer : public RegionTimer {
 public:
  /// `stream` is a CUstream passed as void*; nullptr is the legacy default stream, which is
  /// LibTorch's current stream unless a stream guard is set. Throws Error (kRuntime) naming the
  /// driver call and its message when there is no driver, no such device, or event creation fails.
  explicit CudaEventTimer(int device_ordinal, void* stream = nullptr);
  ~CudaEventTimer() override;
  CudaEventTimer(const CudaEventTimer&) = delete;
  CudaEventTimer& operator=(const CudaEventTimer&) = delete;

  void start() override;
  /// Records the end event, waits for it, returns the region's milliseconds. Throws Error
  /// (kRuntime) on a driver failure (e.g. a kernel of the region faulted).
  double stopMs() override;
  std::string name() const override { return "cuda-events"; }

  /// Waits until all work queued in the device's context so far has finished.
  void synchronizeDevice();
  /// The device's name as the driver reports it (e.g. "NVIDIA H100 80GB HBM3").
  std::string deviceName() const;
  /// The driver's CUDA version, 1000 * major + 10 * minor.
  int driverVersion() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace stagecut
