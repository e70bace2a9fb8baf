#include "core/sample_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

namespace stagecut {

TimeStatsMs summarizeSamples(std::vector<double> samples_ms) {
  TimeStatsMs stats;
  if (samples_ms.empty()) return stats;
  std::sort(samples_ms.begin(), samples_ms.end());
  const std::size_t n = samples_ms.size();
  stats.median = n % 2 ? samples_ms[n / 2] : 0.5 * (samples_ms[n / 2 - 1] + samples_ms[n / 2]);
  stats.min = samples_ms.front();
  stats.max = samples_ms.back();
  const double mean = std::accumulate(samples_ms.begin(), samples_ms.end(), 0.0) / n;
  if (n > 1 && mean > 0) {
    double squares = 0;
    for (double sample : samples_ms) squares += (sample - mean) * (sample - mean);
    stats.cv = std::sqrt(squares / (n - 1)) / mean;
  }
  return stats;
}

double medianOf(std::vector<double> values) { return summarizeSamples(std::move(values)).median; }

}  // namespace stagecut
