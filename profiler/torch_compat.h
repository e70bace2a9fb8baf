#pragma once

// What differs between the LibTorch versions stagecut builds against (Debian's 1.13 and the 2.x
// that PyTorch publishes), in one place: code elsewhere uses these names and no version test.

#include <cstddef>
#include <cstdint>

#include <torch/version.h>

namespace c10d {
class Backend;
class ProcessGroup;
}  // namespace c10d

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

/// The base of c10d's process groups that send and receive (ProcessGroupGloo, ProcessGroupNCCL):
/// c10d::Backend since 2.0, c10d::ProcessGroup before. Declared here; whoever holds one includes
/// the group's own header.
#if STAGECUT_TORCH_AT_LEAST(2, 0)
using C10dBackend = c10d::Backend;
#else
using C10dBackend = c10d::ProcessGroup;
#endif

/// Whether this LibTorch can run NCCL's point-to-point calls: built with c10d's NCCL group and
/// NCCL's header at hand (the CUDA wheels; never Debian's CPU build).
#if defined(USE_C10D_NCCL) && __has_include(<nccl.h>)
#define STAGECUT_HAVE_NCCL 1
#else
#define STAGECUT_HAVE_NCCL 0
#endif

}  // namespace stagecut::torch_compat
