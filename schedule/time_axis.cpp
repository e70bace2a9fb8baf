#include "schedule/time_axis.h"

#include <cmath>
#include <cstdio>
#include <initializer_list>

namespace stagecut {

double niceStep(double at_least) {
  if (!(at_least > 0) || !std::isfinite(at_least)) return 1.0;
  const double power = std::pow(10.0, std::floor(std::log10(at_least)));
  for (double mantissa : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    // The tolerance keeps 0.3 / 0.1 (= 2.9999...) from rounding up a whole step.
    if (mantissa * power >= at_least * (1 - 1e-9)) return mantissa * power;
  }
  return 10 * power;
}

const char* formatTick(double t, double step, char* buffer, int size) {
  int decimals = 0;
  while (decimals < 6 && std::fabs(step * std::pow(10.0, decimals) -
                                   std::round(step * std::pow(10.0, decimals))) > 1e-6) {
    ++decimals;
  }
  std::snprintf(buffer, static_cast<std::size_t>(size), "%.*f", decimals, t);
  return buffer;
}

}  // namespace stagecut
