#include "cli/profile_display.h"

#include <cmath>
#include <cstdio>
#include <string>

#include "cli/identical_layers_text.h"
#include "cli/text_table.h"
#include "cli/whole_model_text.h"
#include "core/profile_shards.h"
#include "core/units.h"
#include "validation/run_environment.h"

namespace stagecut {

namespace {

// One row per measured microbatch size: what a sample costs at each, for `stagecut plan`.
void printSizeTable(std::ostream& out, const Profile& profile) {
  out << "\n  per microbatch size (the table above is size " << profile.run.microbatch_size << ")\n";
  TextTable table;
  for (const char* header : {"size", "fwd ms", "bwd ms", "ms per sample", "activation", "layers vs whole"}) {
    table.addColumn(header, TextTable::Align::kRight);
  }
  for (const auto& entry : profile.microbatch_sizes) {
    double forward_ms = 0, backward_ms = 0;
    std::uint64_t activation = 0;
    for (const auto& layer : entry.layers) {
      forward_ms += layer.forward_ms.median;
      backward_ms += layer.backward_ms.median;
      activation += layer.activation_bytes;
    }
    table.addRow({std::to_string(entry.microbatch_size), formatMs(forward_ms), formatMs(backward_ms),
                  formatMs((forward_ms + backward_ms) / entry.microbatch_size), formatBytes(activation),
                  entry.whole_model ? formatPercent(entry.whole_model->sum_of_layers_vs_whole) : "-"});
  }
  table.print(out, "  ");
}

// One row per measured parallel degree: how each shard's compute and weights fall with the degree
// (the table above is model.config's degree), and the collectives the compute leaves to pay.
void printShardTable(std::ostream& out, const Profile& profile) {
  out << "\n  per parallel degree (the table above is " << degreesText(measuredDegrees(profile, "the profile").front())
      << ")\n";
  TextTable table;
  for (const char* header : {"degree", "fwd ms", "bwd ms", "vs first", "params", "collectives"}) {
    table.addColumn(header, header == std::string("degree") ? TextTable::Align::kLeft : TextTable::Align::kRight);
  }
  double first_ms = 0.0;
  for (const ShardCosts& shard : profile.shards) {
    double forward_ms = 0, backward_ms = 0;
    std::uint64_t params = 0, collective_bytes = 0;
    for (const auto& layer : shard.layers) {
      forward_ms += layer.forward_ms.median;
      backward_ms += layer.backward_ms.median;
      params += layer.params;
      if (layer.tp_collectives) {
        const auto& collectives = *layer.tp_collectives;
        collective_bytes += collectives.bytes * static_cast<std::uint64_t>(collectives.forward + collectives.backward);
      }
    }
    if (first_ms == 0.0) first_ms = forward_ms + backward_ms;
    table.addRow({degreesText(shard.degrees), formatMs(forward_ms), formatMs(backward_ms),
                  formatPercent((forward_ms + backward_ms) / first_ms), formatCount(params),
                  formatBytes(collective_bytes)});
  }
  table.print(out, "  ");
}

std::string roundList(const nlohmann::json& rounds) {
  std::string text;
  for (const auto& round : rounds) text += (text.empty() ? "" : ", ") + std::to_string(round.get<int>() + 1);
  return text;
}

// What the profile cost against the step it measured (run.extra, profiler/layer_profiler.cpp).
void printProfileCost(std::ostream& out, const Profile& profile) {
  const nlohmann::json& extra = profile.run.extra;
  if (!extra.contains("setup_s") || !extra.contains("whole_model_passes") || !profile.whole_model) return;
  const double elapsed_s = extra.value("elapsed_s", 0.0);
  const double step_s = (profile.whole_model->forward_ms + profile.whole_model->backward_ms) / 1000.0;
  const int passes = extra.value("whole_model_passes", 0);
  out << "  cost           " << formatMs(elapsed_s) << " s: " << formatMs(extra.value("setup_s", 0.0))
      << " s for the inputs and memory, then " << passes << " pass" << (passes == 1 ? "" : "es") << " of the "
      << (profile.whole_model->window.empty() ? "whole model" : "window");
  if (step_s > 0) {
    out << "; " << formatMs(elapsed_s / step_s) << " times " << (profile.whole_model->window.empty() ? "its" : "the window's")
        << " step";
  }
  out << "\n";
}

// The reference kernel between rounds (run.extra["pace"], profiler/round_pace.h).
void printPace(std::ostream& out, const nlohmann::json& extra) {
  const auto pace = extra.find("pace");
  if (pace == extra.end() || !pace->is_object() || !pace->contains("probes")) return;
  double lowest = 0, highest = 0;
  for (const auto& probe : (*pace)["probes"]) {
    const double ms = probe.value("ms", 0.0);
    lowest = lowest == 0 ? ms : std::min(lowest, ms);
    highest = std::max(highest, ms);
  }
  const double tolerance = pace->value("tolerance", 0.0);
  out << "  pace           reference kernel " << formatMs(lowest) << " to " << formatMs(highest) << " ms over "
      << (*pace)["probes"].size() << " probes between rounds (median " << formatMs(pace->value("median_ms", 0.0)) << " ms)";
  const nlohmann::json retimed = pace->value("retimed_rounds", nlohmann::json::array());
  const nlohmann::json kept = pace->value("odd_rounds_kept", nlohmann::json::array());
  if ((*pace)["probes"].size() < 3) {
    out << ": too few to tell a phase of the machine apart (a run of seconds)";
  } else if (retimed.empty() && kept.empty()) {
    out << ": steady within " << formatPercent(tolerance);
  }
  if (!retimed.empty()) {
    out << "; round" << (retimed.size() > 1 ? "s " : " ") << roundList(retimed) << " ran in a phase more than "
        << formatPercent(tolerance) << " off it and " << (retimed.size() > 1 ? "were" : "was") << " timed again";
  }
  out << "\n";
  if (!kept.empty()) {
    out << "  WARNING: round" << (kept.size() > 1 ? "s " : " ") << roundList(kept)
        << " still ran in an odd phase after re-timing and count as they are: profile again on a quiet machine\n";
  }
}

}  // namespace

void printProfileTable(std::ostream& out, const Profile& profile) {
  out << "profile of " << profile.model.name << " (" << profile.model.source << "), microbatch "
      << profile.run.microbatch_size;
  if (profile.run.seq_len > 0) out << ", seq " << profile.run.seq_len;
  out << ", " << profile.run.dtype << ", " << profile.device.kind << " \"" << profile.device.name
      << "\", " << profile.device.threads << " thread(s), LibTorch " << profile.device.torch << "\n\n";
  bool recompute = false;
  for (const auto& layer : profile.layers) recompute = recompute || layer.recompute_ms.has_value();
  TextTable table;
  std::vector<std::string> headers = {"#", "name", "fwd ms", "B ms", "W ms", "bwd ms"};
  if (recompute) headers.push_back("recompute ms");
  for (const char* header : {"cv", "params", "activation", "output"}) headers.push_back(header);
  for (const auto& header : headers) {
    table.addColumn(header, header == "name" ? TextTable::Align::kLeft : TextTable::Align::kRight);
  }
  for (const auto& layer : profile.layers) {
    const double cv = std::max(layer.forward_ms.cv, layer.backward_ms.cv);
    std::vector<std::string> row = {std::to_string(layer.index), layerNameCell(layer), formatMs(layer.forward_ms.median),
                                    formatMs(layer.backward_input_ms ? layer.backward_input_ms->median : 0.0),
                                    formatMs(layer.backward_weight_ms ? layer.backward_weight_ms->median : 0.0),
                                    formatMs(layer.backward_ms.median)};
    if (recompute) row.push_back(layer.recompute_ms ? formatMs(layer.recompute_ms->median) : "-");
    for (const auto& cell : {formatPercent(cv), formatCount(layer.params), formatBytes(layer.activation_bytes),
                             formatBytes(layer.output_bytes)}) {
      row.push_back(cell);
    }
    table.addRow(row);
  }
  table.print(out, "  ");
  double forward_ms = 0, backward_ms = 0;
  for (const auto& layer : profile.layers) {
    forward_ms += layer.forward_ms.median;
    backward_ms += layer.backward_ms.median;
  }
  out << "\n";
  for (const auto& line : identicalLayersLines(profile)) out << "  " << line << "\n";
  out << "  sum of layers  forward " << formatMs(forward_ms) << " ms, backward "
      << formatMs(backward_ms) << " ms per microbatch\n";
  if (profile.whole_model) {
    const auto& whole = *profile.whole_model;
    out << "  whole model    forward " << formatMs(whole.forward_ms) << " ms, backward "
        << formatMs(whole.backward_ms) << " ms; the layers' sum is "
        << formatPercent(std::abs(whole.sum_of_layers_vs_whole))
        << (whole.sum_of_layers_vs_whole >= 0 ? " above" : " below") << " the whole model" << wholeModelScope(profile)
        << "\n";
  }
  const auto reference = profile.device.extra.find("reference_kernel_ms");
  const auto change = profile.device.extra.find("reference_kernel_change");
  if (reference != profile.device.extra.end() && reference->is_number() && change != profile.device.extra.end() &&
      change->is_number()) {
    const double drift = change->get<double>();
    out << "  reference kernel " << formatMs(reference->get<double>()) << " ms (" << formatSignedPercent(drift)
        << " from the start of the run to its end; validate holds its ranks to it)\n";
    // The same threshold as validate's (validation/run_environment.h).
    if (std::abs(drift) > TrustThresholds{}.reference_drift) {
      out << "  WARNING: the machine's pace changed " << formatSignedPercent(drift)
          << " during the profile: other processes ran beside it; profile again on a quiet machine\n";
    }
  }
  printPace(out, profile.run.extra);
  printProfileCost(out, profile);
  const auto warmup = profile.device.extra.find("clock_warmup");
  if (warmup != profile.device.extra.end() && warmup->is_object()) {
    out << "  clock warm-up  " << formatMs(warmup->value("first_ms", 0.0)) << " ms of matrix products at first, "
        << formatMs(warmup->value("steady_ms", 0.0)) << " ms after " << warmup->value("samples", 0) << " repeats ("
        << formatMs(1000.0 * warmup->value("seconds", 0.0)) << " ms)"
        << (warmup->value("steady", false) ? ", steady before the first layer was timed\n"
                                             : "; WARNING: still not steady when the time ran out, so the first "
                                               "layers may be timed at a lower clock\n");
  }
  if (!profile.microbatch_sizes.empty()) printSizeTable(out, profile);
  if (!profile.shards.empty()) printShardTable(out, profile);
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
        progress.warmup ? 0.0
                        : (progress.round + static_cast<double>(progress.layer) / progress.layers) / progress.rounds_at_least;
    const std::string size = progress.sizes > 1 ? "microbatch " + std::to_string(progress.microbatch_size) + " (" +
                                                      std::to_string(progress.size_position + 1) + "/" +
                                                      std::to_string(progress.sizes) + "), "
                                                : "";
    if (progress.warmup) {
      bar.update(fraction, size + "warm-up pass of the whole model, " + seconds(progress.elapsed_s) + " elapsed");
      return;
    }
    bar.update(fraction, size + "round " + std::to_string(progress.round + 1) + ", layer " +
                             std::to_string(progress.layer + 1) + "/" + std::to_string(progress.layers) + " " +
                             progress.layer_name + ", " + seconds(progress.elapsed_s) + " elapsed" +
                             (progress.estimated_left_s >= 0 ? ", ~" + seconds(progress.estimated_left_s) + " left"
                                                             : std::string()));
  };
}

}  // namespace stagecut
