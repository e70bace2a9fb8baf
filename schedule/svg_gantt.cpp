#include "schedule/svg_gantt.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/markup_text.h"
#include "schedule/op_palette.h"
#include "schedule/time_axis.h"

namespace stagecut {

namespace {

// Layout in px. Rows shrink for deep pipelines so the chart stays about one screen tall.
constexpr double kWidth = kChartWidthPx;
constexpr double kLeft = 84;
constexpr double kRight = 28;
constexpr double kPanelTitle = 34;
constexpr double kAxis = 34;
constexpr double kPanelGap = 18;
constexpr double kLabelFontPx = 12;
const char* const kFont = "Helvetica, Arial, sans-serif";
// What one chart draws at most, whatever the pipeline: past kMaxDrawnOps each rank is drawn in
// pixel columns (a bar narrower than a pixel shows nothing anyway), past kMaxDrawnRanks only the
// first ranks are. Together they keep the chart under kMaxSvgGanttBytes (svg_gantt.h).
constexpr std::size_t kMaxDrawnOps = 40000;
constexpr int kMaxDrawnRanks = 256;

Rgb lighten(Rgb colour, double amount) {
  return {colour.r + (255 - colour.r) * amount, colour.g + (255 - colour.g) * amount,
          colour.b + (255 - colour.b) * amount};
}

bool needsDarkText(Rgb colour) {
  return 0.299 * colour.r + 0.587 * colour.g + 0.114 * colour.b > 170;
}

Rgb opColour(const PipelineOp& op, const Placement& placement) {
  const int chunks = placement.chunks_per_rank;
  const double amount = chunks > 1 ? 0.45 * op.chunk / (chunks - 1) : 0.0;
  return lighten(opKindColour(op.kind), amount);
}

std::string formatStep(double step, const std::string& unit) {
  char buffer[48];
  const int decimals = step >= 100 ? 0 : step >= 10 ? 1 : 2;
  std::snprintf(buffer, sizeof buffer, "%.*f %s", decimals, step, unit.c_str());
  std::string text = buffer;
  // Unit slots are usually whole: "33 units" rather than "33.0 units".
  if (std::fabs(step - std::round(step)) < 1e-9 && unit != "ms") {
    text = std::to_string(static_cast<long long>(std::llround(step))) + " " + unit;
  }
  return text;
}

double rowHeight(int stages) { return std::clamp(440.0 / stages, 9.0, 30.0); }
double rowGap(int stages) { return rowHeight(stages) >= 20 ? 6.0 : 2.0; }

int drawnRanks(const Schedule& schedule) { return std::min(schedule.placement.ranks, kMaxDrawnRanks); }

double panelHeight(const Schedule& schedule) {
  const int ranks = drawnRanks(schedule);
  return kPanelTitle + ranks * (rowHeight(ranks) + rowGap(ranks)) + kAxis + kPanelGap;
}

// Each drawn rank's ops, or 0 columns per rank when every op fits the budget as a bar of its own.
int columnsPerRank(const std::vector<SimulatedSchedule>& runs) {
  std::size_t ops = 0, ranks = 0;
  for (const SimulatedSchedule& run : runs) {
    for (int rank = 0; rank < drawnRanks(*run.schedule); ++rank) ops += run.schedule->ranks[rank].size();
    ranks += static_cast<std::size_t>(drawnRanks(*run.schedule));
  }
  if (ops <= kMaxDrawnOps || ranks == 0) return 0;
  return static_cast<int>(std::clamp<std::size_t>(kMaxDrawnOps / ranks, 8, static_cast<std::size_t>(kWidth - kLeft - kRight)));
}

// One rank drawn in `columns` columns over [0, axis_end): each column takes the colour of the op
// kind and chunk that fills most of it, or stays idle when ops fill under half of it; runs of one
// colour are one bar. No microbatch numbers: a column holds many ops.
void drawRankColumns(SvgBuilder* svg, const RankOps& ops, const std::vector<OpTiming>& times, const Placement& placement,
                     double axis_end, int columns, double left, double y, double width, double row) {
  const double column_ms = axis_end / columns;
  std::vector<std::vector<std::pair<int, double>>> cover(static_cast<std::size_t>(columns));
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const int key = static_cast<int>(ops[i].kind) * 100000 + ops[i].chunk;
    const int first = std::clamp(static_cast<int>(times[i].start_ms / column_ms), 0, columns - 1);
    const int last = std::clamp(static_cast<int>(times[i].end_ms / column_ms), 0, columns - 1);
    for (int c = first; c <= last; ++c) {
      const double overlap = std::min(times[i].end_ms, (c + 1) * column_ms) - std::max(times[i].start_ms, c * column_ms);
      if (overlap <= 0) continue;
      auto& entries = cover[static_cast<std::size_t>(c)];
      auto found = std::find_if(entries.begin(), entries.end(), [&](const auto& entry) { return entry.first == key; });
      if (found == entries.end()) entries.emplace_back(key, overlap);
      else found->second += overlap;
    }
  }
  // Each column's colour key, -1 for idle, worked out once.
  std::vector<int> dominant(static_cast<std::size_t>(columns), -1);
  for (int c = 0; c < columns; ++c) {
    double busy = 0, best = 0;
    for (const auto& [key, ms] : cover[static_cast<std::size_t>(c)]) {
      busy += ms;
      if (ms > best) best = ms, dominant[static_cast<std::size_t>(c)] = key;
    }
    if (busy < column_ms / 2) dominant[static_cast<std::size_t>(c)] = -1;
  }
  const double column_px = width / columns;
  for (int c = 0; c < columns;) {
    const int key = dominant[static_cast<std::size_t>(c)];
    int end = c + 1;
    while (end < columns && dominant[static_cast<std::size_t>(end)] == key) ++end;
    if (key >= 0) {
      PipelineOp op;
      op.kind = static_cast<OpKind>(key / 100000);
      op.chunk = key % 100000;
      svg->rect(left + c * column_px, y, (end - c) * column_px, row, hexColour(opColour(op, placement)));
    }
    c = end;
  }
}

void legendItem(SvgBuilder* svg, double* x, double y, const std::string& fill,
                const std::string& label) {
  svg->rect(*x, y - 12, 16, 16, fill, " rx=\"3\" stroke=\"#9a9a9a\" stroke-width=\"0.5\"");
  svg->text(*x + 22, y + 1, escapeMarkup(label), "font-size=\"14\" fill=\"#333\"");
  // Helvetica averages about 0.47 em per character of this kind of text at 14 px.
  *x += 22 + 6.6 * static_cast<double>(label.size()) + 28;
}

void drawLegend(SvgBuilder* svg, const std::vector<SimulatedSchedule>& runs, double y) {
  bool splits = false, chunked = false, reduces = false;
  for (const SimulatedSchedule& run : runs) {
    splits = splits || run.schedule->splits_backward;
    reduces = reduces || run.schedule->hasAllReduce();
    chunked = chunked || run.schedule->placement.chunked();
  }
  double x = kLeft;
  legendItem(svg, &x, y, hexColour(opKindColour(OpKind::kForward)), "Forward (F)");
  legendItem(svg, &x, y, hexColour(opKindColour(OpKind::kBackward)),
             splits ? "Backward (B: input grad. where W is split off)" : "Backward (B)");
  if (splits) legendItem(svg, &x, y, hexColour(opKindColour(OpKind::kWeight)), "Weight grad. (W)");
  if (reduces) legendItem(svg, &x, y, hexColour(opKindColour(OpKind::kAllReduce)), "All-reduce (A)");
  legendItem(svg, &x, y, "url(#idle)", "Idle");
  if (chunked) {
    svg->text(x, y + 1, "lighter = later model chunk", "font-size=\"14\" fill=\"#666\"");
  }
}

void drawPanel(SvgBuilder* svg, const SimulatedSchedule& run, double top, double time_scale,
               double tick, const std::string& unit, int columns) {
  const Schedule& schedule = *run.schedule;
  const SimulationResult& result = *run.result;
  const int ranks = drawnRanks(schedule);
  const double row = rowHeight(ranks);
  const double gap = rowGap(ranks);
  const double rows_top = top + kPanelTitle;
  const double rows_bottom = rows_top + ranks * (row + gap) - gap;
  auto x = [&](double t) { return kLeft + t * time_scale; };

  svg->text(kLeft, top + 20, "<tspan font-weight=\"bold\">" + escapeMarkup(scheduleTitle(schedule)) + "</tspan>" +
            "<tspan fill=\"#555\">   step " + escapeMarkup(formatStep(result.step_ms, unit)) +
            "  ·  bubble " + svgNumber(std::round(result.bubble * 1000) / 10) + "%</tspan>",
            "font-size=\"17\" fill=\"#222\"");

  char buffer[32];
  const double axis_end = (kWidth - kRight - kLeft) / time_scale;
  for (double t = 0; t <= axis_end + 1e-9; t += tick) {
    svg->line(x(t), rows_top - 3, x(t), rows_bottom + 4, "#e3e3e3");
    svg->text(x(t), rows_bottom + 19, formatTick(t, tick, buffer, sizeof buffer),
              "font-size=\"12\" fill=\"#666\" text-anchor=\"middle\"");
  }
  svg->text(kLeft - 12, rows_bottom + 19, "time (" + escapeMarkup(unit) + ")",
            "font-size=\"12\" fill=\"#666\" text-anchor=\"end\" font-style=\"italic\"");

  for (int rank = 0; rank < ranks; ++rank) {
    const double y = rows_top + rank * (row + gap);
    svg->text(kLeft - 12, y + row / 2 + 4, "rank " + std::to_string(rank),
              "font-size=\"" + svgNumber(std::min(13.0, row)) + "\" fill=\"#333\" text-anchor=\"end\"");
    // The track under the bars is hatched: whatever the bars leave uncovered is the bubble.
    svg->rect(kLeft, y, result.step_ms * time_scale, row, "url(#idle)");
    const RankOps& ops = schedule.ranks[rank];
    if (columns > 0) {
      const double width = kWidth - kLeft - kRight;
      drawRankColumns(svg, ops, result.op_times[rank], schedule.placement, width / time_scale, columns, kLeft, y,
                      width, row);
      continue;
    }
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const OpTiming& timing = result.op_times[rank][i];
      const double width = (timing.end_ms - timing.start_ms) * time_scale;
      if (width <= 0) continue;
      const Rgb colour = opColour(ops[i], schedule.placement);
      svg->rect(x(timing.start_ms), y, width, row, hexColour(colour),
                width >= 4 ? " stroke=\"#ffffff\" stroke-width=\"1\"" : "");
      const std::string label =
          ops[i].kind == OpKind::kAllReduce ? "A" : std::to_string(ops[i].microbatch);
      const double label_px = 0.62 * kLabelFontPx * static_cast<double>(label.size()) + 4;
      if (width >= label_px && row >= kLabelFontPx + 2) {
        svg->text(x(timing.start_ms) + width / 2, y + row / 2 + kLabelFontPx * 0.36, label,
                  "font-size=\"" + svgNumber(kLabelFontPx) + "\" text-anchor=\"middle\" fill=\"" +
                      (needsDarkText(colour) ? "#222" : "#fff") + "\"");
      }
    }
  }
}

}  // namespace

std::string scheduleDisplayName(const std::string& name) {
  if (name == "gpipe") return "GPipe";
  if (name == "1f1b") return "1F1B";
  if (name == "interleaved-1f1b") return "Interleaved 1F1B";
  if (name == "zb-h1") return "ZB-H1";
  if (name == "zb-v") return "ZB-V";
  if (name == "dualpipe-v") return "DualPipeV";
  return name;
}

std::string scheduleTitle(const Schedule& schedule) {
  std::string title = scheduleDisplayName(schedule.name);
  // A V always holds 2 chunks; its name says so.
  if (schedule.placement.chunked() && schedule.placement.style == Placement::Style::kLoop) title += " (v = " + std::to_string(schedule.placement.chunks_per_rank) + ")";
  return title;
}

std::string svgGanttDrawingNote(const std::vector<SimulatedSchedule>& runs) {
  std::string note;
  int most_ranks = 0;
  std::size_t ops = 0;
  for (const SimulatedSchedule& run : runs) {
    most_ranks = std::max(most_ranks, run.schedule->placement.ranks);
    for (const RankOps& rank : run.schedule->ranks) ops += rank.size();
  }
  if (most_ranks > kMaxDrawnRanks) {
    note = "ranks 0-" + std::to_string(kMaxDrawnRanks - 1) + " of " + std::to_string(most_ranks) + " drawn";
  }
  if (const int columns = columnsPerRank(runs); columns > 0) {
    note += (note.empty() ? "" : "; ") + std::to_string(ops) + " ops drawn in " + std::to_string(columns) +
            " columns a rank, each the op kind that fills most of it";
  }
  return note;
}

std::string renderSvgGantt(const std::vector<SimulatedSchedule>& runs,
                           const SvgGanttOptions& options) {
  const int columns = columnsPerRank(runs);
  const std::string note = svgGanttDrawingNote(runs);
  const double header = (options.title.empty() ? 44 : 80) + (note.empty() ? 0 : 24);
  double height = header + 16;
  double longest_step = 0;
  for (const SimulatedSchedule& run : runs) {
    height += panelHeight(*run.schedule);
    longest_step = std::max(longest_step, run.result->step_ms);
  }
  const double chart_width = kWidth - kLeft - kRight;
  const double tick = niceStep(longest_step / 12);
  // The axis ends on a tick, so every panel shares one scale and a shorter step looks shorter.
  const double axis_end = std::max(tick, std::ceil(longest_step / tick - 1e-9) * tick);
  const double time_scale = chart_width / axis_end;

  SvgBuilder svg;
  svg.raw("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
          "version=\"1.1\" width=\"" + svgNumber(kWidth) + "\" height=\"" + svgNumber(height) +
          "\" viewBox=\"0 0 " + svgNumber(kWidth) + " " + svgNumber(height) + "\" font-family=\"" +
          kFont + "\">\n");
  svg.raw("<defs><pattern id=\"idle\" width=\"7\" height=\"7\" patternUnits=\"userSpaceOnUse\" "
          "patternTransform=\"rotate(45)\"><rect width=\"7\" height=\"7\" fill=\"#f4f4f4\"/>"
          "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"7\" stroke=\"#cfcfcf\" stroke-width=\"2\"/>"
          "</pattern></defs>\n");
  svg.rect(0, 0, kWidth, height, "#ffffff");
  double y = 0;
  if (!options.title.empty()) {
    svg.text(kLeft, 36, escapeMarkup(options.title), "font-size=\"22\" font-weight=\"bold\" fill=\"#222\"");
    y = 36;
  }
  drawLegend(&svg, runs, y + 32);
  if (!note.empty()) svg.text(kLeft, y + 60, escapeMarkup(note), "font-size=\"14\" fill=\"#8a4b00\"");
  y = header;
  for (const SimulatedSchedule& run : runs) {
    drawPanel(&svg, run, y, time_scale, tick, options.time_unit, columns);
    y += panelHeight(*run.schedule);
  }
  svg.raw("</svg>\n");
  return svg.take();
}

}  // namespace stagecut
