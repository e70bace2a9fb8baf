#pragma once

namespace stagecut {

/// A fixed piece of work, timed by `profile` (recorded in the profile as the device's
/// "reference_kernel_ms") and by every rank of `validate` before and after its steps, so that a
/// run can tell a slower or busier machine from a slower split: 8 float32 matrix products of
/// 256 x 256 on the CPU with the process's threads, the fastest of 15 timings, ms. About 0.05 s on this project's CPU.
double timeReferenceKernelMs();

}  // namespace stagecut
