#include "profiler/memory_counter.h"

#include <atomic>

#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>

#include "profiler/torch_compat.h"

namespace stagecut {

namespace {

class CountingReporter : public c10::MemoryReportingInfoBase {
 public:
  explicit CountingReporter(c10::DeviceType device) : device_(device) {}
  void reportMemoryUsage(void*, int64_t alloc_size, torch_compat::ReportedTotal, torch_compat::ReportedTotal,
                         c10::Device device) override {
    if (device.type() != device_) return;
    const int64_t live = live_.fetch_add(alloc_size) + alloc_size;
    int64_t peak = peak_.load();
    while (live > peak && !peak_.compare_exchange_weak(peak, live)) {
    }
  }
  bool memoryProfilingEnabled() const override { return true; }

  c10::DeviceType device_;
  std::atomic<int64_t> live_{0};
  std::atomic<int64_t> peak_{0};
};

}  // namespace

struct MemoryCounter::Impl {
  explicit Impl(c10::DeviceType device) : reporter(std::make_shared<CountingReporter>(device)) {}
  std::shared_ptr<CountingReporter> reporter;
  // Installing the reporter as this thread's profiler state turns on c10's CPU reporting;
  // LibTorch's thread pools carry the thread-local state into their workers.
  c10::DebugInfoGuard guard{c10::DebugInfoKind::PROFILER_STATE, reporter};
};

MemoryCounter::MemoryCounter(c10::DeviceType device) : impl_(std::make_unique<Impl>(device)) {}
MemoryCounter::~MemoryCounter() = default;

std::int64_t MemoryCounter::liveBytes() const { return impl_->reporter->live_.load(); }
std::int64_t MemoryCounter::peakBytes() const { return impl_->reporter->peak_.load(); }
void MemoryCounter::resetPeak() { impl_->reporter->peak_.store(impl_->reporter->live_.load()); }

}  // namespace stagecut
