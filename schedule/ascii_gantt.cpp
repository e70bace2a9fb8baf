#include "schedule/ascii_gantt.h"

#include <algorithm>
#include <cmath>

#include "schedule/time_axis.h"

namespace stagecut {

namespace {

constexpr int kLabelColumns = 8;   // "rank 12 "
constexpr int kFewestCells = 16;   // a chart narrower than this shows nothing useful

char fillOf(const PipelineOp& op) {
  switch (op.kind) {
    case OpKind::kForward:
      return static_cast<char>('0' + op.microbatch % 10);
    case OpKind::kBackward:
      return '#';
    case OpKind::kWeight:
      return '=';
    case OpKind::kAllReduce:
      return 'A';
  }
  return '?';
}

// One rank's cells: each column shows the op running at the column's middle time.
std::string rankCells(const RankOps& ops, const std::vector<OpTiming>& times, int columns,
                      double time_per_column) {
  std::string cells(static_cast<std::size_t>(columns), '.');
  std::vector<int> op_of_cell(static_cast<std::size_t>(columns), -1);
  std::size_t next = 0;
  for (int c = 0; c < columns; ++c) {
    const double t = (c + 0.5) * time_per_column;
    while (next < ops.size() && times[next].end_ms <= t) ++next;
    if (next < ops.size() && times[next].start_ms <= t) op_of_cell[c] = static_cast<int>(next);
  }
  for (int c = 0; c < columns;) {
    const int op_index = op_of_cell[c];
    int run_end = c + 1;
    while (run_end < columns && op_of_cell[run_end] == op_index) ++run_end;
    if (op_index >= 0 && ops[op_index].kind == OpKind::kAllReduce) {
      std::fill(cells.begin() + c, cells.begin() + run_end, fillOf(ops[op_index]));
    } else if (op_index >= 0) {
      const PipelineOp& op = ops[op_index];
      const int run = run_end - c;
      std::fill(cells.begin() + c, cells.begin() + run_end, fillOf(op));
      const std::string label = std::to_string(op.microbatch);
      // Keep two fill marks visible so that a labelled B or W still reads as B or W.
      const int room = static_cast<int>(label.size()) + (op.kind == OpKind::kForward ? 0 : 2);
      if (run >= room) cells.replace(static_cast<std::size_t>(c), label.size(), label);
    }
    c = run_end;
  }
  return cells;
}

std::string ruler(int columns, double time_per_column, const std::string& time_unit) {
  const double tick = niceStep(10 * time_per_column);
  const int tick_columns = static_cast<int>(std::lround(tick / time_per_column));
  std::string labels(static_cast<std::size_t>(kLabelColumns + columns + 16), ' ');
  std::string marks(static_cast<std::size_t>(kLabelColumns), ' ');
  for (int c = 0; c <= columns; ++c) marks += c % tick_columns == 0 ? '|' : '-';
  char buffer[32];
  for (int c = 0; c <= columns; c += tick_columns) {
    const std::string text = formatTick(c * time_per_column, tick, buffer, sizeof buffer);
    labels.replace(static_cast<std::size_t>(kLabelColumns + c), text.size(), text);
  }
  labels.resize(labels.find_last_not_of(' ') + 1);
  return marks + "\n" + labels + " " + time_unit + "\n";
}

}  // namespace

std::string renderAsciiGantt(const Schedule& schedule, const SimulationResult& result,
                             const AsciiGanttOptions& options) {
  const std::string& time_unit = options.time_unit;
  const int available = std::max(kFewestCells, options.width_columns - kLabelColumns - 1);
  const double fit_ms = std::max(options.fit_ms, result.step_ms);
  const double time_per_column = niceStep(fit_ms / available);
  const int columns =
      std::max(1, static_cast<int>(std::ceil(result.step_ms / time_per_column - 1e-9)));
  std::string text;
  for (int rank = 0; rank < schedule.placement.ranks; ++rank) {
    std::string label = "rank " + std::to_string(rank);
    label.resize(kLabelColumns, ' ');
    text += label + rankCells(schedule.ranks[rank], result.op_times[rank], columns,
                              time_per_column) + "\n";
  }
  text += ruler(columns, time_per_column, time_unit);
  char buffer[32];
  text += std::string(kLabelColumns, ' ') + "F: microbatch number   B: #" +
          (schedule.splits_backward ? "   W: =" : "") +
          (schedule.hasAllReduce() ? "   all-reduce: A" : "") + "   idle: .   one column = " +
          formatTick(time_per_column, time_per_column, buffer, sizeof buffer) + " " + time_unit;
  if (schedule.placement.chunked()) text += "   (" + std::to_string(schedule.placement.chunks_per_rank) + " chunks per rank)";
  return text + "\n";
}

}  // namespace stagecut
