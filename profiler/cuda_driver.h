#pragma once

// The CUDA driver API entry points that stagecut's GPU timers use, loaded at run time.
// Internal to profiler/: it includes <cuda.h>, so only the CUDA-only .cpp files include it.

#include <memory>
#include <string>

#include <cuda.h>

namespace stagecut {

/// The driver calls the CUDA timers make, resolved with dlopen("libcuda.so.1") and dlsym so that
/// stagecut never links libcuda and starts on machines without a driver. Every wrapper goes
/// through one check: a failing call throws Error (kRuntime) naming the driver function and the
/// driver's own message. The library stays loaded for the life of the process.
class CudaDriver {
 public:
  /// Loads the driver and runs cuInit(0). Throws Error (kRuntime) when libcuda.so.1 cannot be
  /// loaded (no NVIDIA driver), lacks a function, or cuInit fails (no device, driver too old).
  static std::shared_ptr<const CudaDriver> load();

  ~CudaDriver();
  CudaDriver(const CudaDriver&) = delete;
  CudaDriver& operator=(const CudaDriver&) = delete;

  /// Driver version as CUDA encodes it (1000 * major + 10 * minor, e.g. 13000).
  int driverVersion() const;
  int deviceCount() const;
  /// Device `ordinal`; throws when ordinal is out of range.
  CUdevice device(int ordinal) const;
  std::string deviceName(CUdevice device) const;
  /// Retains the device's primary context: the one the CUDA runtime, and so LibTorch, uses.
  CUcontext retainPrimaryContext(CUdevice device) const;
  /// Releases what retainPrimaryContext took. Never throws (for destructors).
  void releasePrimaryContextNoThrow(CUdevice device) const noexcept;
  CUcontext currentContext() const;
  void pushContext(CUcontext context) const;
  /// Pops the current context. Never throws (for destructors).
  void popContextNoThrow() const noexcept;
  /// Waits for all work queued in the current context.
  void synchronizeContext() const;
  CUevent createEvent(unsigned int flags) const;
  /// Destroys an event. Never throws (for destructors).
  void destroyEventNoThrow(CUevent event) const noexcept;
  void recordEvent(CUevent event, CUstream stream) const;
  void synchronizeEvent(CUevent event) const;
  /// Milliseconds between two recorded, completed events (resolution about 0.5 us).
  float elapsedMs(CUevent start, CUevent end) const;

  /// The audited place for driver errors: throws Error (kRuntime) "CUDA driver call <call>
  /// failed: <CUDA_ERROR_NAME>: <driver's message>" unless status is CUDA_SUCCESS.
  void check(CUresult status, const char* call) const;

  struct Functions;  ///< the resolved entry points (defined in cuda_driver.cpp)

 private:
  CudaDriver();
  std::unique_ptr<Functions> functions_;
};

/// Makes a context current for one scope when it is not current already (pushes it and pops it
/// at the end), so the timers work whichever device LibTorch left current on this thread.
class ScopedCudaContext {
 public:
  ScopedCudaContext(const CudaDriver& driver, CUcontext context);
  ~ScopedCudaContext();
  ScopedCudaContext(const ScopedCudaContext&) = delete;
  ScopedCudaContext& operator=(const ScopedCudaContext&) = delete;

 private:
  const CudaDriver& driver_;
  bool pushed_ = false;
};

}  // namespace stagecut
