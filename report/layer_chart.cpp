#include "report/layer_chart.h"

#include <algorithm>
#include <cmath>

#include "core/units.h"
#include "report/html_text.h"
#include "schedule/op_palette.h"
#include "schedule/svg_gantt.h"

namespace stagecut {

namespace {

using report::inlineSvgChart;

// Layout in px: the left margin holds the panel labels.
constexpr double kLayerChartWidth = kChartWidthPx;
constexpr double kLayerChartLeft = 170;
constexpr double kLayerChartRight = 24;
// Helvetica's average glyph is about 0.6 em wide for these labels.
constexpr double kGlyphEm = 0.6;

const char* const kParamsColour = "#b07aa1";
const char* const kActivationColour = "#9c755f";
const char* const kBottleneckColour = "#e15759";
const char* const kStageColour = "#8fa9c4";
const char* const kLabelStyle = "font-size=\"12\" fill=\"#555\"";

// F, B and W bars take the colours the Gantt charts give those ops.
std::string opColour(OpKind kind) { return hexColour(opKindColour(kind)); }

double textWidth(const std::string& text, double font_px) {
  return kGlyphEm * font_px * static_cast<double>(text.size());
}

std::string percentText(double fraction) {
  if (fraction <= 0) return "0%";
  if (fraction < 0.01) return "<1%";
  return std::to_string(static_cast<int>(std::lround(fraction * 100))) + "%";
}

struct LayerColumns {
  double width = 0;  ///< one layer's column, px
  double x(int layer) const { return kLayerChartLeft + width * layer; }
  double centre(int layer) const { return x(layer) + width / 2; }
  double bar() const { return std::max(1.0, std::min(width * 0.72, width - 2)); }
  double barX(int layer) const { return centre(layer) - bar() / 2; }
};

LayerColumns columnsFor(const Profile& profile) {
  return {(kLayerChartWidth - kLayerChartLeft - kLayerChartRight) / std::max<double>(1, static_cast<double>(profile.layerCount()))};
}

double backwardInputMs(const LayerCost& layer) {
  return layer.backward_input_ms ? layer.backward_input_ms->median : layer.backward_ms.median;
}

double backwardWeightMs(const LayerCost& layer) {
  return layer.backward_weight_ms ? layer.backward_weight_ms->median : 0.0;
}

bool hasSplitBackward(const Profile& profile) {
  return std::any_of(profile.layers.begin(), profile.layers.end(), [](const LayerCost& layer) {
    return layer.backward_input_ms.has_value() && layer.backward_weight_ms.has_value();
  });
}

// Layer names under the columns: level when they fit, slanted otherwise, and only every k-th one
// when even slanted names would overlap.
double drawLayerNames(SvgBuilder* svg, const Profile& profile, const LayerColumns& columns, double y) {
  std::size_t longest = 1;
  for (const LayerCost& layer : profile.layers) longest = std::max(longest, layer.name.size());
  const double font = columns.width >= 40 ? 12 : 11;
  const bool level = textWidth(std::string(longest, 'x'), font) + 6 <= columns.width;
  const int every = level ? 1 : std::max(1, static_cast<int>(std::ceil((font + 3) / columns.width)));
  for (int i = 0; i < static_cast<int>(profile.layerCount()); i += every) {
    const std::string name = escapeMarkup(profile.layers[i].name);
    if (level) {
      svg->text(columns.centre(i), y + 14, name, "font-size=\"" + svgNumber(font) +
                                                  "\" fill=\"#333\" text-anchor=\"middle\"");
    } else {
      const double x = columns.centre(i) + font * 0.3, ty = y + 8;
      svg->text(x, ty, name, "font-size=\"" + svgNumber(font) + "\" fill=\"#333\" text-anchor=\"end\" " +
                                 "transform=\"rotate(-40 " + svgNumber(x) + " " + svgNumber(ty) + ")\"");
    }
  }
  return level ? 22 : 8 + 0.77 * textWidth(std::string(std::min<std::size_t>(longest, 24), 'x'), font) + 6;
}

void legendItem(SvgBuilder* svg, double* x, double y, const std::string& fill, const std::string& label) {
  svg->rect(*x, y - 11, 14, 14, fill, " rx=\"2\"");
  svg->text(*x + 20, y + 1, escapeMarkup(label), "font-size=\"13\" fill=\"#333\"");
  *x += 20 + textWidth(label, 13) * 0.85 + 24;
}

// One panel of per-layer bars growing up from `base`: values[i] as stacked segments.
struct Segment {
  double value;
  std::string colour;
};

void drawPanelLabel(SvgBuilder* svg, double top, double height, const std::string& title,
                    const std::string& total) {
  svg->text(kLayerChartLeft - 14, top + height / 2 - 2, escapeMarkup(title),
            "font-size=\"14\" font-weight=\"bold\" fill=\"#222\" text-anchor=\"end\"");
  svg->text(kLayerChartLeft - 14, top + height / 2 + 15, escapeMarkup(total),
            "font-size=\"12\" fill=\"#666\" text-anchor=\"end\"");
}

void drawBarPanel(SvgBuilder* svg, const Profile& profile, const LayerColumns& columns, double top,
                  double height, const std::vector<std::vector<Segment>>& bars, double total,
                  const std::string& unit_label) {
  double largest = 0;
  for (const auto& segments : bars) {
    double sum = 0;
    for (const Segment& segment : segments) sum += segment.value;
    largest = std::max(largest, sum);
  }
  const double label_room = 16;
  const double base = top + height;
  const double scale = largest > 0 ? (height - label_room) / largest : 0;
  svg->rect(kLayerChartLeft, top, kLayerChartWidth - kLayerChartLeft - kLayerChartRight, height, "#fafafa");
  svg->line(kLayerChartLeft, base, kLayerChartWidth - kLayerChartRight, base, "#999");
  const bool labels_fit = columns.width >= 26;
  for (std::size_t i = 0; i < bars.size(); ++i) {
    double y = base, sum = 0;
    for (const Segment& segment : bars[i]) {
      const double h = segment.value * scale;
      if (h > 0) svg->rect(columns.barX(static_cast<int>(i)), y - h, columns.bar(), h, segment.colour);
      y -= h;
      sum += segment.value;
    }
    // An invisible full-height target carries the tooltip, so thin bars are easy to hover.
    svg->raw("<rect x=\"" + svgNumber(columns.x(static_cast<int>(i))) + "\" y=\"" + svgNumber(top) +
             "\" width=\"" + svgNumber(columns.width) + "\" height=\"" + svgNumber(height) +
             "\" fill=\"transparent\"><title>" + escapeMarkup(profile.layers[i].name) + ": " +
             escapeMarkup(unit_label == "ms" ? formatMs(sum) + " ms"
                        : unit_label == "bytes" ? formatBytes(static_cast<std::uint64_t>(sum))
                                                : formatCount(static_cast<std::uint64_t>(sum))) +
             " (" + percentText(total > 0 ? sum / total : 0) + ")</title></rect>\n");
    if (labels_fit) {
      const double share = total > 0 ? sum / total : 0;
      const bool big = share >= 0.2;
      svg->text(columns.centre(static_cast<int>(i)), y - 4, percentText(share),
                std::string("font-size=\"11\" text-anchor=\"middle\" fill=\"") +
                    (big ? "#222\" font-weight=\"bold\"" : "#777\""));
    }
  }
}

}  // namespace

double layerComputeMs(const LayerCost& layer) { return layer.forward_ms.median + layer.backward_ms.median; }

std::string splitColour(const std::string& method) {
  if (method == "uniform") return "#9d9d9d";
  if (method == "params") return kParamsColour;
  if (method == "compute") return opColour(OpKind::kForward);
  return "#76b7b2";
}

std::string renderLayerChart(const Profile& profile) {
  const LayerColumns columns = columnsFor(profile);
  const bool split_backward = hasSplitBackward(profile);
  std::vector<std::vector<Segment>> compute, params, activations;
  double total_ms = 0, total_params = 0, total_activations = 0;
  for (const LayerCost& layer : profile.layers) {
    if (split_backward) {
      compute.push_back({{layer.forward_ms.median, opColour(OpKind::kForward)},
                         {backwardInputMs(layer), opColour(OpKind::kBackward)},
                         {backwardWeightMs(layer), opColour(OpKind::kWeight)}});
    } else {
      compute.push_back({{layer.forward_ms.median, opColour(OpKind::kForward)},
                         {layer.backward_ms.median, opColour(OpKind::kBackward)}});
    }
    params.push_back({{static_cast<double>(layer.params), kParamsColour}});
    activations.push_back({{static_cast<double>(layer.activation_bytes), kActivationColour}});
    double sum = 0;
    for (const Segment& segment : compute.back()) sum += segment.value;
    total_ms += sum;
    total_params += static_cast<double>(layer.params);
    total_activations += static_cast<double>(layer.activation_bytes);
  }

  SvgBuilder svg;
  double x = kLayerChartLeft;
  const double legend_y = 22;
  legendItem(&svg, &x, legend_y, opColour(OpKind::kForward), "Forward (F)");
  if (split_backward) {
    legendItem(&svg, &x, legend_y, opColour(OpKind::kBackward), "Backward, input grad. (B)");
    legendItem(&svg, &x, legend_y, opColour(OpKind::kWeight), "Backward, weight grad. (W)");
  } else {
    legendItem(&svg, &x, legend_y, opColour(OpKind::kBackward), "Backward (B + W)");
  }
  legendItem(&svg, &x, legend_y, kParamsColour, "Parameters");
  legendItem(&svg, &x, legend_y, kActivationColour, "Activations kept for backward");
  svg.text(kLayerChartWidth - kLayerChartRight, legend_y + 1, "% = the layer's share of the row",
           "font-size=\"12\" fill=\"#777\" text-anchor=\"end\" font-style=\"italic\"");

  double top = 44;
  const double compute_h = 180, small_h = 110, gap = 16;
  drawPanelLabel(&svg, top, compute_h, "Compute", formatMs(total_ms) + " ms / microbatch");
  drawBarPanel(&svg, profile, columns, top, compute_h, compute, total_ms, "ms");
  top += compute_h + gap;
  drawPanelLabel(&svg, top, small_h, "Parameters", formatCount(static_cast<std::uint64_t>(total_params)));
  drawBarPanel(&svg, profile, columns, top, small_h, params, total_params, "count");
  top += small_h + gap;
  drawPanelLabel(&svg, top, small_h, "Activations",
                 formatBytes(static_cast<std::uint64_t>(total_activations)) + " / microbatch");
  drawBarPanel(&svg, profile, columns, top, small_h, activations, total_activations, "bytes");
  top += small_h;
  top += drawLayerNames(&svg, profile, columns, top);
  return inlineSvgChart(svg.take(), kLayerChartWidth, top + 8, "Per-layer compute, parameters and activation memory");
}

std::string renderSplitChart(const Profile& profile, const Partition& split,
                             const std::vector<Partition>& splits) {
  const LayerColumns columns = columnsFor(profile);
  double largest_stage_ms = 0, largest_layer_ms = 0, largest_params = 0;
  for (const Partition& other : splits) {
    for (const StageCost& stage : other.stages) largest_stage_ms = std::max(largest_stage_ms, stage.cost_ms);
  }
  for (const StageCost& stage : split.stages) largest_stage_ms = std::max(largest_stage_ms, stage.cost_ms);
  for (const LayerCost& layer : profile.layers) {
    largest_layer_ms = std::max(largest_layer_ms, layerComputeMs(layer));
    largest_params = std::max(largest_params, static_cast<double>(layer.params));
  }

  SvgBuilder svg;
  const double stage_top = 22, stage_h = 92;
  const double layer_top = stage_top + stage_h + 12, layer_h = 56;
  const double params_h = 44;
  const double axis_y = layer_top + layer_h;
  const double bottom = axis_y + params_h;
  const double right = kLayerChartWidth - kLayerChartRight;

  for (std::size_t s = 0; s < split.stages.size(); ++s) {
    const StageCost& stage = split.stages[s];
    const double x0 = columns.x(stage.first), x1 = columns.x(stage.last + 1);
    svg.rect(x0, stage_top - 18, x1 - x0, bottom - stage_top + 40, s % 2 ? "#ffffff" : "#f1f4f8");
  }
  drawPanelLabel(&svg, stage_top, stage_h, "Stage cost", "ms / microbatch");
  svg.text(kLayerChartLeft - 14, layer_top + layer_h / 2 + 4, "layer compute",
           "font-size=\"12\" fill=\"#666\" text-anchor=\"end\"");
  svg.text(kLayerChartLeft - 14, axis_y + params_h / 2 + 4, "layer params",
           "font-size=\"12\" fill=\"#666\" text-anchor=\"end\"");

  const double stage_scale = largest_stage_ms > 0 ? (stage_h - 4) / largest_stage_ms : 0;
  const double bottleneck = split.bottleneck_ms;
  for (std::size_t s = 0; s < split.stages.size(); ++s) {
    const StageCost& stage = split.stages[s];
    const double x0 = columns.x(stage.first), x1 = columns.x(stage.last + 1);
    const bool is_bottleneck = bottleneck > 0 && stage.cost_ms >= bottleneck * (1 - 1e-9);
    const double h = stage.cost_ms * stage_scale;
    svg.rect(x0 + 3, stage_top + stage_h - h, x1 - x0 - 6, h,
             is_bottleneck ? kBottleneckColour : kStageColour, " rx=\"2\"");
    const std::string label = "S" + std::to_string(s) + "  " + formatMs(stage.cost_ms) + " ms";
    const bool fits = textWidth(label, 12) + 8 <= x1 - x0;
    const std::string short_label = fits ? label : formatMs(stage.cost_ms);
    const bool inside = h >= 20;
    svg.text((x0 + x1) / 2, inside ? stage_top + stage_h - h + 15 : stage_top + stage_h - h - 4,
             escapeMarkup(short_label),
             std::string("font-size=\"12\" text-anchor=\"middle\" font-weight=\"bold\" fill=\"") +
                 (inside ? "#fff" : is_bottleneck ? kBottleneckColour : "#333") + "\"");
    const std::string params = formatCount(stage.params) + " params";
    if (textWidth(params, 11) + 6 <= x1 - x0) {
      svg.text((x0 + x1) / 2, bottom + 16, escapeMarkup(params),
               "font-size=\"11\" text-anchor=\"middle\" fill=\"" + std::string(kParamsColour) + "\"");
    }
  }
  if (bottleneck > 0) {
    const double y = stage_top + stage_h - bottleneck * stage_scale;
    svg.line(kLayerChartLeft, y, right, y, kBottleneckColour, 1, " stroke-dasharray=\"4 3\" opacity=\"0.7\"");
  }

  const double layer_scale = largest_layer_ms > 0 ? (layer_h - 4) / largest_layer_ms : 0;
  const double params_scale = largest_params > 0 ? (params_h - 4) / largest_params : 0;
  for (int i = 0; i < static_cast<int>(profile.layerCount()); ++i) {
    const LayerCost& layer = profile.layers[i];
    const double f = layer.forward_ms.median * layer_scale, b = layer.backward_ms.median * layer_scale;
    if (f + b > 0) {
      svg.rect(columns.barX(i), axis_y - f - b, columns.bar(), b, opColour(OpKind::kBackward));
      svg.rect(columns.barX(i), axis_y - f, columns.bar(), f, opColour(OpKind::kForward));
    }
    const double p = static_cast<double>(layer.params) * params_scale;
    if (p > 0) svg.rect(columns.barX(i), axis_y, columns.bar(), p, kParamsColour);
  }
  svg.line(kLayerChartLeft, axis_y, right, axis_y, "#999");
  for (std::size_t s = 1; s < split.stages.size(); ++s) {
    const double x = columns.x(split.stages[s].first);
    svg.line(x, stage_top - 18, x, bottom + 22, "#333", 1.5, " stroke-dasharray=\"5 3\"");
  }
  return inlineSvgChart(svg.take(), kLayerChartWidth, bottom + 24, "Split '" + split.method + "' drawn over the layers");
}

}  // namespace stagecut
