#pragma once

#include <cstdint>
#include <string>

namespace stagecut {

/// What LibTorch and its BLAS run with in this process: recorded in every profile, because
/// timings on a CPU swing several-fold with the thread counts.
struct TorchRuntimeInfo {
  std::string torch_version;  ///< e.g. "1.13.1"
  int intraop_threads = 0;    ///< LibTorch's intra-op pool
  int interop_threads = 0;    ///< LibTorch's inter-op pool
  int blas_threads = -1;      ///< OpenBLAS's own pool; -1 when the BLAS is not OpenBLAS
  std::string blas;           ///< "OpenBLAS <config>" or "unknown"
  std::string heap;           ///< how freed CPU memory is kept, see retainFreedMemory()
};

/// Reads the settings above from the running process.
TorchRuntimeInfo torchRuntimeInfo();

/// Pins LibTorch's intra-op pool and OpenBLAS's separate pool to `threads` (and the inter-op
/// pool to 1), so that the two pools do not oversubscribe the cores and timings are repeatable.
/// Call before the first LibTorch operation. Throws Error (input) when threads < 1.
void pinThreads(int threads);

/// Makes glibc keep freed memory in the process and serve every allocation from its heap, the
/// way a device's caching allocator keeps its blocks. Left alone, glibc maps each block over
/// 32 MiB (an embedding's weight gradient, the LM head's logits) fresh from the kernel and
/// returns it on free, so every use pays a page fault per 4 KiB: that doubles the embedding's
/// backward and triples the loss's on gpt2-small, and the kernel's share of it varies from run to
/// run. The process's resident memory then stays at its peak. Call before the first LibTorch
/// operation; later calls do nothing.
void retainFreedMemory();

/// Grows that heap by `bytes`, every page touched, and frees them back into it: the first pass
/// of a profile then allocates as the later ones do, where it would otherwise fault in the
/// heap's growth (the LM head's first backward took 2.6 times its next one). Does nothing
/// unless retainFreedMemory() took effect, or when the memory is not there.
void growRetainedHeap(std::uint64_t bytes);

}  // namespace stagecut
