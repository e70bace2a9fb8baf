#pragma once

// What differs between the LibTorch versions stagecut builds against (Debian's 1.13 and the 2.x
// that PyTorch publishes), in one place: code elsewhere uses these names and no version test.

#include <cstddef>
#include <cstdint>

#include <torch/version.h>

#define STAGECUT_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace stagecut::torch_compat {

/// The type of the allocator totals c10::MemoryReportingInfoBase::reportMemoryUsage receives:
/// int64_t in 1.13, size_t since 2.0.
#if STAGECUT_TORCH_AT_LEAST(2, 0)
using ReportedTotal = std::size_t;
#else
using ReportedTotal = std::int64_t;
#endif

}  // namespace stagecut::torch_compat
