#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace stagecut {

/// What one rank of a validate run will hold at its predicted peak, and where.
struct RankMemoryNeed {
  std::string device;  ///< "cpu" or "cuda:K", as RankDevices places it
  int stage = 0;
  int first_layer = 0;
  int last_layer = 0;
  double peak_bytes = 0.0;  ///< the memory timeline's peak of the stage
};

/// Refuses, before any rank starts, a run whose ranks on one device would hold more at their
/// predicted peaks than the device has: Error (input), one line naming the largest stage there,
/// the device, both figures and the fix. `capacity(device)` is the memory a device offers (the
/// CPU's available memory, a GPU's total); 0: unknown, not checked.
void requireRanksFitDevices(const std::vector<RankMemoryNeed>& ranks,
                            const std::function<std::uint64_t(const std::string& device)>& capacity);

}  // namespace stagecut
