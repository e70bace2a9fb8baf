#include "cli/profile_display.h"

#include <cmath>
#include <cstdio>

#include "cli/text_table.h"
#include "core/units.h"

namespace stagecut {

void printProfileTable(std::ostream& out, const Profile& profile) {
  out << "profile of " << profile.model.name << " (" << profile.model.source << "), microbatch "
      << profile.run.microbatch_size;
  if (profile.run.seq_len > 0) out << ", seq " << profile.run.seq_len;
  out << ", " << profile.run.dtype << ", " << profile.device.kind << " \"" << profile.device.name
      << "\", " << profile.device.threads << " thread(s), LibTorch " << profile.device.torch << "\n\n";
  TextTable table;
  for (const char* header : {"#", "name", "fwd ms", "B ms", "W ms", "bwd ms", "cv", "params",
                             "activation", "output"}) {
    const bool text = std::string(header) == "name";
    table.addColumn(header, text ? TextTable::Align::kLeft : TextTable::Align::kRight);
  }
  for (const auto& layer : profile.layers) {
    const double cv = std::max(layer.forward_ms.cv, layer.backward_ms.cv);
    table.addRow({std::to_string(layer.index), layer.name, formatMs(layer.forward_ms.median),
                  formatMs(layer.backward_input_ms ? layer.backward_input_ms->median : 0.0),
                  formatMs(layer.backward_weight_ms ? layer.backward_weight_ms->median : 0.0),
                  formatMs(layer.backward_ms.median), formatPercent(cv), formatCount(layer.params),
                  formatBytes(layer.activation_bytes), formatBytes(layer.output_bytes)});
  }
  table.print(out, "  ");
  double forward_ms = 0, backward_ms = 0;
  for (const auto& layer : profile.layers) {
    forward_ms += layer.forward_ms.median;
    backward_ms += layer.backward_ms.median;
  }
  out << "\n  sum of layers  forward " << formatMs(forward_ms) << " ms, backward "
      << formatMs(backward_ms) << " ms per microbatch\n";
  if (profile.whole_model) {
    const auto& whole = *profile.whole_model;
    out << "  whole model    forward " << formatMs(whole.forward_ms) << " ms, backward "
        << formatMs(whole.backward_ms) << " ms; the layers' sum is "
        << formatPercent(std::abs(whole.sum_of_layers_vs_whole))
        << (whole.sum_of_layers_vs_whole >= 0 ? " above" : " below") << " the whole model\n";
  }
}

namespace {

std::string seconds(double s) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.0f s", s);
  return buffer;
}

}  // namespace

std::function<void(const MeasureProgress&)> profileProgressReporter(ProgressBar& bar) {
  return [&bar](const MeasureProgress& progress) {
    const double fraction =
        (progress.round + static_cast<double>(progress.layer) / progress.layers) / progress.rounds_at_least;
    bar.update(fraction, std::string(progress.warmup ? "warm-up" : "round " + std::to_string(progress.round)) +
                             ", layer " + std::to_string(progress.layer + 1) + "/" + std::to_string(progress.layers) +
                             " " + progress.layer_name + ", " + seconds(progress.elapsed_s) + " elapsed, ~" +
                             seconds(progress.estimated_left_s) + " left");
  };
}

}  // namespace stagecut
