#include <catch2/catch.hpp>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "schedule/ascii_gantt.h"
#include "schedule/chrome_trace.h"
#include "schedule/data_parallel.h"
#include "schedule/generators.h"
#include "schedule/op_palette.h"
#include "schedule/simulator.h"
#include "schedule/stage_costs.h"
#include "schedule/svg_gantt.h"
#include "schedule/time_axis.h"
#include "tests/test_support.h"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using stagecut::generateSchedule;
using stagecut::Schedule;
using stagecut::SimulationResult;

namespace {

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t count = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
  return count;
}

}  // namespace

TEST_CASE("niceStep rounds up to 1, 2, 2.5 or 5 times a power of ten", "[schedule][charts]") {
  CHECK(stagecut::niceStep(0.29) == Approx(0.5));
  CHECK(stagecut::niceStep(0.5) == Approx(0.5));
  CHECK(stagecut::niceStep(2.1) == Approx(2.5));
  CHECK(stagecut::niceStep(7) == Approx(10));
  CHECK(stagecut::niceStep(0.3 / 0.1) == Approx(5));
  CHECK(stagecut::niceStep(0) == 1.0);
}

TEST_CASE("every chart colours F, B, W and A from one palette", "[schedule][charts]") {
  using stagecut::OpKind;
  CHECK(stagecut::hexColour(stagecut::opKindColour(OpKind::kForward)) == "#4e79a7");
  CHECK(stagecut::hexColour(stagecut::opKindColour(OpKind::kBackward)) == "#f28e2b");
  CHECK(stagecut::hexColour(stagecut::opKindColour(OpKind::kWeight)) == "#59a14f");
  CHECK(stagecut::hexColour(stagecut::opKindColour(OpKind::kAllReduce)) == "#e15759");
  // Channels are rounded, as the Gantt chart's lighter chunks need.
  CHECK(stagecut::hexColour({254.4, 0.6, 127.5}) == "#fe0180");
}

TEST_CASE("the text Gantt of a two-stage 1F1B step", "[schedule][charts]") {
  // Unit costs F = 1, B = 2: rank 0 runs F0 F1, waits for B0 until 4, B0 to 6, waits for B1
  // until 7, B1 to 9. Rank 1 runs F0 at 1, B0 to 4, F1, B1 to 7. At width 40 one column is 0.5.
  const Schedule schedule = generateSchedule("1f1b", 2, 2);
  const SimulationResult result = stagecut::simulate(schedule, stagecut::unitCosts(schedule));
  stagecut::AsciiGanttOptions options;
  options.width_columns = 40;
  options.time_unit = "units";
  CHECK(stagecut::renderAsciiGantt(schedule, result, options) ==
        "rank 0  0011....0###..1###\n"
        "rank 1  ..000###111###....\n"
        "        |---------|--------\n"
        "        0         5 units\n"
        "        F: microbatch number   B: #   idle: .   one column = 0.5 units\n");
  // Fitted to twice the step, the same chart takes half the columns: 1 unit each.
  options.fit_ms = 2 * result.step_ms;
  CHECK_THAT(stagecut::renderAsciiGantt(schedule, result, options),
             StartsWith("rank 0  01..##.##\nrank 1  .0##1##..\n"));
}

TEST_CASE("the text Gantt marks W and numbers wide backward ops", "[schedule][charts]") {
  const Schedule schedule = generateSchedule("zb-h1", 2, 2);
  const SimulationResult result = stagecut::simulate(schedule, stagecut::unitCosts(schedule));
  stagecut::AsciiGanttOptions options;
  options.width_columns = 30;  // 21 columns for 7 units: one column is 0.5
  const std::string chart = stagecut::renderAsciiGantt(schedule, result, options);
  CHECK_THAT(chart, StartsWith("rank 0  0011..##==##==\nrank 1  ..00##11##====\n"));
  CHECK_THAT(chart, Contains("W: ="));
  options.width_columns = 40;  // 0.25 per column: B spans 4 cells, room for its number
  CHECK_THAT(stagecut::renderAsciiGantt(schedule, result, options), Contains("0###0==="));
}

TEST_CASE("the Chrome trace has one track per rank and one event per op", "[schedule][charts]") {
  const Schedule gpipe = generateSchedule("gpipe", 2, 3);
  const Schedule zero_bubble = generateSchedule("zb-h1", 2, 3);
  const SimulationResult a = stagecut::simulate(gpipe, stagecut::unitCosts(gpipe));
  const SimulationResult b = stagecut::simulate(zero_bubble, stagecut::unitCosts(zero_bubble));
  const auto trace =
      nlohmann::json::parse(stagecut::renderChromeTrace({{&gpipe, &a}, {&zero_bubble, &b}}));
  int complete = 0, threads = 0;
  for (const auto& event : trace.at("traceEvents")) {
    if (event.at("ph") == "X") ++complete;
    if (event.at("name") == "thread_name") ++threads;
    if (event.at("ph") == "M" && event.at("name") == "process_name" && event.at("pid") == 1) {
      CHECK(event.at("args").at("name") == "zb-h1");
    }
    // GPipe's F1 on rank 1 runs from 2 to 3 units: trace microseconds of 1 ms units.
    if (event.at("pid") == 0 && event.at("tid") == 1 && event.at("name") == "F1") {
      CHECK(event.at("ts").get<double>() == Approx(2000.0));
      CHECK(event.at("dur").get<double>() == Approx(1000.0));
      CHECK(event.at("cat") == "forward");
      CHECK(event.at("args").at("microbatch") == 1);
    }
  }
  CHECK(complete == static_cast<int>(gpipe.opCount() + zero_bubble.opCount()));
  CHECK(threads == 4);
}

TEST_CASE("the SVG Gantt draws every op, the idle hatch, a legend and the figures",
          "[schedule][charts]") {
  const Schedule gpipe = generateSchedule("gpipe", 4, 8);
  const Schedule interleaved = generateSchedule("interleaved-1f1b", 4, 8, 2);
  const SimulationResult a = stagecut::simulate(gpipe, stagecut::unitCosts(gpipe));
  const SimulationResult b = stagecut::simulate(interleaved, stagecut::unitCosts(interleaved));
  stagecut::SvgGanttOptions options;
  options.title = "4 stages & 8 microbatches";
  options.time_unit = "units";
  const std::string svg = stagecut::renderSvgGantt({{&gpipe, &a}, {&interleaved, &b}}, options);
  CHECK_THAT(svg, StartsWith("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg "));
  CHECK_THAT(svg, Contains(">4 stages &amp; 8 microbatches</text>"));
  CHECK_THAT(svg, Contains("GPipe</tspan>"));
  CHECK_THAT(svg, Contains("step 33 units  ·  bubble 27.3%"));
  CHECK_THAT(svg, Contains("Interleaved 1F1B (v = 2)</tspan>"));
  CHECK_THAT(svg, Contains("step 28.5 units  ·  bubble 15.8%"));
  CHECK_THAT(svg, Contains(">Forward (F)</text>"));
  CHECK_THAT(svg, Contains(">Idle</text>"));
  CHECK_THAT(svg, Contains("lighter = later model chunk"));
  // One bar per op (bars carry a white outline), one hatched track per rank and panel.
  CHECK(occurrences(svg, "stroke=\"#ffffff\"") == gpipe.opCount() + interleaved.opCount());
  CHECK(occurrences(svg, "fill=\"url(#idle)\"/>") == 2 * 4);
  CHECK(occurrences(svg, "<text") == occurrences(svg, "</text>"));
  CHECK_THAT(svg, Contains("</svg>\n"));
  CHECK(stagecut::scheduleDisplayName("zb-h1") == "ZB-H1");
  CHECK(stagecut::scheduleDisplayName("custom") == "custom");
  CHECK(stagecut::scheduleTitle(gpipe) == "GPipe");
  CHECK(stagecut::scheduleTitle(interleaved) == "Interleaved 1F1B (v = 2)");
}

TEST_CASE("the SVG Gantt stays bounded: columns past 40,000 ops, the first 256 ranks past that, and says so",
          "[schedule][charts][bounds]") {
  const Schedule small = generateSchedule("1f1b", 4, 8);
  const SimulationResult small_result = stagecut::simulate(small, stagecut::unitCosts(small));
  CHECK(stagecut::svgGanttDrawingNote({{&small, &small_result}}).empty());

  // GPipe on 2 stages, 50,000 microbatches of unit cost: rank 0 runs every F (time 0 to M), then
  // every B (from M + 1 to 3M + 1); 200,000 ops in all, over the bound.
  const Schedule gpipe = generateSchedule("gpipe", 2, 50000);
  const SimulationResult gpipe_result = stagecut::simulate(gpipe, stagecut::unitCosts(gpipe));
  const std::string note = stagecut::svgGanttDrawingNote({{&gpipe, &gpipe_result}});
  CHECK(note == "200000 ops drawn in 1088 columns a rank, each the op kind that fills most of it");
  const std::string svg = stagecut::renderSvgGantt({{&gpipe, &gpipe_result}}, stagecut::SvgGanttOptions{});
  CHECK_THAT(svg, Contains(">" + note + "</text>"));
  CHECK(svg.size() < 100000u);
  // Each rank is one forward bar and one backward bar: runs of one kind are one rect.
  const std::string forward = "fill=\"" + stagecut::hexColour(stagecut::opKindColour(stagecut::OpKind::kForward)) + "\"";
  const std::string backward = "fill=\"" + stagecut::hexColour(stagecut::opKindColour(stagecut::OpKind::kBackward)) + "\"";
  CHECK(occurrences(svg, forward) == 2 + 1);   // + the legend's swatch
  CHECK(occurrences(svg, backward) == 2 + 1);
  CHECK(occurrences(svg, "<text") == occurrences(svg, "</text>"));

  // Past 256 ranks only the first 256 are drawn.
  const Schedule deep = generateSchedule("1f1b", 300, 2);
  const SimulationResult deep_result = stagecut::simulate(deep, stagecut::unitCosts(deep));
  const std::string deep_svg = stagecut::renderSvgGantt({{&deep, &deep_result}}, stagecut::SvgGanttOptions{});
  CHECK_THAT(deep_svg, Contains(">ranks 0-255 of 300 drawn</text>"));
  CHECK_THAT(deep_svg, Contains(">rank 255</text>"));
  CHECK_THAT(deep_svg, !Contains(">rank 256</text>"));
  CHECK(occurrences(deep_svg, "fill=\"url(#idle)\"/>") == 256);

  // The stated bound holds for the largest charts the generators make: 4.2M forward ops.
  for (const auto& [stages, microbatches] : {std::pair<int, int>{4, 1 << 20}, {4096, 1024}}) {
    const Schedule big = generateSchedule("1f1b", stages, microbatches);
    const SimulationResult big_result = stagecut::simulate(big, stagecut::unitCosts(big));
    INFO(stages << " stages x " << microbatches);
    CHECK(stagecut::renderSvgGantt({{&big, &big_result}}, stagecut::SvgGanttOptions{}).size() <
          stagecut::kMaxSvgGanttBytes);
  }
}

TEST_CASE("charts draw the all-reduce as its own op", "[schedule][charts][data-parallel]") {
  const Schedule schedule = stagecut::withGradientAllReduce(generateSchedule("1f1b", 2, 2));
  stagecut::PipelineCosts costs = stagecut::unitCosts(schedule);
  costs.allreduce_ms = {4, 4};
  const SimulationResult result = stagecut::simulate(schedule, costs);
  // 1F1B on F = 1, B = 2: rank 0 ends its last B at 9, rank 1 at 7; A runs 9-13 and 7-11.
  REQUIRE(result.step_ms == 13.0);
  stagecut::AsciiGanttOptions ascii;
  ascii.width_columns = 8 + 13 + 1;
  ascii.time_unit = "units";
  const std::string text = stagecut::renderAsciiGantt(schedule, result, ascii);
  CHECK_THAT(text, Contains("rank 0  01..##.##AAAA\n"));
  CHECK_THAT(text, Contains("rank 1  .0##1##AAAA..\n"));
  CHECK_THAT(text, Contains("all-reduce: A"));
  const std::string svg = stagecut::renderSvgGantt({{&schedule, &result}}, stagecut::SvgGanttOptions{});
  CHECK_THAT(svg, Contains("All-reduce (A)"));
  const auto trace = nlohmann::json::parse(stagecut::renderChromeTrace({{&schedule, &result}}));
  int all_reduces = 0;
  for (const auto& event : trace["traceEvents"]) {
    if (event.value("cat", "") != "allreduce") continue;
    ++all_reduces;
    CHECK(event["name"] == "A0");
    CHECK(event["dur"].get<double>() == Approx(4000.0));
  }
  CHECK(all_reduces == 2);
}

TEST_CASE("a Chrome trace of huge finite times stays valid JSON", "[schedule][charts][hostile]") {
  // %.3f of 1e103 us printed 104 digits and overran the event's buffer: a cut, invalid trace.
  const Schedule schedule = generateSchedule("1f1b", 2, 3);
  stagecut::PipelineCosts costs = stagecut::unitCosts(schedule);
  for (auto& stage : costs.stages) stage.forward_ms = 1e100;
  const SimulationResult result = stagecut::simulate(schedule, costs);
  const std::string text = stagecut::renderChromeTrace({{&schedule, &result}});
  const auto trace = nlohmann::json::parse(text);
  double latest = 0;
  for (const auto& event : trace["traceEvents"]) {
    if (event["ph"] == "X") latest = std::max(latest, event["ts"].get<double>() + event["dur"].get<double>());
  }
  CHECK(latest == Approx(result.step_ms * 1000.0).epsilon(1e-6));
  CHECK(text.size() < 320 * schedule.opCount() + 1000);
}

TEST_CASE("a Chrome trace holds at most a million ops, refused in one line past that", "[schedule][charts][hostile]") {
  CHECK_NOTHROW(stagecut::requireChromeTraceFits(stagecut::kMaxChromeTraceOps, "--trace t.json", "fix it"));
  CHECK(stagecut::testing::inputErrorOf([] {
          stagecut::requireChromeTraceFits(stagecut::kMaxChromeTraceOps + 1, "--trace t.json", "fix it");
        }) == "--trace t.json: the trace would hold 1000001 ops, over the 1000000 one trace holds (one event each, "
              "about 140 MB); fix it");
  // The largest trace it takes, 1F1B's 2 ops per microbatch and rank, stays well under the 512 MiB
  // stagecut reads back; past it, the renderer refuses too.
  const Schedule largest = generateSchedule("1f1b", 4, static_cast<int>(stagecut::kMaxChromeTraceOps / 8));
  const SimulationResult result = stagecut::simulate(largest, stagecut::unitCosts(largest));
  REQUIRE(largest.opCount() == stagecut::kMaxChromeTraceOps);
  CHECK(stagecut::renderChromeTrace({{&largest, &result}}).size() < std::size_t{200} << 20);
  const Schedule over = generateSchedule("1f1b", 4, static_cast<int>(stagecut::kMaxChromeTraceOps / 8) + 1);
  const SimulationResult over_result = stagecut::simulate(over, stagecut::unitCosts(over));
  CHECK_THAT(stagecut::testing::inputErrorOf([&] { stagecut::renderChromeTrace({{&over, &over_result}}); }),
             StartsWith("Chrome trace: the trace would hold 1000008 ops"));
}
