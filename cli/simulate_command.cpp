#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <tuple>

#include "cli/commands.h"
#include "cli/partition_flags.h"
#include "cli/partition_table.h"
#include "cli/simulate_report.h"
#include "core/error.h"
#include "core/json_document.h"
#include "core/output_path.h"
#include "core/partition_json.h"
#include "core/profile_json.h"
#include "core/units.h"
#include "partitioner/data_parallel_plan.h"
#include "partitioner/partition_options.h"
#include "prediction/pipeline_prediction.h"
#include "partitioner/split_text.h"
#include "schedule/chrome_trace.h"
#include "schedule/closed_form.h"
#include "schedule/generators.h"
#include "schedule/svg_gantt.h"

namespace stagecut {

namespace {

struct SimulateOptions {
  std::string profile_path;
  int microbatch_size = 0;  ///< --microbatch-size: one of the profile's measured sizes
  std::string partition_path;
  std::string split_text;  ///< --split: the split in any printed form, instead of --partition
  bool split_given = false;
  int stages = 4;
  bool stages_given = false;
  int microbatches = 8;
  int chunks_flag = kDefaultInterleavedChunks;  ///< --chunks as typed
  bool chunks_given = false;

  /// --chunks where it was given: interleaved-1f1b's v (schedulePlacement).
  std::optional<int> chunks() const { return chunks_given ? std::optional(chunks_flag) : std::nullopt; }
  std::string schedules = "gpipe,1f1b";
  std::string bandwidth;
  std::string latency;
  std::string trace_path;
  std::string svg_path;
  bool trace_given = false;  ///< --trace, even as '' (refused by name)
  bool svg_given = false;
  bool json = false;
  int width_columns = 0;
  int data_parallel = 1;
  std::string dp_bandwidth = "100GB/s";
  std::string dp_latency = "10us";
  int ranks = 0;         ///< > 0: the N x D trade-off table instead of one pipeline
  int global_batch = 0;  ///< with ranks: samples per step over all replicas
  bool microbatches_given = false;
  std::string optimizer = "adam";
  std::string memory_cap;  ///< with ranks: one cap for every stage
  std::string recompute;   ///< with ranks: the partitioner's --recompute policy
  std::string stage_speed;  ///< --stage-speed: relative device speed per stage
  std::string tp_bandwidth;  ///< --tp-bandwidth: a tensor-parallel profile's collectives
  std::string tp_latency;
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

// The profile mode's inputs: the split and what every schedule's prediction shares.
struct ProfileInputs {
  Profile profile;
  Partition partition;
  PredictionOptions prediction;  ///< schedule, microbatches and placement are set per schedule
};

BoundaryLink dataParallelLink(const SimulateOptions& options) {
  BoundaryLink link;
  link.bandwidth_bytes_per_s = parseBandwidthBytesPerS(options.dp_bandwidth, "--dp-bandwidth");
  link.latency_ms = parseDurationMs(options.dp_latency, "--dp-latency");
  return link;
}

void checkDataParallel(int replicas) {
  if (replicas < 1) {
    throw Error("--data-parallel " + std::to_string(replicas) +
                ": each stage needs at least 1 replica; use --data-parallel 1 for a plain pipeline");
  }
}

// The split to simulate: --split's text, or the --partition file checked against the profile.
Partition readSplit(const SimulateOptions& options, const Profile& profile) {
  if (!options.split_given) {
    Partition partition = readPartitionFile(options.partition_path);
    // Before anything indexes the profile's layers by the partition's ranges.
    checkPartitionCoversLayers(partition, profile.layerCount(), options.partition_path);
    return partition;
  }
  Placement placement;
  const std::vector<int> counts =
      parseSplitText(options.split_text, profile, options.stages_given ? options.stages : 0, "--split", &placement);
  Partition partition;
  partition.method = "yours";
  if (placement.chunked()) partition.placement = placement;
  int first = 0;
  for (int count : counts) {
    StageCost stage;
    stage.first = first;
    stage.last = first + count - 1;
    partition.stages.push_back(stage);
    first += count;
  }
  return partition;
}

// The links and replicas every schedule's prediction shares, and how the report words them.
void readLinks(const SimulateOptions& options, int stages, PredictionOptions* prediction, SimulationReport* report) {
  if (!options.bandwidth.empty()) prediction->link.bandwidth_bytes_per_s = parseBandwidthBytesPerS(options.bandwidth, "--bandwidth");
  if (!options.latency.empty()) prediction->link.latency_ms = parseDurationMs(options.latency, "--latency");
  if (options.bandwidth.empty() || options.latency.empty()) {
    const std::string& given = options.bandwidth.empty() ? options.latency : options.bandwidth;
    report->comm_text = given.empty() ? "none" : given + " per boundary";
  } else {
    report->comm_text = options.bandwidth + " + " + options.latency + " latency per boundary";
  }
  checkDataParallel(options.data_parallel);
  prediction->data_parallel = options.data_parallel;
  if (!options.stage_speed.empty()) prediction->stage_speed = parseStageSpeeds(options.stage_speed, stages);
  if (options.data_parallel > 1) {
    prediction->dp_link = dataParallelLink(options);
    report->data_parallel = options.data_parallel;
    report->dp_text = "ring all-reduce over " + std::to_string(options.data_parallel) + " replicas, " +
                      options.dp_bandwidth + ", " + options.dp_latency + " per ring step";
  }
}

// Both notes are about how W is built, which only a schedule that splits W off uses.
void noteWeightGradients(const SimulateOptions& options, const PipelinePrediction& one_chunk, std::size_t layers,
                         SimulationReport* report) {
  std::vector<std::string> splitting;  // the schedules shown that split W off
  for (ScheduleKind kind : parseScheduleList(options.schedules)) {
    if (splitsBackward(kind)) splitting.push_back(scheduleName(kind));
  }
  if (splitting.empty()) return;
  std::string who;
  for (std::size_t i = 0; i < splitting.size(); ++i) {
    who += (i == 0 ? "" : i + 1 == splitting.size() ? " and " : ", ") + splitting[i];
  }
  const bool one = splitting.size() == 1;
  const std::string of = " of " + std::to_string(layers) + " layers have ";
  if (one_chunk.layers_with_even_split > 0) {
    report->notes.push_back(std::to_string(one_chunk.layers_with_even_split) + of + "no separate B and W times; " + who +
                            (one ? " splits" : " split") + " their backward evenly into B and W");
  }
  if (one_chunk.layers_with_w_from_backward > 0) {
    report->notes.push_back(std::to_string(one_chunk.layers_with_w_from_backward) + of +
                            "B + W, each timed alone, over their whole backward; " + who + (one ? " runs" : " run") +
                            " W as the backward minus B, the work left once B has run");
  }
}

// The per-stage table: the split as one chunk per rank, as every schedule's costs start (a
// chunked split as the schedule that runs its chunks places them).
void describeStages(const SimulateOptions& options, const ProfileInputs& inputs, SimulationReport* report) {
  const Placement placement = inputs.partition.rankPlacement();
  PredictionOptions one_chunk_options = inputs.prediction;
  one_chunk_options.microbatches = 1;
  if (placement.chunked()) {
    one_chunk_options.schedule = scheduleRunningChunks(placement.style);
    if (needsMicrobatchesPerStageGroup(one_chunk_options.schedule)) one_chunk_options.microbatches = placement.ranks;
  }
  const PipelinePrediction one_chunk =
      predictPipeline(inputs.profile, inputs.partition, one_chunk_options, options.partition_path);
  report->stage_costs = one_chunk.costs.stages;
  if (options.data_parallel > 1) report->stage_allreduce_ms = one_chunk.costs.allreduce_ms;
  if (one_chunk.recomputes) {
    for (const StageCost& stage : inputs.partition.stages) report->stage_recompute.push_back(stage.recompute.value_or("none"));
    report->notes.push_back("stages with \"recompute\" in the partition run their forward again "
                            "before the backward and keep only what the mode keeps");
  }
  report->boundary_comm_ms = one_chunk.costs.comm_ms;
  for (std::size_t s = 0; s < report->boundary_comm_ms.size() && placement.chunked(); ++s) {
    // A V's turn stays on its rank: nothing is sent.
    if (!placement.crossesRanks(static_cast<int>(s))) report->boundary_comm_ms[s] = 0.0;
  }
  report->stage_layers = layerIndexRanges(inputs.partition);
  noteWeightGradients(options, one_chunk, inputs.profile.layerCount(), report);
}

// Reads the profile and the partition and fills the report's per-stage view.
ProfileInputs readProfileInputs(const SimulateOptions& options, SimulationReport* report) {
  if (options.partition_path.empty() && !options.split_given) {
    throw Error(options.profile_path + ": simulating a profile needs its split; add --partition " +
                "FILE (written by 'stagecut partition ... --format json') or --split 4,3,2");
  }
  if (!options.partition_path.empty() && options.split_given) {
    throw Error("--split: --partition " + options.partition_path + " gives the split already; drop one of the two");
  }
  ProfileInputs inputs;
  std::string tensor_parallel_note;
  inputs.profile = readPricedProfile(options.profile_path, options.microbatch_size, options.tp_bandwidth,
                                     options.tp_latency, &tensor_parallel_note);
  if (!tensor_parallel_note.empty() && report) report->notes.push_back(tensor_parallel_note);
  inputs.partition = readSplit(options, inputs.profile);
  // A chunked split's stages are its chunks; its ranks are the pipeline's stages.
  const int stages = inputs.partition.rankPlacement().ranks;
  if (options.stages_given && options.stages != stages) {
    throw Error("--stages " + std::to_string(options.stages) + ": the partition " + options.partition_path + " has " +
                std::to_string(stages) + " stages; drop --stages or use --stages " + std::to_string(stages));
  }
  readLinks(options, stages, &inputs.prediction, report);
  report->unit_costs = false;
  report->profile_path = options.profile_path;
  report->partition_path = options.split_given ? "--split " + options.split_text : options.partition_path;
  report->stages = stages;
  describeStages(options, inputs, report);
  return inputs;
}

// --trace or --svg as given, with the files simulate reads as inputs it must not be.
OutputPath chartOutput(const SimulateOptions& options, const std::string& flag, const std::string& path) {
  return OutputPath(path, flag,
                    {{"the input profile", options.profile_path}, {"the --partition file", options.partition_path}});
}

void checkUnitCostOptions(const SimulateOptions& options) {
  if (options.split_given) {
    throw Error("--split " + options.split_text + ": needs the profile it splits; use "
                "'stagecut simulate PROFILE --split " + options.split_text + "'");
  }
  if (!options.partition_path.empty()) {
    throw Error("--partition " + options.partition_path + ": needs the profile it splits; use "
                "'stagecut simulate PROFILE --partition " + options.partition_path + "'");
  }
  for (const auto& [flag, value] : {std::pair{"--bandwidth", &options.bandwidth}, std::pair{"--latency", &options.latency},
                                    std::pair{"--tp-bandwidth", &options.tp_bandwidth},
                                    std::pair{"--tp-latency", &options.tp_latency}}) {
    if (!value->empty()) {
      throw Error(std::string(flag) + " " + *value + ": unit costs have no bytes or time unit; " +
                  "give a profile and a partition to simulate communication");
    }
  }
  if (!options.stage_speed.empty()) {
    throw Error("--stage-speed " + options.stage_speed + ": unit costs are the same on every rank; " +
                "give a profile and a partition to simulate devices of different speeds");
  }
  checkDataParallel(options.data_parallel);
  if (options.data_parallel > 1) {
    throw Error("--data-parallel " + std::to_string(options.data_parallel) +
                ": unit costs have no gradient bytes to all-reduce; give a profile and a partition");
  }
  if (options.ranks != 0) {
    throw Error("--ranks " + std::to_string(options.ranks) +
                ": the trade-off splits a profile; use 'stagecut simulate PROFILE --ranks " +
                std::to_string(options.ranks) + "'");
  }
}

SimulationReport runSimulations(const SimulateOptions& options) {
  // Charts are written after the tables are printed; a bad path must fail before either.
  std::vector<OutputPath> charts;
  if (options.trace_given) charts.push_back(chartOutput(options, "--trace", options.trace_path));
  if (options.svg_given) charts.push_back(chartOutput(options, "--svg", options.svg_path));
  checkDistinctOutputs(charts);
  const std::vector<ScheduleKind> kinds = parseScheduleList(options.schedules);
  if (options.chunks_given && std::none_of(kinds.begin(), kinds.end(), choosesChunks)) {
    // --chunks would change nothing: every schedule listed fixes its own chunks per rank.
    const int runs = schedulePlacement(kinds.front(), 1).chunks_per_rank;
    if (kinds.size() > 1 || runs != options.chunks_flag) {
      throw Error("--chunks " + std::to_string(options.chunks_flag) + ": " + options.schedules +
                  (kinds.size() == 1 ? " fixes its" : " fix their") +
                  " chunks per rank (zb-v and dualpipe-v 2, the others 1); add interleaved-1f1b to --schedule, or leave --chunks out");
    }
  }
  SimulationReport report;
  report.microbatches = options.microbatches;
  report.stages = options.stages;
  std::optional<ProfileInputs> inputs;
  if (options.profile_path.empty()) {
    checkUnitCostOptions(options);
  } else {
    inputs = readProfileInputs(options, &report);
  }
  const int stages = report.stages;
  checkPipelineShape(Placement::loop(stages, options.chunks_flag), options.microbatches);

  for (ScheduleKind kind : kinds) {
    const std::string name = scheduleName(kind);
    const std::string count_problem = microbatchCountProblem(kind, stages, options.microbatches);
    if (!count_problem.empty() && listsAll(options.schedules)) {
      report.notes.push_back(name + " skipped: it " + count_problem);
      continue;
    }
    const Placement own = inputs ? inputs->partition.rankPlacement() : Placement{};
    const bool own_chunks = own.chunked();
    if (own_chunks && !runsPlacement(kind, own)) {
      const std::string placed = "places " + std::to_string(own.chunks_per_rank) + " chunks on each rank" +
                                 (own.style == Placement::Style::kV ? " in a V" : "");
      const std::string runner = schedulesRunningChunks(own.style);
      if (!listsAll(options.schedules)) {
        throw Error(options.partition_path + ": the split " + placed + "; " + name + " runs " +
                    (runsChunks(kind) ? std::string("its chunks ") + placementStyleWords(chunkStyle(kind)) : "one") +
                    "; use --schedule " + runner);
      }
      report.notes.push_back(name + " skipped: the partition " + placed + ", which only " + runner + " runs");
      continue;
    }
    const Placement placement =
        own_chunks ? own : schedulePlacement(kind, stages, choosesChunks(kind) ? options.chunks() : std::nullopt);
    PipelinePrediction prediction;
    if (inputs) {
      PredictionOptions request = inputs->prediction;
      request.schedule = kind;
      request.microbatches = options.microbatches;
      request.placement = placement;
      prediction = predictPipeline(inputs->profile, inputs->partition, request, options.partition_path);
      if (placement.chunked() && !own_chunks) {
        report.notes.push_back(name + " divides each stage's costs evenly into its " +
                               std::to_string(placement.chunks_per_rank) + " chunks: the partition fixes each " +
                               "rank's work, not the chunk layout");
      }
    } else {
      prediction = predictUnitCosts(kind, placement, options.microbatches);
    }
    // Closed forms assume equal stages and free boundaries; with a profile they say what a
    // balanced split would give, and ZB-H1's needs F = B = W, which only unit costs promise.
    const bool equal_f_b_w = !inputs.has_value();
    report.schedules.push_back(simulatedScheduleFigures(
        prediction, closedFormBubble(kind, placement, options.microbatches, equal_f_b_w),
        report.data_parallel));
    report.runs.push_back({std::move(prediction.schedule), std::move(prediction.costs),
                           std::move(prediction.simulated)});
  }
  return report;
}

TradeoffReport runTradeoff(const SimulateOptions& options) {
  if (!options.partition_path.empty()) {
    throw Error("--partition " + options.partition_path + ": --ranks splits the profile for every " +
                "layout itself; drop --partition");
  }
  if (options.data_parallel != 1) {
    throw Error("--data-parallel " + std::to_string(options.data_parallel) + ": --ranks " +
                std::to_string(options.ranks) + " tries every N x D itself; drop --data-parallel");
  }
  if (options.global_batch != 0 && options.microbatches_given) {
    throw Error("--microbatches " + std::to_string(options.microbatches) + ": --global-batch " +
                std::to_string(options.global_batch) + " sets the microbatches per replica; give " +
                "one of the two");
  }
  for (const auto& [flag, value, given] : {std::tuple{"--trace", &options.trace_path, options.trace_given},
                                           std::tuple{"--svg", &options.svg_path, options.svg_given}}) {
    if (given) {
      throw Error(std::string(flag) + " " + *value + ": --ranks prints a table of layouts; chart " +
                  "one of them with --partition and --data-parallel");
    }
  }
  TradeoffReport report;
  report.profile_path = options.profile_path;
  const Profile profile =
      readPricedProfile(options.profile_path, options.microbatch_size, options.tp_bandwidth, options.tp_latency, nullptr);
  TradeoffOptions tradeoff;
  tradeoff.ranks = options.ranks;
  tradeoff.global_batch = options.global_batch;
  tradeoff.microbatches = options.microbatches;
  // The trade-off places interleaved-1f1b's chunks per layout; the ranks here are not its own.
  tradeoff.partition.placement = Placement::loop(1, options.chunks_flag);
  tradeoff.schedules = parseScheduleList(options.schedules);
  if (!options.bandwidth.empty()) {
    tradeoff.pipeline_link.bandwidth_bytes_per_s = parseBandwidthBytesPerS(options.bandwidth, "--bandwidth");
  }
  if (!options.latency.empty()) tradeoff.pipeline_link.latency_ms = parseDurationMs(options.latency, "--latency");
  tradeoff.dp_link = dataParallelLink(options);
  const OptimizerMemory optimizer = optimizerMemory(options.optimizer);
  tradeoff.partition.bytes_per_param = optimizer.bytes_per_param;
  tradeoff.partition.optimizer_step_temporaries = optimizer.step_temporaries;
  if (!options.recompute.empty()) {
    tradeoff.partition.recompute = parseRecomputePolicy(options.recompute, profile);
  }
  if (!options.memory_cap.empty()) {
    if (options.memory_cap.find(',') != std::string::npos) {
      throw Error("--memory-cap " + options.memory_cap + ": --ranks lays out different stage " +
                  "counts; give one cap for every stage, e.g. --memory-cap 80GiB");
    }
    tradeoff.partition.memory_cap_bytes = {parseBytes(options.memory_cap, "--memory-cap")};
  }
  report.recompute = tradeoff.partition.recompute.mode != RecomputePolicy::Mode::kNone;
  report.memory_cap = options.memory_cap;
  report.tradeoff = dataParallelTradeoff(profile, tradeoff, options.profile_path);
  report.ranks = options.ranks;
  report.global_batch = options.global_batch;
  report.pipeline_text = options.bandwidth.empty() && options.latency.empty()
                             ? "none"
                             : (options.bandwidth.empty() ? "no bandwidth limit" : options.bandwidth) +
                                   (options.latency.empty() ? "" : " + " + options.latency + " latency");
  report.dp_text = options.dp_bandwidth + ", " + options.dp_latency + " per ring step";
  return report;
}

void writeCharts(const SimulateOptions& options, const SimulationReport& report) {
  std::vector<SimulatedSchedule> views;
  for (const SimulatedRun& run : report.runs) views.push_back({&run.schedule, &run.result});
  if (options.trace_given) {
    writeOutputFile(chartOutput(options, "--trace", options.trace_path), renderChromeTrace(views));
  }
  if (options.svg_given) {
    SvgGanttOptions svg;
    svg.time_unit = report.timeUnit();
    svg.title = std::to_string(report.stages) + " stages" +
                (report.data_parallel > 1 ? " x " + std::to_string(report.data_parallel) + " replicas" : "") +
                ", " + std::to_string(report.microbatches) + " microbatches, " +
                (report.unit_costs ? std::string("unit costs")
                                   : baseName(report.profile_path) + " split by " +
                                         baseName(report.partition_path));
    writeOutputFile(chartOutput(options, "--svg", options.svg_path), renderSvgGantt(views, svg));
    // On stderr: stdout may be the --json document.
    const std::string drawn = svgGanttDrawingNote(views);
    if (!drawn.empty()) std::cerr << "stagecut: --svg " << options.svg_path << ": " << drawn << "\n";
  }
}

// Every flag of simulate, on `options`.
void addSimulateFlags(CLI::App* command, SimulateOptions& options) {
  command->add_option("profile", options.profile_path,
                      "A stagecut.profile/1 file to take costs from (with --partition); "
                      "without it every op costs one unit");
  command->add_option("--partition,-p", options.partition_path,
                      "The stagecut.partition/1 split of the profile's layers into stages");
  command->add_option("--split", options.split_text,
                      "The split instead of --partition, in any form stagecut prints: 4,3,2, a Megatron "
                      "layout or its flags, parts=[...], balance=[...], split_spec={...} or "
                      "module_fqns_per_model_part=[...]");
  command->add_option("--microbatch-size", options.microbatch_size,
                      "Use the profile's costs at this measured microbatch size (default: the size its layers hold)");
  command->add_option("--stages,-n", options.stages, "Pipeline stages N (unit costs)")
      ->capture_default_str();
  command->add_option("--microbatches,-m", options.microbatches, "Microbatches per step M")
      ->capture_default_str();
  command->add_option("--schedule,-s", options.schedules,
                      "Comma-separated schedules: " + scheduleNameList() + ", or all")
      ->capture_default_str();
  command->add_option("--chunks,-v", options.chunks_flag,
                      "Model chunks per rank for interleaved-1f1b (zb-v and dualpipe-v always run 2, in a V)")
      ->capture_default_str();
  command->add_option("--bandwidth", options.bandwidth,
                      "Link bandwidth between stages, e.g. 25GB/s (with a profile)");
  command->add_option("--latency", options.latency,
                      "Per-transfer latency between stages, e.g. 10us (with a profile)");
  command->add_option("--stage-speed", options.stage_speed,
                      "Relative device speed per stage, e.g. 1,1,0.5,1 (with a profile; default: all 1)");
  addTensorParallelLinkFlags(command, options.tp_bandwidth, options.tp_latency);
  command->add_option("--trace", options.trace_path,
                      "Write a Chrome trace (Perfetto, chrome://tracing) of the simulated ops");
  command->add_option("--svg", options.svg_path, "Write an SVG Gantt chart of the schedules");
  command->add_option("--width", options.width_columns,
                      "Columns of the text charts (default: the terminal's, else 80)");
  command->add_option("--data-parallel,-d", options.data_parallel,
                      "Replicas D of every stage: each rank all-reduces its gradients (op A) after "
                      "its last backward (with a profile)")
      ->capture_default_str();
  command->add_option("--dp-bandwidth", options.dp_bandwidth,
                      "All-reduce link bandwidth per rank (with --data-parallel or --ranks)")
      ->capture_default_str();
  command->add_option("--dp-latency", options.dp_latency,
                      "All-reduce latency per ring step (with --data-parallel or --ranks)")
      ->capture_default_str();
  command->add_option("--ranks", options.ranks,
                      "Compare every N stages x D replicas = RANKS layout of the profile: "
                      "split, simulate, samples/s");
  command->add_option("--global-batch", options.global_batch,
                      "With --ranks: samples per step over all replicas; M per replica = "
                      "global batch / (D x the profile's microbatch size) (default: "
                      "--microbatches per replica)");
  command->add_option("--optimizer", options.optimizer,
                      "With --ranks: none, sgd, sgd-momentum, adam or adam-mixed (memory the split reports)")
      ->capture_default_str();
  command->add_option("--memory-cap", options.memory_cap,
                      "With --ranks: memory per device, e.g. 80GiB; layouts no split fits are "
                      "left out");
  command->add_option("--recompute", options.recompute,
                      "With --ranks: the partitioner's recompute policy (none, full, auto, "
                      "auto:<kinds>, selective:<kinds>; a bare --recompute is full); a partition file carries its own")
      ->expected(0, 1)
      ->default_str("full")
      ->option_text("[MODE]");
  command->add_flag("--json", options.json, "Print a stagecut.simulation/1 document instead");
}

// simulate as parsed: the trade-off with --ranks, else one pipeline's schedules.
void runSimulateCommand(SimulateOptions& options, const CLI::App* command) {
  options.stages_given = command->count("--stages") > 0;
  options.split_given = command->count("--split") > 0;
  options.chunks_given = command->count("--chunks") > 0;
  options.microbatches_given = command->count("--microbatches") > 0;
  options.trace_given = command->count("--trace") > 0;
  options.svg_given = command->count("--svg") > 0;
  if (options.ranks != 0 || command->count("--ranks") > 0) {
    if (options.profile_path.empty()) {
      throw Error("--ranks " + std::to_string(options.ranks) +
                  ": the trade-off splits a profile; use 'stagecut simulate PROFILE --ranks " +
                  std::to_string(options.ranks) + "'");
    }
    const TradeoffReport report = runTradeoff(options);
    if (options.json) {
      std::cout << toJsonText(tradeoffToJson(report));
    } else {
      printTradeoffText(std::cout, report);
    }
    return;
  }
  if (options.global_batch != 0) {
    throw Error("--global-batch " + std::to_string(options.global_batch) +
                ": sets the microbatches of the --ranks trade-off; add --ranks R, or give "
                "--microbatches");
  }
  if (command->count("--recompute") > 0) {
    throw Error("--recompute " + options.recompute + ": a partition file says which stages " +
                "recompute; write it with 'stagecut partition ... --recompute " +
                options.recompute + " -o part.json' (or use --ranks)");
  }
  if (!options.memory_cap.empty()) {
    throw Error("--memory-cap " + options.memory_cap + ": simulate runs the given split; cap " +
                "memory when partitioning ('stagecut partition ... --memory-cap') or with --ranks");
  }
  const SimulationReport report = runSimulations(options);
  if (options.trace_given) {
    std::size_t ops = 0;
    for (const SimulatedRun& run : report.runs) ops += run.schedule.opCount();
    requireChromeTraceFits(ops, "--trace " + options.trace_path,
                           "simulate fewer --microbatches or schedules, or leave out --trace");
  }
  if (options.json) {
    std::cout << toJsonText(simulationToJson(report));
  } else {
    printSimulationText(std::cout, report, chartWidth(options.width_columns));
  }
  writeCharts(options, report);
}

}  // namespace

void addSimulateCommand(CLI::App& app) {
  auto* command = app.add_subcommand(
      "simulate", "Simulate pipeline schedules (GPipe, 1F1B, interleaved, zero-bubble): step time, "
                  "bubble, memory, Gantt charts");
  auto options = std::make_shared<SimulateOptions>();
  addSimulateFlags(command, *options);
  command->callback([options, command] { runSimulateCommand(*options, command); });
}

}  // namespace stagecut
