#include "report/memory_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/units.h"
#include "report/html_text.h"
#include "report/layer_chart.h"
#include "schedule/svg_gantt.h"
#include "schedule/time_axis.h"

namespace stagecut {

namespace {

using report::inlineSvgChart;

constexpr double kWidth = kChartWidthPx;
constexpr double kLeft = 90;
constexpr double kRight = 24;
constexpr double kTop = 40;
constexpr double kPlotHeight = 240;
const char* const kCapColour = "#d62728";

struct ByteUnit {
  double bytes;
  const char* name;
};

ByteUnit unitFor(double largest) {
  static const ByteUnit kUnits[] = {{1099511627776.0, "TiB"}, {1073741824.0, "GiB"},
                                    {1048576.0, "MiB"}, {1024.0, "KiB"}};
  for (const ByteUnit& unit : kUnits) {
    if (largest >= unit.bytes) return unit;
  }
  return {1.0, "B"};
}

}  // namespace

std::uint64_t stageCapBytes(const std::vector<std::uint64_t>& caps, std::size_t stage) {
  if (caps.empty()) return 0;
  if (caps.size() == 1) return caps.front();
  return stage < caps.size() ? caps[stage] : 0;
}

std::string renderMemoryChart(const std::vector<Partition>& splits,
                              const std::vector<std::uint64_t>& cap_bytes) {
  std::size_t stages = 0;
  double largest = 0;
  for (const Partition& split : splits) {
    stages = std::max(stages, split.stages.size());
    for (const StageCost& stage : split.stages) largest = std::max(largest, static_cast<double>(stage.memory_bytes));
  }
  for (std::size_t s = 0; s < stages; ++s) largest = std::max(largest, static_cast<double>(stageCapBytes(cap_bytes, s)));
  const ByteUnit unit = unitFor(largest);
  const double tick = niceStep(largest / unit.bytes / 5);
  const double axis_top = std::max(tick, std::ceil(largest / unit.bytes / tick * 1.04) * tick);
  const double scale = kPlotHeight / (axis_top * unit.bytes);
  const double base = kTop + kPlotHeight;

  SvgBuilder svg;
  // Legend: one swatch per split, then the cap.
  double x = kLeft;
  for (const Partition& split : splits) {
    svg.rect(x, 10, 14, 14, splitColour(split.method), " rx=\"2\"");
    svg.text(x + 20, 22, escapeMarkup(split.method), "font-size=\"13\" fill=\"#333\"");
    x += 20 + 8.0 * static_cast<double>(split.method.size()) + 24;
  }
  if (!cap_bytes.empty()) {
    svg.line(x, 17, x + 22, 17, kCapColour, 2.5, " stroke-dasharray=\"6 3\"");
    svg.text(x + 28, 22, "memory cap", "font-size=\"13\" fill=\"#333\"");
  }

  char buffer[32];
  for (double t = 0; t <= axis_top + 1e-9; t += tick) {
    const double y = base - t * unit.bytes * scale;
    svg.line(kLeft, y, kWidth - kRight, y, t == 0 ? "#999" : "#e6e6e6");
    svg.text(kLeft - 8, y + 4, std::string(formatTick(t, tick, buffer, sizeof buffer)) + " " + unit.name,
             "font-size=\"12\" fill=\"#666\" text-anchor=\"end\"");
  }

  const double group_w = (kWidth - kLeft - kRight) / std::max<double>(1, static_cast<double>(stages));
  const double bar_w = std::min(70.0, group_w * 0.8 / std::max<double>(1, static_cast<double>(splits.size())));
  // Cap lines first, so bars and their labels sit on top of them.
  for (std::size_t s = 0; s < stages; ++s) {
    const double group_x = kLeft + group_w * static_cast<double>(s);
    const std::uint64_t cap = stageCapBytes(cap_bytes, s);
    if (cap > 0) {
      const double y = base - static_cast<double>(cap) * scale;
      svg.line(group_x + 6, y, group_x + group_w - 6, y, kCapColour, 2.5, " stroke-dasharray=\"6 3\"");
      if (s == 0 || cap_bytes.size() > 1) {
        svg.text(group_x + group_w - 6, y - 6, "cap " + escapeMarkup(formatBytes(cap)),
                 "font-size=\"12\" font-weight=\"bold\" fill=\"" + std::string(kCapColour) +
                     "\" text-anchor=\"end\"");
      }
    }
  }
  for (std::size_t s = 0; s < stages; ++s) {
    const double group_x = kLeft + group_w * static_cast<double>(s);
    const double bars_x = group_x + (group_w - bar_w * static_cast<double>(splits.size())) / 2;
    for (std::size_t k = 0; k < splits.size(); ++k) {
      if (s >= splits[k].stages.size()) continue;
      const StageCost& stage = splits[k].stages[s];
      const double h = static_cast<double>(stage.memory_bytes) * scale;
      const double bx = bars_x + bar_w * static_cast<double>(k);
      const std::uint64_t cap = stageCapBytes(cap_bytes, s);
      const bool over = cap > 0 && stage.memory_bytes > cap;
      svg.raw("<g><title>" + escapeMarkup(splits[k].method) + ", stage " + std::to_string(s) + ": " +
              escapeMarkup(formatBytes(stage.memory_bytes)) + (over ? " (over the cap)" : "") + "</title>\n");
      svg.rect(bx + 1, base - h, bar_w - 2, h, splitColour(splits[k].method),
               over ? " stroke=\"" + std::string(kCapColour) + "\" stroke-width=\"2.5\"" : "");
      svg.raw("</g>\n");
      if (bar_w >= 40) {
        svg.text(bx + bar_w / 2, base - h - 5, escapeMarkup(formatBytes(stage.memory_bytes)),
                 std::string("font-size=\"10.5\" text-anchor=\"middle\" paint-order=\"stroke\" stroke=\"#fff\" "
                             "stroke-width=\"3\" fill=\"") +
                     (over ? kCapColour : "#444") + "\"");
      }
    }
    svg.text(group_x + group_w / 2, base + 20, "stage " + std::to_string(s),
             "font-size=\"13\" fill=\"#333\" text-anchor=\"middle\"");
  }
  return inlineSvgChart(svg.take(), kWidth, base + 34, "Memory per stage of each split");
}

}  // namespace stagecut
