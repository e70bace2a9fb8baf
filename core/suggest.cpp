#include "core/suggest.h"

#include <algorithm>

namespace stagecut {

namespace {

std::size_t editDistance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> previous(b.size() + 1), current(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, substitution});
    }
    std::swap(previous, current);
  }
  return previous[b.size()];
}

}  // namespace

std::string closestName(const std::string& typed, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_distance = 0;
  for (const auto& candidate : candidates) {
    const std::size_t distance = editDistance(typed, candidate);
    const std::size_t allowed = std::max<std::size_t>(1, std::max(typed.size(), candidate.size()) / 3);
    if (distance <= allowed && (best.empty() || distance < best_distance)) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

std::string unknownNameHint(const std::string& typed, const std::vector<std::string>& candidates) {
  const std::string closest = closestName(typed, candidates);
  if (!closest.empty()) return ", did you mean '" + closest + "'?";
  std::string list;
  for (const auto& candidate : candidates) list += (list.empty() ? "" : ", ") + candidate;
  return "; use one of: " + list;
}

}  // namespace stagecut
