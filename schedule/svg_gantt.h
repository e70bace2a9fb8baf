#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "schedule/chrome_trace.h"

namespace stagecut {

/// What an SVG Gantt chart says around the bars.
struct SvgGanttOptions {
  std::string title;              ///< the chart's heading, e.g. "4 stages, 8 microbatches"
  std::string time_unit = "ms";   ///< how simulated times are labelled ("ms", "units")
};

/// The Gantt chart's width in px, which suits a 16:9 slide; the report's other charts take it
/// too, so that its page reads as one column.
inline constexpr double kChartWidthPx = 1200;

/// "GPipe", "1F1B", "Interleaved 1F1B", "ZB-H1": a schedule's name as charts and tables print it.
std::string scheduleDisplayName(const std::string& name);

/// "1F1B", "Interleaved 1F1B (v = 2)": the display name and, with several chunks per rank, v.
std::string scheduleTitle(const Schedule& schedule);

/// An SVG Gantt chart of simulated schedules, one panel per schedule on a shared time scale, so
/// a shorter step is a shorter row: bars coloured by op kind (later chunks lighter) with their
/// microbatch numbers, idle time hatched, a legend, and each panel's step time and bubble in its
/// title. Standalone SVG 1.1 text. Its size is bounded whatever the pipeline: past 40,000 ops a
/// rank is drawn in pixel columns, each the op kind that fills most of it, and past 256 ranks
/// only the first 256 are drawn; the chart then says so under its legend (svgGanttDrawingNote).
/// The text stays under kMaxSvgGanttBytes.
std::string renderSvgGantt(const std::vector<SimulatedSchedule>& runs,
                           const SvgGanttOptions& options);

/// The one line a chart of `runs` adds to say what it leaves out ("ranks 0-255 of 4096 drawn;
/// 8000000 ops drawn in 156 columns a rank, ..."), or "" when it draws every op.
std::string svgGanttDrawingNote(const std::vector<SimulatedSchedule>& runs);

/// The most bytes renderSvgGantt() writes for up to 8 schedules, whatever their size.
inline constexpr std::size_t kMaxSvgGanttBytes = std::size_t{16} << 20;

}  // namespace stagecut
