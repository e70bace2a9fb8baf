#pragma once

#include <cstdint>
#include <memory>

namespace stagecut {

/// Counts the CPU tensor memory that this thread allocates and frees while it lives, through
/// c10's memory-reporting hook (the default CPU allocator reports every allocation to it), so
/// activation sizes are measured, not estimated from shapes. One counter per thread at a time.
class MemoryCounter {
 public:
  MemoryCounter();
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
