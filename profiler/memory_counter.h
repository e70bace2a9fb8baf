#pragma once

#include <cstdint>
#include <memory>

#include <c10/core/DeviceType.h>

namespace stagecut {

/// Counts the tensor memory of one device type that this thread allocates and frees while it
/// lives, through c10's memory-reporting hook: the default CPU allocator reports every
/// allocation to it, and so does CUDA's caching allocator (what a tensor takes from it, not the
/// blocks it reserves). Activation sizes are measured, not estimated from shapes. One counter
/// per thread at a time.
class MemoryCounter {
 public:
  /// Counts `device` memory (the CPU's, or CUDA's on a GPU run).
  explicit MemoryCounter(c10::DeviceType device = c10::DeviceType::CPU);
  ~MemoryCounter();
  MemoryCounter(const MemoryCounter&) = delete;
  MemoryCounter& operator=(const MemoryCounter&) = delete;

  /// Bytes allocated minus bytes freed since construction (negative when older tensors died).
  std::int64_t liveBytes() const;
  /// Highest liveBytes() seen since construction or the last resetPeak().
  std::int64_t peakBytes() const;
  void resetPeak();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace stagecut
