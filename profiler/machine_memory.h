#pragma once

#include <cstdint>
#include <string>

namespace stagecut {

/// This machine's physical memory in bytes; 0 when the system does not say.
std::uint64_t physicalMemoryBytes();

/// Memory a new allocation can take without swapping (MemAvailable); physicalMemoryBytes where
/// the system does not say.
std::uint64_t availableMemoryBytes();

/// Refuses, before anything is allocated, a request whose `bytes` alone exceed the machine's
/// memory: "<what>: <needed as> would take 36 PiB, more than this machine's 23.5 GiB of memory;
/// <fix>". An allocation that size would otherwise fail deep inside LibTorch, or be granted and
/// let the system kill the process when touched.
void requireFitsInMemory(double bytes, const std::string& what, const std::string& needed_as, const std::string& fix);

}  // namespace stagecut
