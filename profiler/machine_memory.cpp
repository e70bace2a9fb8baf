#include "profiler/machine_memory.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "core/error.h"
#include "core/units.h"

namespace stagecut {

std::uint64_t physicalMemoryBytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_size);
}

std::uint64_t availableMemoryBytes() {
  // Test hook: a machine with this much memory left (tests/profiler_degrees_test.cpp).
  if (const char* test = std::getenv("STAGECUT_TEST_AVAILABLE_MEMORY_BYTES")) return std::strtoull(test, nullptr, 10);
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  std::uint64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  return physicalMemoryBytes();
}

void requireFitsInMemory(double bytes, const std::string& what, const std::string& needed_as, const std::string& fix) {
  const std::uint64_t memory = physicalMemoryBytes();
  if (memory == 0 || bytes <= static_cast<double>(memory)) return;  // unknown memory: the allocation decides
  throw Error(what + ": " + needed_as + " would take " + formatBytes(static_cast<std::uint64_t>(std::min(bytes, 1e18))) +
              ", more than this machine's " + formatBytes(memory) + " of memory; " + fix);
}

}  // namespace stagecut
