#include "profiler/torch_runtime.h"

#include <dlfcn.h>
#include <malloc.h>

#include <cstdint>
#include <cstdlib>

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <torch/version.h>

#include "core/error.h"

namespace stagecut {

namespace {

// OpenBLAS is reached through Debian's libblas.so.3 alternative, so its symbols may or may not
// be there; look them up at run time instead of linking against one BLAS.
using SetThreadsFn = void (*)(int);
using GetThreadsFn = int (*)();
using GetConfigFn = char* (*)();

bool freed_memory_retained = false;

template <typename Fn>
Fn openblasSymbol(const char* name) {
  return reinterpret_cast<Fn>(::dlsym(RTLD_DEFAULT, name));
}

}  // namespace

TorchRuntimeInfo torchRuntimeInfo() {
  TorchRuntimeInfo info;
  info.torch_version = TORCH_VERSION;
  info.intraop_threads = at::get_num_threads();
  info.interop_threads = at::get_num_interop_threads();
  if (const auto get_threads = openblasSymbol<GetThreadsFn>("openblas_get_num_threads")) {
    info.blas_threads = get_threads();
    const auto get_config = openblasSymbol<GetConfigFn>("openblas_get_config");
    info.blas = std::string("OpenBLAS ") + (get_config ? get_config() : "");
  } else if (at::hasMKL()) {
    // MKL linked into LibTorch (PyTorch's own builds): at::set_num_threads sets its threads too.
    info.blas = "MKL (in LibTorch)";
    info.blas_threads = at::get_num_threads();
  } else {
    info.blas = "unknown";
  }
  info.heap = freed_memory_retained ? "glibc heap only, no unmapping or trimming of freed memory"
                                    : "glibc default (large blocks mapped and unmapped per use)";
  return info;
}

void pinThreads(int threads) {
  if (threads < 1) {
    throw Error("--threads " + std::to_string(threads) + ": use 1 or more threads");
  }
  at::set_num_threads(threads);
  // The inter-op pool can only be set once per process, before any inter-op work; a second
  // call throws in LibTorch 1.13, and a profile only needs it set the first time.
  static bool interop_set = false;
  if (!interop_set) {
    at::set_num_interop_threads(1);
    interop_set = true;
  }
  if (const auto set_threads = openblasSymbol<SetThreadsFn>("openblas_set_num_threads")) {
    set_threads(threads);
  }
}

void retainFreedMemory() {
  // For bench/ A/B runs against glibc's default heap; not a user setting.
  if (freed_memory_retained || std::getenv("STAGECUT_BENCH_DEFAULT_HEAP") != nullptr) return;
  // M_MMAP_THRESHOLD cannot go above 32 MiB, so mapping is turned off as a whole; and trimming
  // too (-1): with any finite threshold (it was 2 GiB) a model larger than that frees its top
  // after each pass and faults it back in during the next, at about 7 us a page on a VM.
  const bool heap_only = ::mallopt(M_MMAP_MAX, 0) == 1;
  const bool no_trim = ::mallopt(M_TRIM_THRESHOLD, -1) == 1;
  freed_memory_retained = heap_only && no_trim;
}

void growRetainedHeap(std::uint64_t bytes) {
  if (!freed_memory_retained || bytes == 0) return;
  void* block = std::malloc(static_cast<std::size_t>(bytes));
  if (block == nullptr) return;
  // Volatile: a plain memset before free is a dead store the compiler may drop.
  volatile char* pages = static_cast<volatile char*>(block);
  for (std::uint64_t at = 0; at < bytes; at += 4096) pages[at] = 0;
  std::free(block);
}

}  // namespace stagecut
