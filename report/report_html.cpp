#include "partitioner/framework_formats.h"
#include "partitioner/schedule_choices.h"
#include "report/report_html.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "core/units.h"
#include "report/html_text.h"
#include "report/layer_chart.h"
#include "report/memory_chart.h"
#include "report/validation_view.h"
#include "schedule/chrome_trace.h"
#include "schedule/svg_gantt.h"

namespace stagecut {

namespace {


// Kept in the page so it opens anywhere without a network: no fonts, scripts or images fetched.
const char* const kStyle = R"css(
:root { --ink: #1f2328; --muted: #5f6b7a; --line: #d8dee4; --soft: #f6f8fa; --accent: #4e79a7;
        --bad: #d62728; --good: #2e7d32; }
* { box-sizing: border-box; }
body { margin: 0; background: #eef1f5; color: var(--ink);
       font: 15px/1.5 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; }
main { max-width: 1280px; margin: 0 auto; padding: 28px 32px 48px; }
header h1 { font-size: 30px; margin: 0 0 4px; letter-spacing: -0.01em; }
header h1 .model { color: var(--accent); }
.lede { color: var(--muted); margin: 0 0 18px; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(220px, 1fr)); gap: 14px; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 10px; padding: 14px 18px; }
.card .label { color: var(--muted); font-size: 13px; text-transform: uppercase; letter-spacing: .04em; }
.card .value { font-size: 26px; font-weight: 700; margin: 2px 0; font-variant-numeric: tabular-nums; }
.card .detail { color: var(--muted); font-size: 13px; }
.card.highlight { border-color: var(--accent); box-shadow: inset 4px 0 0 var(--accent); }
nav { margin: 22px 0 8px; font-size: 14px; }
nav a { color: var(--accent); text-decoration: none; margin-right: 18px; }
section { background: #fff; border: 1px solid var(--line); border-radius: 12px; padding: 20px 24px;
          margin-top: 22px; }
section h2 { font-size: 21px; margin: 0 0 6px; }
section h3 { font-size: 16px; margin: 22px 0 4px; }
section p { margin: 4px 0 12px; max-width: 78em; }
.note { color: var(--muted); font-size: 13.5px; }
svg.chart { display: block; width: 100%; height: auto; margin: 8px 0; }
table { border-collapse: collapse; margin: 10px 0 6px; font-size: 14px; font-variant-numeric: tabular-nums; }
th, td { padding: 6px 12px; border-bottom: 1px solid var(--line); text-align: right; white-space: nowrap; }
th { background: var(--soft); font-weight: 600; color: #333; }
th:first-child, td:first-child { text-align: left; }
tr.chosen td { background: #eef4fb; font-weight: 600; }
td.name { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 13px; }
.swatch { display: inline-block; width: 11px; height: 11px; border-radius: 2px; margin-right: 7px;
          vertical-align: -1px; }
.worse { color: var(--bad); }
.better { color: var(--good); }
.badge { display: inline-block; padding: 1px 9px; border-radius: 10px; font-size: 12.5px; font-weight: 700; }
.badge.pass { background: #e3f4e5; color: var(--good); }
.badge.fail { background: #fde8e8; color: var(--bad); }
.split-head { display: flex; align-items: baseline; gap: 14px; margin-top: 18px; }
.split-head h3 { margin: 0; }
.split-head .note { margin: 0; }
details { margin: 10px 0; }
summary { cursor: pointer; color: var(--accent); font-size: 14px; }
pre { background: var(--soft); border: 1px solid var(--line); border-radius: 6px; padding: 8px 12px;
      overflow-x: auto; font-size: 12.5px; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 4px 22px; margin: 8px 0 0; }
dt { color: var(--muted); }
dd { margin: 0; font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 13.5px; word-break: break-all; }
footer { color: var(--muted); font-size: 12.5px; margin-top: 22px; text-align: center; }
@media print { body { background: #fff; } section { break-inside: avoid; } }
)css";

std::string ratioText(double ratio) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2f\xc3\x97", ratio);  // "1.23×"
  return buffer;
}

std::string swatch(const std::string& colour) {
  return "<span class=\"swatch\" style=\"background:" + colour + "\"></span>";
}

std::string card(const std::string& label, const std::string& value, const std::string& detail,
                 bool highlight = false) {
  return std::string("<div class=\"card") + (highlight ? " highlight" : "") + "\"><div class=\"label\">" +
         label + "</div><div class=\"value\">" + value + "</div><div class=\"detail\">" + detail +
         "</div></div>\n";
}

// Each inline copy of a Gantt chart gets its own pattern id: ids are page-wide in HTML.
std::string inlineGantt(std::string svg, int index) {
  if (svg.rfind("<?xml", 0) == 0) svg.erase(0, svg.find('\n') + 1);
  const std::string id = "idle-" + std::to_string(index);
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"id=\"idle\"", "id=\"" + id + "\""},
                                 std::pair<std::string, std::string>{"url(#idle)", "url(#" + id + ")"}}) {
    for (std::size_t at = svg.find(from); at != std::string::npos; at = svg.find(from, at + to.size())) {
      svg.replace(at, from.size(), to);
    }
  }
  const std::size_t open = svg.find("<svg ");
  if (open != std::string::npos) svg.insert(open + 5, "class=\"chart\" role=\"img\" ");
  return svg;
}

// Which of the compared splits a validation ran (by layers per stage), e.g. "compute".
std::vector<std::string> matchingSplits(const ReportInputs& inputs, const ValidationView& view) {
  std::vector<std::string> names;
  for (const Partition& split : inputs.splits) {
    if (split.layersPerStage() == view.layers_per_stage) names.push_back(split.method);
  }
  return names;
}

bool matches(const std::vector<std::string>& names, const std::string& method) {
  return std::find(names.begin(), names.end(), method) != names.end();
}

struct MeasuredSpeedup {
  double ratio = 0.0;  ///< params step / compute step
  const ValidationView* compute = nullptr;
  const ValidationView* params = nullptr;
};

std::optional<MeasuredSpeedup> measuredSpeedup(const ReportInputs& inputs,
                                               const std::vector<ValidationView>& views) {
  MeasuredSpeedup speedup;
  for (const ValidationView& view : views) {
    const std::vector<std::string> names = matchingSplits(inputs, view);
    if (!speedup.compute && matches(names, "compute")) speedup.compute = &view;
    if (!speedup.params && matches(names, "params") && !matches(names, "compute")) speedup.params = &view;
  }
  if (!speedup.compute || !speedup.params || speedup.compute->measured_step_ms <= 0) return std::nullopt;
  speedup.ratio = speedup.params->measured_step_ms / speedup.compute->measured_step_ms;
  return speedup;
}

// One sentence naming the layers where parameter share and compute share disagree most.
std::string disagreementSentence(const Profile& profile) {
  double total_ms = 0, total_params = 0;
  for (const LayerCost& layer : profile.layers) {
    total_ms += layerComputeMs(layer);
    total_params += static_cast<double>(layer.params);
  }
  if (total_ms <= 0 || total_params <= 0) return "";
  int params_heavy = -1, compute_heavy = -1;
  double most_params = 0, most_compute = 0;
  for (std::size_t i = 0; i < profile.layerCount(); ++i) {
    const double p = static_cast<double>(profile.layers[i].params) / total_params;
    const double c = layerComputeMs(profile.layers[i]) / total_ms;
    if (p - c > most_params) most_params = p - c, params_heavy = static_cast<int>(i);
    if (c - p > most_compute) most_compute = c - p, compute_heavy = static_cast<int>(i);
  }
  auto share = [](double fraction) { return formatPercent(fraction, fraction < 0.1 ? 1 : 0); };
  auto describe = [&](int i) {
    const LayerCost& layer = profile.layers[i];
    return "<b>" + escapeMarkup(layer.name) + "</b> holds " +
           share(static_cast<double>(layer.params) / total_params) + " of the parameters and " +
           share(layerComputeMs(layer) / total_ms) + " of the compute";
  };
  // Below ten points of share either way a parameter-balanced split is nearly a compute-balanced one.
  constexpr double kNotable = 0.10;
  if (most_params < kNotable && most_compute < kNotable) {
    return "Parameters and compute agree closely in this model, so a parameter-balanced split "
           "lands near the compute-balanced one.";
  }
  std::string text = "Parameters and compute disagree: ";
  if (params_heavy >= 0 && most_params >= kNotable) text += describe(params_heavy);
  if (compute_heavy >= 0 && most_compute >= kNotable) {
    text += (text.back() == ' ' ? "" : ", while ") + describe(compute_heavy);
  }
  return text + ". A split that balances parameters therefore does not balance time.";
}

std::string headerSection(const ReportInputs& inputs, const std::vector<ValidationView>& views) {
  const Profile& profile = inputs.profile;
  const Partition& chosen = inputs.chosen;
  const std::string model = profile.model.name.empty() ? inputs.profile_source : profile.model.name;
  std::string html = "<header>\n<h1>stagecut report: <span class=\"model\">" + escapeMarkup(model) + "</span></h1>\n";
  html += "<p class=\"lede\">" + escapeMarkup(inputs.profile_source) + " &middot; " +
          std::to_string(profile.layerCount()) + " layers &middot; " +
          std::to_string(chosen.stages.size()) + " stages &middot; " +
          std::to_string(inputs.microbatches) + " microbatches per step</p>\n<div class=\"cards\">\n";
  html += card("Chosen split (" + escapeMarkup(chosen.method) + ")",
               escapeMarkup(joinNumbers(chosen.layersPerStage())),
               "layers per stage; bottleneck " + escapeMarkup(formatMs(chosen.bottleneck_ms)) + " ms", true);
  html += card("Predicted step", escapeMarkup(formatMs(chosen.predicted_step_ms)) + " ms",
               "bubble " + escapeMarkup(formatPercent(chosen.predicted_bubble)) + "; lower bound " +
                   escapeMarkup(formatMs(chosen.lower_bound_ms)) + " ms per stage");
  for (const Partition& split : inputs.splits) {
    if (split.method == chosen.method || chosen.predicted_step_ms <= 0) continue;
    const double slower = split.predicted_step_ms / chosen.predicted_step_ms - 1.0;
    if (split.layersPerStage() == chosen.layersPerStage()) {
      html += card("vs " + escapeMarkup(split.method) + " split", "same split",
                   "here " + escapeMarkup(split.method) + " happens to cut where " +
                       escapeMarkup(chosen.method) + " does");
      continue;
    }
    html += card("vs " + escapeMarkup(split.method) + " split",
                 "<span class=\"" + std::string(slower > 0.005 ? "worse" : "") + "\">" +
                     escapeMarkup(formatSignedPercent(slower)) + "</span>",
                 "its predicted step (" + escapeMarkup(joinNumbers(split.layersPerStage())) + ": " +
                     escapeMarkup(formatMs(split.predicted_step_ms)) + " ms)");
  }
  if (const auto speedup = measuredSpeedup(inputs, views)) {
    html += card("Measured speed-up", escapeMarkup(ratioText(speedup->ratio)),
                 "compute split " + escapeMarkup(formatMs(speedup->compute->measured_step_ms)) +
                     " ms vs params split " + escapeMarkup(formatMs(speedup->params->measured_step_ms)) +
                     " ms per step, run for real", true);
  }
  html += "</div>\n</header>\n<nav><a href=\"#layers\">Layers</a><a href=\"#splits\">Splits</a>"
          "<a href=\"#schedules\">Schedules</a>";
  if (!views.empty()) html += "<a href=\"#validation\">Validation</a>";
  html += "<a href=\"#memory\">Memory</a><a href=\"#provenance\">Provenance</a></nav>\n";
  return html;
}

std::string optionalMs(const std::optional<TimeStatsMs>& stats) {
  return stats ? formatMs(stats->median) : "&ndash;";
}

std::string layersSection(const Profile& profile) {
  std::string html = "<section id=\"layers\">\n<h2>Per-layer costs</h2>\n";
  html += "<p>" + disagreementSentence(profile) + "</p>\n";
  html += renderLayerChart(profile);
  html += "<details><summary>All layers as a table</summary>\n<table>\n<tr><th>#</th><th>layer</th>"
          "<th>kind</th><th>forward ms</th><th>backward ms</th><th>B ms</th><th>W ms</th>"
          "<th>params</th><th>activations</th><th>output</th></tr>\n";
  for (const LayerCost& layer : profile.layers) {
    html += "<tr><td>" + std::to_string(layer.index) + "</td><td class=\"name\">" + escapeMarkup(layer.name) +
            "</td><td>" + escapeMarkup(layer.kind) + "</td><td>" + formatMs(layer.forward_ms.median) +
            "</td><td>" + formatMs(layer.backward_ms.median) + "</td><td>" +
            optionalMs(layer.backward_input_ms) + "</td><td>" + optionalMs(layer.backward_weight_ms) +
            "</td><td>" + formatCount(layer.params) + "</td><td>" + formatBytes(layer.activation_bytes) +
            "</td><td>" + formatBytes(layer.output_bytes) + "</td></tr>\n";
  }
  html += "</table>\n<p class=\"note\">Times are medians per microbatch; activations are what a layer "
          "keeps alive for its backward, per microbatch.</p></details>\n</section>\n";
  return html;
}

std::string splitsSection(const ReportInputs& inputs) {
  const Partition& chosen = inputs.chosen;
  std::string html = "<section id=\"splits\">\n<h2>Splits compared</h2>\n";
  html += "<p><b>uniform</b>: equal layer counts, the first stages take the remainder (DeepSpeed's "
          "<code>partition_method=\"uniform\"</code>); <b>params</b>: DeepSpeed's "
          "<code>partition_method=\"parameters\"</code> (both over the layers before the loss, which "
          "joins the last stage); <b>compute</b>: stagecut's exact optimum of the measured times among "
          "the splits every framework it prints can run (Megatron, DeepSpeed, torchgpipe, fairscale, "
          "PiPPy, torchtitan); <b>free</b>, where it differs: the optimum over any split, which "
          "stagecut's own validate runs and the frameworks may not. A pipeline runs at the pace of its "
          "slowest stage, the bottleneck.</p>\n";
  html += "<table>\n<tr><th>split</th><th>layers per stage</th><th>bottleneck ms</th>"
          "<th>predicted step ms</th><th>bubble</th><th>step vs " + escapeMarkup(chosen.method) +
          "</th><th>largest stage memory</th></tr>\n";
  for (const Partition& split : inputs.splits) {
    std::uint64_t memory = 0;
    for (const StageCost& stage : split.stages) memory = std::max(memory, stage.memory_bytes);
    const double versus = chosen.predicted_step_ms > 0 ? split.predicted_step_ms / chosen.predicted_step_ms - 1.0 : 0.0;
    const bool is_chosen = split.method == chosen.method;
    html += std::string("<tr") + (is_chosen ? " class=\"chosen\"" : "") + "><td>" +
            swatch(splitColour(split.method)) + escapeMarkup(split.method) + "</td><td>" +
            escapeMarkup(joinNumbers(split.layersPerStage())) + "</td><td>" + formatMs(split.bottleneck_ms) +
            "</td><td>" + formatMs(split.predicted_step_ms) + "</td><td>" +
            formatPercent(split.predicted_bubble) + "</td><td" +
            (versus > 0.005 ? " class=\"worse\"" : "") + ">" +
            (is_chosen ? std::string("&ndash;") : formatSignedPercent(versus)) + "</td><td>" +
            formatBytes(memory) + "</td></tr>\n";
  }
  html += "</table>\n";
  for (const Partition& split : inputs.splits) {
    html += "<div class=\"split-head\"><h3>" + swatch(splitColour(split.method)) + escapeMarkup(split.method) +
            " split: " + escapeMarkup(joinNumbers(split.layersPerStage())) + "</h3><p class=\"note\">"
            "bottleneck " + formatMs(split.bottleneck_ms) + " ms (red), stages on one scale for all splits; "
            "dashed lines are stage boundaries</p></div>\n";
    html += renderSplitChart(inputs.profile, split, inputs.splits);
  }
  const FrameworkOutputs outputs = frameworkOutputs(inputs.profile, chosen.layersPerStage());
  if (!outputs.empty()) {
    html += "<details><summary>The " + escapeMarkup(chosen.method) +
            " split in each framework's format</summary>\n<table>\n";
    for (const auto& [format, text] : outputs) {
      html += "<tr><td>" + escapeMarkup(format) + "</td><td style=\"text-align:left\"><pre>" +
              escapeMarkup(text) + "</pre></td></tr>\n";
    }
    html += "</table></details>\n";
  }
  return html + "</section>\n";
}

// Each schedule with its own best split, as `compare` lists them: a chunked schedule is judged on
// the chunking made for it, not on the compute split cut into even pieces as drawn above.
std::string scheduleChoicesTable(const std::vector<ScheduleComparison>& choices) {
  if (choices.empty()) return "";
  const ScheduleComparison* baseline = choices.front().split ? &choices.front() : nullptr;
  std::string html = "<h3 id=\"schedule-choices\">Each schedule on its own best split</h3>\n<p>The chunked "
                     "schedules cut into N x v chunks for themselves (<code>stagecut partition --schedule S "
                     "--chunks v</code> prints each); step and bubble simulated under the schedule, memory the "
                     "fullest rank's predicted peak.</p>\n<table>\n<tr><th>schedule</th><th>v</th>"
                     "<th>layers per chunk</th><th>slowest rank ms</th><th>step ms</th><th>bubble</th>"
                     "<th>peak memory</th><th>step vs " +
                     (baseline ? escapeMarkup(scheduleDisplayName(baseline->schedule)) : std::string("first")) +
                     "</th><th>optimal</th></tr>\n";
  std::string left_out;
  for (const ScheduleComparison& choice : choices) {
    const std::string name = scheduleDisplayName(choice.schedule);
    if (!choice.split) {
      left_out += "<p class=\"note\">Left out: " + escapeMarkup(name) +
                  (choice.placement.chunked() ? " (v = " + std::to_string(choice.placement.chunks_per_rank) + ")" : std::string()) + ": " +
                  escapeMarkup(choice.left_out) + "</p>\n";
      continue;
    }
    const Partition& split = choice.split->partition;
    const double versus = baseline && baseline->step_ms > 0 ? choice.step_ms / baseline->step_ms - 1.0 : 0.0;
    html += "<tr><td>" + escapeMarkup(name) + "</td><td>" + std::to_string(choice.placement.chunks_per_rank) + "</td><td>" +
            escapeMarkup(joinNumbers(split.layersPerStage())) + "</td><td>" + formatMs(split.bottleneck_ms) +
            "</td><td>" + formatMs(choice.step_ms) + "</td><td>" + formatPercent(choice.bubble) + "</td><td>" +
            formatBytes(static_cast<std::uint64_t>(choice.peak_bytes)) + "</td><td" +
            (versus > 0.005 ? " class=\"worse\"" : "") + ">" +
            (&choice == baseline ? std::string("&ndash;") : formatSignedPercent(versus)) + "</td><td>" +
            escapeMarkup(optimalityText(split, choice.exact)) +
            "</td></tr>\n";
  }
  return html + "</table>\n" + left_out;
}

std::string schedulesSection(const ReportInputs& inputs, int* chart_index) {
  std::string html = "<section id=\"schedules\">\n<h2>Schedules on the " + escapeMarkup(inputs.chosen.method) +
                     " split</h2>\n";
  if (inputs.schedules.empty()) {
    html += "<p class=\"note\">No schedule was simulated.</p>\n";
  } else {
    html += "<p>Each schedule simulated op by op on the split's measured stage costs. Hatched time is "
            "idle (the bubble); a shorter row is a shorter step.</p>\n<table>\n<tr><th>schedule</th>"
            "<th>step ms</th><th>bubble</th><th>most microbatches in flight</th><th>peak activations</th></tr>\n";
    std::vector<SimulatedSchedule> views;
    for (const ReportSchedule& run : inputs.schedules) {
      int in_flight = 0;
      std::uint64_t activations = 0;
      for (const RankStats& rank : run.result.ranks) {
        in_flight = std::max(in_flight, rank.peak_in_flight);
        activations = std::max(activations, rank.peak_activation_bytes);
      }
      html += "<tr><td>" + escapeMarkup(scheduleTitle(run.schedule)) + "</td><td>" + formatMs(run.result.step_ms) + "</td><td>" +
              formatPercent(run.result.bubble) + "</td><td>" + std::to_string(in_flight) + "</td><td>" +
              formatBytes(activations) + "</td></tr>\n";
      views.push_back({&run.schedule, &run.result});
    }
    html += "</table>\n";
    SvgGanttOptions options;
    options.time_unit = "ms";
    html += inlineGantt(renderSvgGantt(views, options), (*chart_index)++);
  }
  for (const std::string& note : inputs.notes) html += "<p class=\"note\">" + escapeMarkup(note) + "</p>\n";
  html += scheduleChoicesTable(inputs.schedule_choices);
  return html + "</section>\n";
}

std::string validationSection(const ReportInputs& inputs, const std::vector<ValidationView>& views,
                              int* chart_index) {
  if (views.empty()) return "";
  std::string html = "<section id=\"validation\">\n<h2>Predicted vs measured</h2>\n"
                     "<p>The split run for real as a pipeline, with the same op lists the simulator "
                     "used. Each pair shares one time axis: the predicted step above, the measured "
                     "(median) step below.</p>\n";
  if (const auto speedup = measuredSpeedup(inputs, views)) {
    html += "<p>Measured speed-up of the compute split over the params split: <b>" +
            escapeMarkup(ratioText(speedup->ratio)) + "</b> (" + formatMs(speedup->params->measured_step_ms) +
            " ms &rarr; " + formatMs(speedup->compute->measured_step_ms) + " ms per step).</p>\n";
  }
  for (const ValidationView& view : views) {
    std::vector<std::string> names = matchingSplits(inputs, view);
    // The chosen split's name leads; the others it equals follow as "(same as uniform)".
    std::stable_partition(names.begin(), names.end(), [&](const std::string& name) { return name == inputs.chosen.method; });
    std::string which = names.empty() ? "split" : names.front() + " split";
    for (std::size_t i = 1; i < names.size(); ++i) which += (i == 1 ? " (same as " : ", ") + names[i];
    if (names.size() > 1) which += ")";
    html += "<h3>" + escapeMarkup(which) + " " +
            escapeMarkup(joinNumbers(view.layers_per_stage)) + ", " +
            escapeMarkup(scheduleDisplayName(view.schedule)) + ", " + std::to_string(view.microbatches) +
            " microbatches <span class=\"note\">(" + escapeMarkup(view.source) + ")</span></h3>\n";
    html += "<table>\n<tr><th>measured step</th><th>predicted step</th><th>error</th><th>gradient check</th>";
    for (std::size_t r = 0; r < view.ranks.size(); ++r) html += "<th>rank " + std::to_string(r) + " peak memory</th>";
    html += "</tr>\n<tr><td>" + formatMs(view.measured_step_ms) + " ms</td><td>" +
            formatMs(view.predicted_step_ms) + " ms</td><td>" + formatSignedPercent(view.error) + "</td><td>";
    if (view.grad_check.empty()) {
      html += "&ndash;";
    } else {
      char diff[32];
      std::snprintf(diff, sizeof diff, "%.1e", view.grad_max_rel_diff);
      html += "<span class=\"badge " + std::string(view.grad_check == "pass" ? "pass" : "fail") + "\">" +
              escapeMarkup(view.grad_check) + "</span> <span class=\"note\">max rel. diff " + diff + "</span>";
    }
    html += "</td>";
    for (const ValidationRankView& rank : view.ranks) {
      html += "<td>" + (rank.measured_peak_bytes >= 0 ? formatBytes(static_cast<std::uint64_t>(rank.measured_peak_bytes))
                                                       : std::string("&ndash;")) + "</td>";
    }
    html += "</tr>\n</table>\n";
    for (const std::string& warning : view.environment_warnings) {
      html += "<p class=\"worse\"><b>Not trusted:</b> " + escapeMarkup(warning) + "</p>\n";
    }
    std::vector<std::vector<double>> measured_memory, predicted_memory;
    for (const ValidationRankView& rank : view.ranks) {
      measured_memory.push_back(rank.measured_memory_bytes);
      predicted_memory.push_back(rank.predicted_memory_bytes);
    }
    html += renderMemoryTimelineChart(measured_memory, predicted_memory, inputs.memory_cap_bytes);
    SvgGanttOptions options;
    options.time_unit = "ms";
    html += inlineGantt(renderSvgGantt({{&view.predicted_ops, &view.predicted},
                                        {&view.measured_ops, &view.measured}}, options),
                        (*chart_index)++);
  }
  return html + "</section>\n";
}

std::string memorySection(const ReportInputs& inputs) {
  std::string html = "<section id=\"memory\">\n<h2>Memory per stage</h2>\n<p>Each stage's predicted peak: weights, gradients and "
                     "optimizer state, the activations the schedule keeps in flight, buffers and the "
                     "largest op's temporaries at the fullest moment of the step, for each split.";
  if (inputs.memory_cap_bytes.empty()) {
    html += " No memory cap was given (<code>--memory-cap 80GiB</code> draws one).</p>\n";
  } else {
    std::string caps;
    for (std::uint64_t cap : inputs.memory_cap_bytes) caps += (caps.empty() ? "" : ", ") + formatBytes(cap);
    html += " Memory cap: <b>" + escapeMarkup(caps) + "</b>" +
            (inputs.memory_cap_bytes.size() > 1 ? " (per stage)" : " per stage") +
            "; a red outline marks a stage above it.</p>\n";
  }
  html += renderMemoryChart(inputs.splits, inputs.memory_cap_bytes);
  const std::string parts = renderMemoryPartsChart(inputs.chosen, inputs.memory_cap_bytes);
  if (!parts.empty()) {
    html += "<p>The " + escapeMarkup(inputs.chosen.method) +
            " split's peaks by part (docs/metrics.md): what a cap has to hold at each stage's fullest moment.</p>\n" + parts;
  }
  return html + "</section>\n";
}

void provenanceRow(std::string* html, const std::string& label, const std::string& value) {
  *html += "<dt>" + escapeMarkup(label) + "</dt><dd>" + escapeMarkup(value.empty() ? "not recorded" : value) + "</dd>\n";
}

std::string provenanceSection(const ReportInputs& inputs) {
  const Profile& profile = inputs.profile;
  const ReportProvenance& p = inputs.provenance;
  std::string device = p.device;
  if (device.empty()) {
    device = profile.device.kind;
    if (!profile.device.name.empty()) device += (device.empty() ? "" : ": ") + profile.device.name;
  }
  const int threads = p.threads > 0 ? p.threads : profile.device.threads;
  const std::string torch = p.torch_version.empty() ? profile.device.torch : p.torch_version;
  std::string run;
  if (profile.run.microbatch_size > 0) run += "microbatch " + std::to_string(profile.run.microbatch_size);
  if (profile.run.seq_len > 0) run += (run.empty() ? "" : ", ") + std::string("sequence ") + std::to_string(profile.run.seq_len);
  if (!profile.run.dtype.empty()) run += (run.empty() ? "" : ", ") + profile.run.dtype;
  if (profile.run.repeats > 0) run += (run.empty() ? "" : ", ") + std::to_string(profile.run.repeats) + " repeats";
  if (!profile.run.timer.empty()) run += (run.empty() ? "" : ", timer ") + profile.run.timer;

  std::string html = "<section id=\"provenance\">\n<h2>Provenance</h2>\n<dl>\n";
  provenanceRow(&html, "model", profile.model.name + (profile.model.source.empty() ? "" : " (" + profile.model.source + ")"));
  provenanceRow(&html, "profile", inputs.profile_source);
  provenanceRow(&html, "device", device);
  provenanceRow(&html, "threads", threads > 0 ? std::to_string(threads) : "");
  provenanceRow(&html, "LibTorch", torch);
  provenanceRow(&html, "measured with", run);
  for (const ReportValidation& validation : inputs.validations) provenanceRow(&html, "validation", validation.source);
  provenanceRow(&html, "stagecut", p.stagecut_version);
  provenanceRow(&html, "command", p.command_line);
  provenanceRow(&html, "date", p.date);
  return html + "</dl>\n</section>\n";
}

}  // namespace

std::string renderReportHtml(const ReportInputs& inputs) {
  std::vector<ValidationView> views;
  for (const ReportValidation& validation : inputs.validations) {
    views.push_back(validationView(validation.report, validation.source, inputs.profile.layerCount()));
  }
  const std::string model = inputs.profile.model.name.empty() ? inputs.profile_source : inputs.profile.model.name;
  int chart_index = 0;
  std::string html = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                     "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                     "<title>stagecut report: " + escapeMarkup(model) + "</title>\n<style>" + kStyle +
                     "</style>\n</head>\n<body>\n<main>\n";
  html += headerSection(inputs, views);
  html += layersSection(inputs.profile);
  html += splitsSection(inputs);
  html += schedulesSection(inputs, &chart_index);
  html += validationSection(inputs, views, &chart_index);
  html += memorySection(inputs);
  html += provenanceSection(inputs);
  html += "<footer>Written by " + escapeMarkup(inputs.provenance.stagecut_version.empty() ? "stagecut" : inputs.provenance.stagecut_version) +
          ". Self-contained: no script, no network.</footer>\n</main>\n</body>\n</html>\n";
  return html;
}

}  // namespace stagecut
