#include "cli/identical_layers_text.h"

#include <map>

#include "core/units.h"

namespace stagecut {

std::vector<std::string> identicalLayersLines(const Profile& profile) {
  std::map<std::vector<int>, int> copies;
  for (const auto& layer : profile.layers) {
    if (layer.times_from) ++copies[*layer.times_from];
  }
  std::vector<std::string> lines;
  for (const auto& [sample, copied] : copies) {
    double fastest = 0, slowest = 0;
    std::string timed;
    for (int from : sample) {
      const LayerCost& layer = profile.layers.at(static_cast<std::size_t>(from));
      const double ms = layer.forward_ms.median + layer.backward_ms.median;
      fastest = timed.empty() ? ms : std::min(fastest, ms);
      slowest = std::max(slowest, ms);
      timed += (timed.empty() ? "" : ", ") + std::to_string(from);
    }
    const std::string kind = profile.layers.at(static_cast<std::size_t>(sample.front())).kind;
    lines.push_back(std::to_string(copied + static_cast<int>(sample.size())) + " " + (kind.empty() ? "identical" : kind) +
                    " layers: timed " + timed + " (" + formatPercent(fastest > 0 ? slowest / fastest - 1 : 0.0) +
                    " apart), the other " + std::to_string(copied) +
                    " take their samples (marked =; --time-every-layer times all)");
  }
  return lines;
}

std::string layerNameCell(const LayerCost& layer) { return layer.times_from ? layer.name + " =" : layer.name; }

}  // namespace stagecut
