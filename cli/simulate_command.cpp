#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>

#include "cli/commands.h"
#include "cli/simulate_report.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/json_document.h"
#include "core/partition_json.h"
#include "core/profile_json.h"
#include "core/units.h"
#include "schedule/chrome_trace.h"
#include "schedule/closed_form.h"
#include "schedule/generators.h"
#include "schedule/profile_costs.h"
#include "schedule/svg_gantt.h"

namespace stagecut {

namespace {

struct SimulateOptions {
  std::string profile_path;
  std::string partition_path;
  int stages = 4;
  bool stages_given = false;
  int microbatches = 8;
  int chunks = 2;
  std::string schedules = "gpipe,1f1b";
  std::string bandwidth;
  std::string latency;
  std::string trace_path;
  std::string svg_path;
  bool json = false;
  int width_columns = 0;
};

constexpr int kDefaultWidth = 80;
constexpr int kWidestChart = 200;  // wider terminals get no more detail a reader can use

int chartWidth(int requested) {
  if (requested > 0) return std::clamp(requested, 40, kWidestChart);
  winsize size{};
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) {
    return std::clamp(static_cast<int>(size.ws_col), 40, kWidestChart);
  }
  return kDefaultWidth;
}

std::string baseName(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

bool listsAll(const std::string& list) { return ("," + list + ",").find(",all,") != std::string::npos; }

// The profile mode's inputs. Each schedule's costs come from costsFromPartition() with its own
// chunk count, so they are kept rather than turned into costs once.
struct ProfileInputs {
  Profile profile;
  Partition partition;
  BoundaryLink link;
};

// Reads the profile and the partition and fills the report's per-stage view.
ProfileInputs readProfileInputs(const SimulateOptions& options, SimulationReport* report) {
  if (options.partition_path.empty()) {
    throw Error(options.profile_path + ": simulating a profile needs its split; add --partition " +
                "FILE (written by 'stagecut partition ... --format json')");
  }
  ProfileInputs inputs{readProfileFile(options.profile_path),
                       readPartitionFile(options.partition_path), {}};
  const int stages = static_cast<int>(inputs.partition.stages.size());
  if (options.stages_given && options.stages != stages) {
    throw Error("--stages " + std::to_string(options.stages) + ": the partition " +
                options.partition_path + " has " + std::to_string(stages) +
                " stages; drop --stages or use --stages " + std::to_string(stages));
  }
  if (!options.bandwidth.empty()) {
    inputs.link.bandwidth_bytes_per_s = parseBandwidthBytesPerS(options.bandwidth, "--bandwidth");
  }
  if (!options.latency.empty()) {
    inputs.link.latency_ms = parseDurationMs(options.latency, "--latency");
  }
  if (options.bandwidth.empty() || options.latency.empty()) {
    const std::string& given = options.bandwidth.empty() ? options.latency : options.bandwidth;
    report->comm_text = given.empty() ? "none" : given + " per boundary";
  } else {
    report->comm_text = options.bandwidth + " + " + options.latency + " latency per boundary";
  }
  report->unit_costs = false;
  report->profile_path = options.profile_path;
  report->partition_path = options.partition_path;
  report->stages = stages;

  const PartitionCosts one_chunk =
      costsFromPartition(inputs.profile, inputs.partition, 1, inputs.link, options.partition_path);
  report->stage_costs = one_chunk.stages;
  report->boundary_comm_ms = one_chunk.costs.comm_ms;
  for (const StageCost& stage : inputs.partition.stages) {
    report->stage_layers.push_back(std::to_string(stage.first) + "-" + std::to_string(stage.last));
  }
  if (one_chunk.layers_with_even_split > 0) {
    report->notes.push_back(std::to_string(one_chunk.layers_with_even_split) + " of " +
                            std::to_string(inputs.profile.layerCount()) +
                            " layers have no separate B and W times; zb-h1 splits their backward "
                            "evenly into B and W");
  }
  return inputs;
}

void checkUnitCostOptions(const SimulateOptions& options) {
  if (!options.partition_path.empty()) {
    throw Error("--partition " + options.partition_path + ": needs the profile it splits; use "
                "'stagecut simulate PROFILE --partition " + options.partition_path + "'");
  }
  for (const auto& [flag, value] : {std::pair{"--bandwidth", &options.bandwidth},
                                    std::pair{"--latency", &options.latency}}) {
    if (!value->empty()) {
      throw Error(std::string(flag) + " " + *value + ": unit costs have no bytes or time unit; " +
                  "give a profile and a partition to simulate communication");
    }
  }
}

SimulationReport runSimulations(const SimulateOptions& options) {
  // Charts are written after the tables are printed; a bad path must fail before either.
  if (!options.trace_path.empty()) checkWritable(options.trace_path);
  if (!options.svg_path.empty()) checkWritable(options.svg_path);
  const std::vector<std::string> names = parseScheduleList(options.schedules);
  SimulationReport report;
  report.microbatches = options.microbatches;
  report.chunks = options.chunks;
  report.stages = options.stages;
  std::optional<ProfileInputs> inputs;
  if (options.profile_path.empty()) {
    checkUnitCostOptions(options);
  } else {
    inputs = readProfileInputs(options, &report);
  }
  const int stages = report.stages;
  checkPipelineShape(stages, options.microbatches, options.chunks);

  for (const std::string& name : names) {
    const bool interleaved = name == "interleaved-1f1b";
    if (interleaved && options.microbatches % stages != 0 && listsAll(options.schedules)) {
      report.notes.push_back("interleaved-1f1b skipped: it needs --microbatches a multiple of " +
                             std::to_string(stages) + ", not " +
                             std::to_string(options.microbatches));
      continue;
    }
    const int chunks = interleaved ? options.chunks : 1;
    SimulatedRun run;
    run.schedule = generateSchedule(name, stages, options.microbatches, chunks);
    if (inputs) {
      run.costs = costsFromPartition(inputs->profile, inputs->partition, chunks, inputs->link,
                                     options.partition_path).costs;
      if (interleaved && chunks > 1) {
        report.notes.push_back("interleaved-1f1b divides each stage's costs evenly into its " +
                               std::to_string(chunks) + " chunks: the partition fixes each " +
                               "rank's work, not the chunk layout");
      }
    } else {
      run.costs = unitCosts(run.schedule);
    }
    run.result = simulate(run.schedule, run.costs);
    // Closed forms assume equal stages and free boundaries; with a profile they say what a
    // balanced split would give, and ZB-H1's needs F = B = W, which only unit costs promise.
    const bool equal_f_b_w = !inputs.has_value();
    run.closed_form_bubble =
        closedFormBubble(name, stages, options.microbatches, chunks, equal_f_b_w);
    report.runs.push_back(std::move(run));
  }
  return report;
}

void writeCharts(const SimulateOptions& options, const SimulationReport& report) {
  std::vector<SimulatedSchedule> views;
  for (const SimulatedRun& run : report.runs) views.push_back({&run.schedule, &run.result});
  if (!options.trace_path.empty()) writeFileAtomically(options.trace_path, renderChromeTrace(views));
  if (!options.svg_path.empty()) {
    SvgGanttOptions svg;
    svg.time_unit = report.timeUnit();
    svg.title = std::to_string(report.stages) + " stages, " + std::to_string(report.microbatches) +
                " microbatches, " +
                (report.unit_costs ? std::string("unit costs")
                                   : baseName(report.profile_path) + " split by " +
                                         baseName(report.partition_path));
    writeFileAtomically(options.svg_path, renderSvgGantt(views, svg));
  }
}

}  // namespace

void addSimulateCommand(CLI::App& app) {
  auto* command = app.add_subcommand(
      "simulate", "Simulate pipeline schedules (GPipe, 1F1B, interleaved, zero-bubble): step time, "
                  "bubble, memory, Gantt charts");
  auto options = std::make_shared<SimulateOptions>();
  command->add_option("profile", options->profile_path,
                      "A stagecut.profile/1 file to take costs from (with --partition); "
                      "without it every op costs one unit");
  command->add_option("--partition,-p", options->partition_path,
                      "The stagecut.partition/1 split of the profile's layers into stages");
  command->add_option("--stages,-n", options->stages, "Pipeline stages N (unit costs)")
      ->capture_default_str();
  command->add_option("--microbatches,-m", options->microbatches, "Microbatches per step M")
      ->capture_default_str();
  command->add_option("--schedule,-s", options->schedules,
                      "Comma-separated schedules: gpipe, 1f1b, interleaved-1f1b, zb-h1, or all")
      ->capture_default_str();
  command->add_option("--chunks,-v", options->chunks,
                      "Model chunks per rank for interleaved-1f1b")
      ->capture_default_str();
  command->add_option("--bandwidth", options->bandwidth,
                      "Link bandwidth between stages, e.g. 25GB/s (with a profile)");
  command->add_option("--latency", options->latency,
                      "Per-transfer latency between stages, e.g. 10us (with a profile)");
  command->add_option("--trace", options->trace_path,
                      "Write a Chrome trace (Perfetto, chrome://tracing) of the simulated ops");
  command->add_option("--svg", options->svg_path, "Write an SVG Gantt chart of the schedules");
  command->add_option("--width", options->width_columns,
                      "Columns of the text charts (default: the terminal's, else 80)");
  command->add_flag("--json", options->json, "Print a stagecut.simulation/1 document instead");
  command->callback([options, command] {
    options->stages_given = command->count("--stages") > 0;
    const SimulationReport report = runSimulations(*options);
    if (options->json) {
      std::cout << toJsonText(simulationToJson(report));
    } else {
      printSimulationText(std::cout, report, chartWidth(options->width_columns));
    }
    writeCharts(*options, report);
  });
}

}  // namespace stagecut
