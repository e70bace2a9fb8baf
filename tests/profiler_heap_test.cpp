#include <catch2/catch.hpp>

#include <malloc.h>
#include <sys/resource.h>

#include <torch/torch.h>

#include "profiler/torch_runtime.h"

TEST_CASE("with freed memory retained, a large tensor comes from the heap and stays there", "[profiler][heap]") {
  stagecut::retainFreedMemory();
  CHECK(stagecut::torchRuntimeInfo().heap.find("glibc heap only") == 0);
  const std::int64_t floats = 48 << 20;  // 192 MiB: above glibc's largest mmap threshold (32 MiB)
  const std::size_t mapped_before = ::mallinfo2().hblkhd;
  {
    const torch::Tensor big = torch::ones({floats});
    // glibc's default would map this block by itself: the bytes in mapped blocks would grow by 192 MiB.
    CHECK(::mallinfo2().hblkhd < mapped_before + (16u << 20));
    CHECK(big.sum().item<double>() == static_cast<double>(floats));
  }
  // Freed, it is kept in the heap for the next allocation rather than returned to the kernel.
  CHECK(::mallinfo2().arena >= static_cast<std::size_t>(floats) * sizeof(float));
  CHECK(::mallinfo2().fordblks >= static_cast<std::size_t>(floats) * sizeof(float));
}

TEST_CASE("a heap grown ahead serves a large tensor without a page fault", "[profiler][heap]") {
  stagecut::retainFreedMemory();
  const auto minorFaults = [] {
    struct rusage usage {};
    ::getrusage(RUSAGE_SELF, &usage);
    return usage.ru_minflt;
  };
  const std::int64_t floats = 64 << 20;  // 256 MiB: more than any free block the tests before left
  stagecut::growRetainedHeap(static_cast<std::uint64_t>(floats) * sizeof(float) + (16u << 20));
  const long before = minorFaults();
  const torch::Tensor big = torch::ones({floats});
  const long faults = minorFaults() - before;
  // Fresh from the kernel, every one of its 65536 pages would fault on its first write.
  CHECK(faults < 1024);
  CHECK(big.sum().item<double>() == static_cast<double>(floats));
}
