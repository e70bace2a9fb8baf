#pragma once

// Built only when CMake found CUDA (STAGECUT_HAVE_CUDA). Free of CUPTI headers: the real
// implementation (cupti_activity_api.cpp) is the only file that includes <cupti.h>.

#include <cstdint>
#include <memory>
#include <vector>

namespace stagecut {

/// One kernel execution that CUPTI recorded. Times are in CUPTI's timestamp base (nanoseconds,
/// the base of cuptiGetTimestamp), so they compare with CuptiActivityApi::timestampNs().
struct KernelActivity {
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  std::uint32_t device_id = 0;
  std::uint32_t stream_id = 0;
};

/// What one flush hands over: the kernel records completed since the previous flush, in the
/// order CUPTI delivered them (buffer by buffer, not sorted), and how many records CUPTI dropped
/// in that time because it had no buffer for them.
struct KernelActivityBatch {
  std::vector<KernelActivity> kernels;
  std::uint64_t dropped = 0;
};

/// The CUPTI activity calls the CUPTI timer makes, behind an interface (kineto's
/// CuptiActivityApi idea) so that the timer's logic is tested with a fake on machines without
/// a GPU. The real one is made by loadCuptiActivityApi().
class CuptiActivityApi {
 public:
  virtual ~CuptiActivityApi() = default;
  /// Starts recording kernel executions (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL). Throws Error
  /// (kRuntime) when CUPTI refuses (no device, driver too old for this CUPTI, another profiler
  /// such as Nsight or kineto holding CUPTI).
  virtual void enableKernels() = 0;
  /// Stops recording. Never throws (for destructors).
  virtual void disableKernelsNoThrow() noexcept = 0;
  /// Now, in the kernel records' time base, nanoseconds.
  virtual std::uint64_t timestampNs() = 0;
  /// Makes CUPTI hand over every buffer it holds, even partly filled ones (a forced
  /// cuptiActivityFlushAll), and returns the kernel records in them.
  virtual KernelActivityBatch flush() = 0;
};

/// Loads CUPTI with dlopen: "libcupti.so" through the loader's search path, then
/// $CUDA_HOME/extras/CUPTI/lib64, $CUDA_HOME/lib64, /usr/local/cuda/extras/CUPTI/lib64 and
/// /usr/local/cuda/lib64. Only one real CUPTI activity API may exist at a time in a process,
/// because CUPTI's buffer callbacks are process-wide. Throws Error (kRuntime) naming the places
/// tried when CUPTI is not found, or when one already exists.
std::unique_ptr<CuptiActivityApi> loadCuptiActivityApi();

}  // namespace stagecut
