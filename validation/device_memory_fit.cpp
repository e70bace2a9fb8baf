#include "validation/device_memory_fit.h"

#include <map>

#include "core/error.h"
#include "core/units.h"

namespace stagecut {

namespace {

std::string bytesText(double bytes) { return formatBytes(static_cast<std::uint64_t>(bytes > 0 ? bytes : 0)); }

}  // namespace

void requireRanksFitDevices(const std::vector<RankMemoryNeed>& ranks,
                            const std::function<std::uint64_t(const std::string& device)>& capacity) {
  std::map<std::string, std::vector<const RankMemoryNeed*>> by_device;
  for (const RankMemoryNeed& rank : ranks) by_device[rank.device].push_back(&rank);
  for (const auto& [device, on_device] : by_device) {
    const std::uint64_t offered = capacity(device);
    if (offered == 0) continue;
    double total = 0.0;
    const RankMemoryNeed* largest = on_device.front();
    for (const RankMemoryNeed* rank : on_device) {
      total += rank->peak_bytes;
      if (rank->peak_bytes > largest->peak_bytes) largest = rank;
    }
    if (total <= static_cast<double>(offered)) continue;
    const std::string where = device == "cpu" ? "this machine's" : device + "'s";
    const std::string stage = "stage " + std::to_string(largest->stage) + " (layers " +
                              std::to_string(largest->first_layer) + "-" + std::to_string(largest->last_layer) + ")";
    const std::string together =
        on_device.size() > 1 ? ", and the " + std::to_string(on_device.size()) + " ranks on " + device + " " +
                                   bytesText(total) + " together"
                             : "";
    throw Error("validate: " + stage + " would hold " + bytesText(largest->peak_bytes) +
                " at its predicted peak" + together + ", more than " + where + " " +
                bytesText(static_cast<double>(offered)) + (device == "cpu" ? " available" : "") +
                "; partition for more stages, fewer microbatches in flight or a smaller microbatch, or run where "
                "each stage has the memory");
  }
}

}  // namespace stagecut
