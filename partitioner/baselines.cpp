#include "partitioner/baselines.h"

#include <algorithm>
#include <limits>

namespace stagecut {

std::vector<int> uniformSplit(int layers, int stages) {
  std::vector<int> counts(stages, layers / stages);
  for (int s = 0; s < layers % stages; ++s) ++counts[s];
  return counts;
}

std::vector<int> boundaryList(const std::vector<int>& layers_per_stage) {
  std::vector<int> parts{0};
  for (int count : layers_per_stage) parts.push_back(parts.back() + count);
  return parts;
}

std::vector<int> deepspeedParamsSplit(const std::vector<std::uint64_t>& params_per_layer, int stages) {
  const int n = static_cast<int>(params_per_layer.size());
  const int m = stages;
  if (n <= m) return uniformSplit(n, m);
  constexpr double kInf = std::numeric_limits<double>::infinity();
  // The tables of DeepSpeed's runtime/utils.py, with numpy's infinities: an unset dp_min stays
  // infinite, and `>=` lets later cuts win ties, both of which decide DeepSpeed's answer.
  const auto index = [m](int i, int j) { return static_cast<std::size_t>(i) * (m + 1) + j; };
  std::vector<double> dp_max((n + 1) * (m + 1), kInf), dp_min(dp_max), dp_cost(dp_max);
  std::vector<int> position((n + 1) * (m + 1), 0);
  std::vector<double> prefix(n + 1, 0.0);
  for (int i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + static_cast<double>(params_per_layer[i]);
  dp_max[index(0, 0)] = 0;
  dp_cost[index(0, 0)] = 0;
  for (int i = 1; i <= n; ++i) {
    for (int j = 1; j <= std::min(i, m); ++j) {
      for (int k = 0; k < i; ++k) {
        const double part = prefix[i] - prefix[k];
        const double max_sum = std::max(dp_max[index(k, j - 1)], part);
        const double min_sum = std::min(dp_min[index(k, j - 1)], part);
        const double cost = max_sum - min_sum;
        if (dp_cost[index(i, j)] >= cost) {
          dp_cost[index(i, j)] = cost;
          dp_max[index(i, j)] = max_sum;
          dp_min[index(i, j)] = min_sum;
          position[index(i, j)] = k;
        }
      }
    }
  }
  std::vector<int> parts{n};
  for (int j = m; j >= 1; --j) parts.push_back(position[index(parts.back(), j)]);
  std::reverse(parts.begin(), parts.end());
  std::vector<int> counts;
  for (int s = 0; s < m; ++s) counts.push_back(parts[s + 1] - parts[s]);
  return counts;
}

}  // namespace stagecut
