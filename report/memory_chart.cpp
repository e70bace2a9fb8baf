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

namespace {

// The y axis of a bytes chart: its unit, tick and scale from the largest value.
struct BytesAxis {
  ByteUnit unit;
  double tick;
  double top;
  double scale;  // px per byte
};

BytesAxis bytesAxis(double largest) {
  BytesAxis axis{unitFor(largest), 0, 0, 0};
  axis.tick = niceStep(std::max(largest, 1.0) / axis.unit.bytes / 5);
  axis.top = std::max(axis.tick, std::ceil(largest / axis.unit.bytes / axis.tick * 1.04) * axis.tick);
  axis.scale = kPlotHeight / (axis.top * axis.unit.bytes);
  return axis;
}

void drawBytesAxis(SvgBuilder& svg, const BytesAxis& axis, double base) {
  char buffer[32];
  for (double t = 0; t <= axis.top + 1e-9; t += axis.tick) {
    const double y = base - t * axis.unit.bytes * axis.scale;
    svg.line(kLeft, y, kWidth - kRight, y, t == 0 ? "#999" : "#e6e6e6");
    svg.text(kLeft - 8, y + 4, std::string(formatTick(t, axis.tick, buffer, sizeof buffer)) + " " + axis.unit.name,
             "font-size=\"12\" fill=\"#666\" text-anchor=\"end\"");
  }
}

struct NamedPart {
  const char* name;
  const char* colour;
  double MemoryParts::*bytes;
};

constexpr NamedPart kParts[] = {{"weights", "#4c72b0", &MemoryParts::weights},
                                {"gradients", "#55a868", &MemoryParts::gradients},
                                {"optimizer", "#8172b2", &MemoryParts::optimizer},
                                {"activations", "#dd8452", &MemoryParts::activations},
                                {"buffers", "#937860", &MemoryParts::buffers},
                                {"temporaries", "#c44e52", &MemoryParts::transient}};

const char* const kRankColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf",
                                    "#bcbd22"};

}  // namespace

std::string renderMemoryPartsChart(const Partition& split, const std::vector<std::uint64_t>& cap_bytes) {
  double largest = 0;
  for (std::size_t s = 0; s < split.stages.size(); ++s) {
    if (!split.stages[s].memory_parts) return "";
    largest = std::max({largest, split.stages[s].memory_parts->total(), static_cast<double>(stageCapBytes(cap_bytes, s))});
  }
  const BytesAxis axis = bytesAxis(largest);
  const double base = kTop + kPlotHeight;
  SvgBuilder svg;
  double x = kLeft;
  for (const NamedPart& part : kParts) {
    svg.rect(x, 10, 14, 14, part.colour, " rx=\"2\"");
    svg.text(x + 20, 22, part.name, "font-size=\"13\" fill=\"#333\"");
    x += 20 + 8.0 * static_cast<double>(std::string(part.name).size()) + 18;
  }
  drawBytesAxis(svg, axis, base);
  const double group_w = (kWidth - kLeft - kRight) / std::max<double>(1, static_cast<double>(split.stages.size()));
  const double bar_w = std::min(90.0, group_w * 0.6);
  for (std::size_t s = 0; s < split.stages.size(); ++s) {
    const MemoryParts& parts = *split.stages[s].memory_parts;
    const double bx = kLeft + group_w * static_cast<double>(s) + (group_w - bar_w) / 2;
    double y = base;
    for (const NamedPart& part : kParts) {
      const double h = parts.*part.bytes * axis.scale;
      if (h <= 0) continue;
      y -= h;
      svg.raw("<g><title>stage " + std::to_string(s) + " " + part.name + ": " +
              escapeMarkup(formatBytes(static_cast<std::uint64_t>(std::llround(parts.*part.bytes)))) + "</title>\n");
      svg.rect(bx, y, bar_w, h, part.colour, "");
      svg.raw("</g>\n");
    }
    svg.text(bx + bar_w / 2, y - 5, escapeMarkup(formatBytes(split.stages[s].memory_bytes)),
             "font-size=\"10.5\" text-anchor=\"middle\" fill=\"#444\"");
    const std::uint64_t cap = stageCapBytes(cap_bytes, s);
    if (cap > 0) {
      const double cy = base - static_cast<double>(cap) * axis.scale;
      svg.line(bx - 8, cy, bx + bar_w + 8, cy, kCapColour, 2.5, " stroke-dasharray=\"6 3\"");
    }
    svg.text(bx + bar_w / 2, base + 20, "stage " + std::to_string(s), "font-size=\"13\" fill=\"#333\" text-anchor=\"middle\"");
  }
  return inlineSvgChart(svg.take(), kWidth, base + 34, "Each stage's predicted peak by part");
}

std::string renderMemoryTimelineChart(const std::vector<std::vector<double>>& measured,
                                      const std::vector<std::vector<double>>& predicted,
                                      const std::vector<std::uint64_t>& cap_bytes) {
  double largest = 0;
  std::size_t points = 0;
  for (const auto& series : {measured, predicted}) {
    for (const auto& rank : series) {
      points = std::max(points, rank.size());
      for (double bytes : rank) largest = std::max(largest, bytes);
    }
  }
  if (points == 0) return "";
  for (std::size_t r = 0; r < measured.size(); ++r) largest = std::max(largest, static_cast<double>(stageCapBytes(cap_bytes, r)));
  const BytesAxis axis = bytesAxis(largest);
  const double base = kTop + kPlotHeight;
  SvgBuilder svg;
  svg.text(kLeft, 22, "solid: measured, dashed: predicted; one point per op of the rank's list, the last for the optimizer step",
           "font-size=\"13\" fill=\"#333\"");
  drawBytesAxis(svg, axis, base);
  const double step_x = (kWidth - kLeft - kRight) / std::max<double>(1, static_cast<double>(points));
  const auto draw = [&](const std::vector<double>& bytes, const char* colour, const std::string& dash,
                        const std::string& title) {
    std::string path;
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      // A step line: each op's peak held across its slot.
      const double y = base - bytes[i] * axis.scale;
      char point[64];
      std::snprintf(point, sizeof point, "%s%.1f,%.1f L%.1f,%.1f ", i == 0 ? "M" : "L",
                    kLeft + step_x * static_cast<double>(i), y, kLeft + step_x * static_cast<double>(i + 1), y);
      path += point;
    }
    svg.raw("<path d=\"" + path + "\" fill=\"none\" stroke=\"" + colour + "\" stroke-width=\"2\"" + dash + "><title>" +
            escapeMarkup(title) + "</title></path>\n");
  };
  for (std::size_t r = 0; r < measured.size() || r < predicted.size(); ++r) {
    const char* colour = kRankColours[r % (sizeof kRankColours / sizeof kRankColours[0])];
    if (r < measured.size()) draw(measured[r], colour, "", "rank " + std::to_string(r) + " measured");
    if (r < predicted.size()) draw(predicted[r], colour, " stroke-dasharray=\"6 3\"", "rank " + std::to_string(r) + " predicted");
    svg.text(kWidth - kRight - 4, kTop + 14 + 16.0 * static_cast<double>(r), "rank " + std::to_string(r),
             "font-size=\"12\" text-anchor=\"end\" fill=\"" + std::string(colour) + "\"");
    const std::uint64_t cap = stageCapBytes(cap_bytes, r);
    if (cap > 0 && (r == 0 || cap_bytes.size() > 1)) {
      const double cy = base - static_cast<double>(cap) * axis.scale;
      svg.line(kLeft, cy, kWidth - kRight, cy, kCapColour, 2.0, " stroke-dasharray=\"2 3\"");
    }
  }
  svg.text((kLeft + kWidth - kRight) / 2, base + 20, "ops of each rank's list, in order",
           "font-size=\"12\" fill=\"#666\" text-anchor=\"middle\"");
  return inlineSvgChart(svg.take(), kWidth, base + 34, "Memory over the step, per rank");
}

}  // namespace stagecut
