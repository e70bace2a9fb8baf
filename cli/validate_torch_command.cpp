#include <cstdlib>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "cli/torch_commands.h"
#include "cli/number_flags.h"
#include "cli/text_table.h"
#include "core/error.h"
#include "core/json_document.h"
#include "core/output_path.h"
#include "core/partition_json.h"
#include "core/placement.h"
#include "core/profile_json.h"
#include "core/units.h"
#include "profiler/torch_runtime.h"
#include "prediction/pipeline_prediction.h"
#include "runtime/build_validation_report.h"
#include "runtime/gloo_transport.h"
#include "runtime/launcher.h"
#include "runtime/model_from_profile.h"
#include "runtime/nccl_transport.h"
#include "runtime/rank_device.h"
#include "runtime/rank_worker.h"
#include "runtime/stage_optimizer.h"
#include "schedule/chrome_trace.h"
#include "schedule/generators.h"
#include "validation/device_memory_fit.h"
#include "validation/validation_json.h"
#include "validation/validation_trace.h"

namespace stagecut {

namespace {

struct ValidateCommandOptions {
  ValidateRequest request;
  std::string seed = "1234";
  std::string trace_path;
  bool trace_given = false;  ///< --trace, even as '' (refused by name)
  bool json = false;
  bool strict = false;       ///< --strict: a run the environment voids exits 1
  bool optimizer_given = false;  ///< --optimizer on the command line; else the profile's precision's
  bool tolerance_given = false;  ///< --grad-tolerance likewise

  /// --trace, with the profile and the partition as inputs it must not be.
  OutputPath traceOutput() const {
    return OutputPath(trace_path, "--trace",
                      {{"the input profile", request.profile_path}, {"the --partition file", request.partition_path}});
  }
};

std::string scientific(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1e", value);
  return buffer;
}

// Started by a launcher (ours or torchrun-style): this process is one rank.
bool launchedByTorchrun() { return std::getenv("RANK") != nullptr || std::getenv("WORLD_SIZE") != nullptr; }

// Validate runs a split as it was cut: chunks placed on ranks as the schedule places them (it
// cannot cut a stage into chunks, as simulate does to show interleaving on an N-stage split).
void requireScheduleRunsSplit(ScheduleKind schedule, const Placement& placement, const ValidateRequest& request) {
  const std::string flag = "--schedule " + request.schedule;
  if (placement.chunked() && !runsPlacement(schedule, placement)) {
    throw Error(flag + ": " + request.partition_path + " places " + std::to_string(placement.chunks_per_rank) +
                " chunks on each rank " + placementStyleWords(placement.style) + ", which " + request.schedule +
                " does not run; use --schedule " + schedulesRunningChunks(placement.style));
  }
  if (!placement.chunked() && runsChunks(schedule)) {
    throw Error(flag + ": runs several model chunks per rank, and " + request.partition_path +
                " has one stage per rank; validate runs a split made for it (stagecut partition --schedule " +
                request.schedule + (choosesChunks(schedule) ? " --chunks 2" : "") + "), or use gpipe, 1f1b or zb-h1");
  }
}

// Every rank of a local run is on this machine: their predicted peaks against its devices. Under
// torchrun the ranks may be on other hosts, and each rank checks nothing it cannot see.
void requireRanksFitHere(const ValidateRequest& request, const Profile& profile, const Partition& partition,
                         const RankDevices& plan) {
  const PipelinePrediction prediction =
      predictValidationSteps(request, profile, partition, validationPredictionOptions(request, {}, {}));
  const Placement placement = partition.rankPlacement();
  std::vector<RankMemoryNeed> needs;
  for (std::size_t rank = 0; rank < plan.devices.size(); ++rank) {
    const int stage = static_cast<int>(rank) % placement.ranks;
    // A rank of several chunks is named by its first one's layers, as its outcome is.
    const StageCost& cost = partition.stages[static_cast<std::size_t>(placement.chunkAt(stage, 0))];
    needs.push_back({plan.devices[rank], stage, cost.first, cost.last,
                     prediction.memory.ranks.at(static_cast<std::size_t>(stage)).peak_bytes});
  }
  requireRanksFitDevices(needs, deviceMemoryBytes);
}

// What --optimizer and --grad-tolerance mean when not given depends on the profile's precision:
// a bfloat16 profile trains as Megatron's --bf16 does (adam-mixed) and its gradients differ from
// the full batch's by bfloat16's rounding.
void applyPrecisionDefaults(ValidateCommandOptions& options, const Profile& profile) {
  if (!options.optimizer_given) options.request.optimizer = defaultOptimizerFor(profile.run.dtype);
  if (!options.tolerance_given) options.request.grad_tolerance = defaultGradTolerance(profile.run.dtype);
}

// Everything that can be wrong with the request is found here, before any rank connects: by the
// launcher before it starts the ranks, and by each rank torchrun started. Returns the ranks the
// split runs on (stages x replicas).
int checkRequest(ValidateCommandOptions& options) {
  const Profile profile = readProfileFile(options.request.profile_path, options.request.microbatch_size);
  applyPrecisionDefaults(options, profile);
  const ValidateRequest& request = options.request;
  const Partition partition = readPartitionFile(request.partition_path);
  checkPartitionCoversLayers(partition, profile.layerCount(), request.partition_path);
  const ScheduleKind schedule = parseScheduleName(request.schedule);
  const Placement placement = partition.rankPlacement();
  requireScheduleRunsSplit(schedule, placement, request);
  const Schedule step =
      pipelineSchedule(schedule, placement, request.microbatches, request.data_parallel);
  // --steps, --microbatches, --timeout and the other flags' own ranges are the flag table's
  // (cli/flag_bounds.cpp), checked while parsing, by torchrun's ranks too.
  requireThreadsFitCores("--threads", request.threads);
  if (request.recompute != "none" && request.recompute != "full") {
    throw Error("--recompute " + request.recompute + ": validate runs none or full (every stage checkpointed)");
  }
  checkRunnableOptimizer(request.optimizer, profile.run.dtype);
  checkModelOfProfile(profile, request.profile_path);
  if (options.trace_given) {
    checkOutputPath(options.traceOutput());
    // The trace holds the step predicted and measured, each replica's, and the recomputed pair.
    const int copies = 2 + (request.data_parallel - 1) + (request.recompute == "full" ? 2 : 0);
    requireChromeTraceFits(step.opCount() * static_cast<std::size_t>(copies),
                           "--trace " + options.trace_path, "validate fewer --microbatches, or leave out --trace");
  }
  const int ranks = placement.ranks * request.data_parallel;
  const RankDevices plan = planRankDevices(request.device, profile.device.kind, ranks, visibleGpus());
  choosePipelineBackend(request.backend, plan, ncclAvailable());
  if (!launchedByTorchrun()) requireRanksFitHere(request, profile, partition, plan);
  return ranks;
}

// The local launcher starts every rank on this machine; more than this is a typo, not a plan.
void checkLocalRanks(const ValidateRequest& request, int ranks) {
  constexpr int kMaxLocalRanks = 64;
  if (ranks > kMaxLocalRanks) {
    throw Error("--data-parallel " + std::to_string(request.data_parallel) + ": " +
                std::to_string(ranks / request.data_parallel) + " stages x " + std::to_string(request.data_parallel) +
                " replicas = " + std::to_string(ranks) + " processes on this machine, more than " +
                std::to_string(kMaxLocalRanks) + "; use fewer replicas, or start the ranks with torchrun");
  }
}

std::string bytesText(std::int64_t bytes) { return formatBytes(static_cast<std::uint64_t>(std::max<std::int64_t>(bytes, 0))); }

void printRecompute(std::ostream& out, const ValidationReport& report) {
  const RecomputeComparison& recompute = *report.recompute;
  out << "\nactivation recomputation (--recompute full): the same steps with every stage checkpointed\n";
  TextTable summary;
  summary.addColumn("", TextTable::Align::kLeft);
  for (const char* header : {"plain", "recompute", "predicted", "difference"}) summary.addColumn(header, TextTable::Align::kRight);
  summary.addRow({"step ms (median)", formatMs(report.measured_step_median_ms), formatMs(recompute.measured_step_median_ms),
                  formatMs(recompute.predicted_step_ms), formatSignedPercent(recompute.error)});
  summary.print(out, "  ");
  out << "\n";
  TextTable ranks;
  for (const char* header : {"rank", "peak plain", "peak recompute", "pred", "busy ms plain", "busy recompute", "pred"}) {
    ranks.addColumn(header, TextTable::Align::kRight);
  }
  for (std::size_t i = 0; i < report.ranks.size(); ++i) {
    ranks.addRow({std::to_string(report.ranks[i].rank), bytesText(report.ranks[i].measured_peak_bytes),
                  bytesText(recompute.measured_peak_bytes[i]), formatBytes(recompute.predicted_peak_bytes[i]),
                  formatMs(report.ranks[i].measured_busy_ms), formatMs(recompute.measured_busy_ms[i]),
                  formatMs(recompute.predicted_busy_ms[i])});
  }
  ranks.print(out, "  ");
  out << "  steps ms:";
  for (double ms : recompute.measured_step_ms) out << " " << formatMs(ms);
  out << "\n  gradient check after the checkpointed steps: largest relative difference "
      << scientific(recompute.grad_max_rel_diff) << "\n";
}

// Per rank: the measured peak beside the timeline's, and the predicted peak's parts.
void printMemory(std::ostream& out, const ValidationReport& report, const ValidateRequest& request) {
  out << "\n  memory per rank at its peak (--optimizer " << request.optimizer
      << "; weights, gradients and optimizer state included), predicted parts:\n";
  TextTable table;
  for (const char* header : {"rank", "measured", "predicted", "diff", "peak at", "weights", "grads", "optimizer",
                             "activations", "buffers", "transient"}) {
    table.addColumn(header, TextTable::Align::kRight);
  }
  for (const auto& rank : report.ranks) {
    const double measured = static_cast<double>(rank.measured_peak_bytes);
    const double predicted = static_cast<double>(rank.predicted_peak_bytes);
    std::vector<std::string> row = {std::to_string(rank.rank), bytesText(rank.measured_peak_bytes),
                                    formatBytes(rank.predicted_peak_bytes),
                                    measured > 0 ? formatSignedPercent(predicted / measured - 1.0) : "-",
                                    rank.predicted_peak_at};
    const MemoryParts parts = rank.predicted_peak_parts.value_or(MemoryParts{});
    for (double bytes : {parts.weights, parts.gradients, parts.optimizer, parts.activations, parts.buffers,
                         parts.transient}) {
      row.push_back(formatBytes(static_cast<std::uint64_t>(std::llround(bytes))));
    }
    table.addRow(row);
  }
  table.print(out, "  ");
  out << "  diff: predicted against measured (negative: the prediction is short)\n";
  if (!report.memory_fields_missing.empty()) {
    std::string names;
    for (const auto& name : report.memory_fields_missing) names += (names.empty() ? "" : ", ") + name;
    out << "  the profile lacks " << names << ": the prediction leaves those terms out (profile the model "
        << "again with this version to measure them)\n";
  }
}

// Whether the machine let the run measure the split: one line when it did, a warning per reason
// when it did not.
void printEnvironment(std::ostream& out, const RunEnvironment& environment) {
  out << "environment: " << environment.ranks_on_host << " rank(s) x " << environment.threads << " thread(s) on "
      << environment.usable_cores << " usable core(s)";
  if (environment.other_load_known) {
    char load[32];
    std::snprintf(load, sizeof load, "%.2f", environment.other_load_cores);
    out << "; other processes' load " << load << " core(s)";
  }
  if (environment.profile_reference_ms && std::isfinite(environment.reference_drift)) {
    out << "; reference kernel " << formatSignedPercent(environment.reference_drift) << " against the profile's";
  }
  std::string devices;
  for (const RankEnvironment& rank : environment.ranks) devices += (devices.empty() ? "" : ", ") + rank.device;
  if (devices.find("cuda") != std::string::npos) {
    const std::string transport = environment.ranks.empty() ? "" : environment.ranks.front().transport;
    out << "; ranks on " << devices << (transport == "nccl" ? " over NCCL" : " over Gloo through host copies");
  }
  out << (environment.trusted() ? "; figures trusted\n" : "\n");
  for (const std::string& warning : environment.warnings) out << "WARNING: " << warning << "\n";
  for (const std::string& note : environment.notes) out << "  note: " << note << "\n";
}

// "3-5", or each chunk's range for a rank of several: "0-2, 9-11".
std::string rankLayersText(const RankComparison& rank) {
  if (rank.chunk_layers.empty()) return std::to_string(rank.first_layer) + "-" + std::to_string(rank.last_layer);
  std::string text;
  for (const auto& [first, last] : rank.chunk_layers) {
    text += (text.empty() ? "" : ", ") + std::to_string(first) + "-" + std::to_string(last);
  }
  return text;
}

void printReport(std::ostream& out, const ValidationReport& report, const ValidateRequest& request) {
  const bool replicated = report.replicas > 1;
  const bool chunked = report.ops.placement.chunked();
  out << "validate: " << report.schedule << ", "
      << (chunked ? placementWords(report.ops.placement) : std::to_string(report.stages) + " stages")
      << (replicated ? " x " + std::to_string(report.replicas) + " data-parallel replicas" : std::string()) << ", "
      << report.microbatches << " microbatches" << (replicated ? " per replica" : "") << ", "
      << report.measured_step_ms.size() << " measured steps after " << request.warmup_steps << " warm-up, "
      << request.threads << " thread(s) per rank\n";
  out << "links between ranks (measured): latency " << formatMs(report.link_latency_ms) << " ms, bandwidth "
      << (report.link_bandwidth_measurable
              ? formatBytes(static_cast<std::uint64_t>(report.link_bandwidth_bytes_per_s)) + "/s"
              : std::string("not measurable (4 MiB took no longer than 1 float: faster than the clock "
                            "tells; the prediction charges the latency only)"))
      << "\n";
  if (report.environment) printEnvironment(out, *report.environment);
  if (replicated) {
    out << "links between replicas (measured by all-reduce): latency " << formatMs(report.replica_link_latency_ms)
        << " ms, bandwidth " << formatBytes(static_cast<std::uint64_t>(report.replica_link_bandwidth_bytes_per_s))
        << "/s\n";
  }
  out << "\n";
  TextTable summary;
  summary.addColumn("", TextTable::Align::kLeft);
  summary.addColumn("measured", TextTable::Align::kRight);
  summary.addColumn("predicted", TextTable::Align::kRight);
  summary.addColumn("difference", TextTable::Align::kRight);
  summary.addRow({"step ms (median)", formatMs(report.measured_step_median_ms), formatMs(report.predicted_step_ms),
                  formatSignedPercent(report.error)});
  summary.addRow({"bubble", formatPercent(report.measured_bubble), formatPercent(report.predicted_bubble),
                  formatSignedPercent(report.measured_bubble - report.predicted_bubble).substr(0) + " pts"});
  summary.print(out, "  ");
  out << "\n";
  TextTable ranks;
  std::vector<std::string> headers = {"rank", "layers", "busy ms", "pred", "bubble", "pred", "peak memory", "pred",
                                      "grad diff"};
  if (replicated) headers.insert(headers.begin() + 2, {"replica", "all-reduce ms", "pred"});
  for (const auto& header : headers) {
    ranks.addColumn(header, header == "layers" ? TextTable::Align::kLeft : TextTable::Align::kRight);
  }
  for (const auto& rank : report.ranks) {
    std::vector<std::string> row = {
        std::to_string(rank.rank), rankLayersText(rank),
        formatMs(rank.measured_busy_ms), formatMs(rank.predicted_busy_ms), formatPercent(rank.measured_bubble),
        formatPercent(rank.predicted_bubble), bytesText(rank.measured_peak_bytes), formatBytes(rank.predicted_peak_bytes),
        scientific(rank.grad_max_rel_diff)};
    if (replicated) {
      row.insert(row.begin() + 2, {std::to_string(rank.replica), formatMs(rank.measured_allreduce_ms),
                                   formatMs(report.predicted.ranks[rank.stage].allreduce_ms)});
    }
    ranks.addRow(row);
  }
  ranks.print(out, "  ");
  printMemory(out, report, request);
  // Where a rank's busy time departs from the profile: its ops' medians against the layers' sums.
  const bool splits_w = report.ops.splits_backward;
  TextTable op_table;
  std::vector<std::string> op_headers = {"rank", "F ms", "pred", "B ms", "pred"};
  if (splits_w) op_headers.insert(op_headers.end(), {"W ms", "pred"});
  for (const auto& header : op_headers) op_table.addColumn(header, TextTable::Align::kRight);
  for (const auto& rank : report.ranks) {
    std::vector<std::string> row = {std::to_string(rank.rank), formatMs(rank.measured_forward_ms),
                                    formatMs(rank.predicted_forward_ms), formatMs(rank.measured_backward_ms),
                                    formatMs(rank.predicted_backward_ms)};
    if (splits_w) row.insert(row.end(), {formatMs(rank.measured_weight_ms), formatMs(rank.predicted_weight_ms)});
    op_table.addRow(row);
  }
  out << "\n  median op per rank (one microbatch):\n";
  op_table.print(out, "  ");
  out << "\n  steps ms:";
  for (double ms : report.measured_step_ms) out << " " << formatMs(ms);
  out << "\n  largest op deviation: " << report.worst_op << " " << formatSignedPercent(report.worst_op_deviation) << "\n";
  out << "  gradient check: " << (report.grad_pass ? "pass" : "FAIL") << " (largest relative difference "
      << scientific(report.grad_max_rel_diff) << ", tolerance " << scientific(report.grad_tolerance) << "); loss "
      << report.loss_pipeline << " pipelined vs " << report.loss_reference << " full batch"
      << (replicated ? " (all replicas' shards; gradients averaged over the replicas)" : "") << "\n";
  if (report.recompute) printRecompute(out, report);
}

void runWorker(const ValidateCommandOptions& options, int ranks) {
  const RendezvousInfo rendezvous = rendezvousFromEnvironment(
      options.request.data_parallel,
      std::chrono::milliseconds(static_cast<std::int64_t>(options.request.timeout_s * 1000)));
  if (rendezvous.world_size != ranks) {
    throw Error("WORLD_SIZE=" + std::to_string(rendezvous.world_size) + ": the partition runs on " +
                std::to_string(ranks / options.request.data_parallel) + " stages x " +
                std::to_string(options.request.data_parallel) + " replica(s) = " + std::to_string(ranks) +
                " ranks; start " + std::to_string(ranks) + " ranks, or change --data-parallel");
  }
  pinThreads(options.request.threads);
  // The same heap as the profile's, so that predicted and measured steps pay the same for memory.
  retainFreedMemory();
  std::vector<RankOutcome> outcomes;
  try {
    // Scoped to the rank's run: rank 0's store and process groups are gone before it builds the report.
    GlooWorld world(rendezvous);
    outcomes = runValidationRank(options.request, world);
  } catch (const Error& e) {
    const std::string message = e.what();
    if (message.rfind("rank ", 0) == 0) throw;
    throw Error("rank " + std::to_string(rendezvous.rank) + ": " + message, e.kind());
  }
  if (rendezvous.rank != 0) return;
  const Profile profile = readProfileFile(options.request.profile_path, options.request.microbatch_size);
  const Partition partition = readPartitionFile(options.request.partition_path);
  ValidationReport report = buildValidationReport(options.request, profile, partition, outcomes);
  report.profile_fingerprint = readProfileFingerprint(options.request.profile_path);
  if (options.trace_given) writeOutputFile(options.traceOutput(), validationTrace(report));
  if (options.json) {
    std::cout << toJsonText(validationToJson(report));
  } else {
    printReport(std::cout, report, options.request);
    if (options.trace_given) std::cout << "  trace (predicted and measured): " << options.trace_path << "\n";
  }
  std::cout.flush();
  if (!options.json && report.environment && !report.environment->trusted()) {
    std::cerr << "stagecut: warning: the measured figures of this run cannot be trusted: "
              << report.environment->warnings.front() << "\n";
  }
  if (options.strict && report.environment && !report.environment->trusted()) {
    throw Error("--strict: the run cannot be trusted: " + report.environment->warnings.front(), ErrorKind::kRuntime);
  }
  if (!report.grad_pass) {
    throw Error("gradient check failed: largest relative difference " + scientific(report.grad_max_rel_diff) +
                    " exceeds --grad-tolerance " + scientific(report.grad_tolerance),
                ErrorKind::kRuntime);
  }
}

}  // namespace

void addValidateCommand(CLI::App& app, const std::vector<std::string>& arguments) {
  auto* command = app.add_subcommand("validate", torchCommandDescription("validate"));
  auto options = std::make_shared<ValidateCommandOptions>();
  ValidateRequest& request = options->request;
  command->add_option("profile", request.profile_path, "The stagecut.profile the partition was made from")->required();
  command->add_option("--microbatch-size", request.microbatch_size,
                      "Run at this measured microbatch size of a multi-size profile (default: the size its layers hold)");
  command->add_option("--partition", request.partition_path, "The stagecut.partition/1 to run")->required();
  command->add_option("--schedule", request.schedule, "gpipe, 1f1b, zb-h1; interleaved-1f1b, zb-v or dualpipe-v for a split made with partition --schedule of the same name (zb-v and dualpipe-v run the same V splits)")->capture_default_str();
  command->add_option("--microbatches,-m", request.microbatches, "Microbatches per step (per replica with --data-parallel)")->capture_default_str();
  command->add_option("--steps", request.steps, "Measured steps")->capture_default_str();
  command->add_option("--warmup-steps", request.warmup_steps, "Untimed steps first")->capture_default_str();
  command->add_option("--threads", request.threads, "LibTorch and BLAS threads per rank")->capture_default_str();
  command->add_option("--device", request.device,
                      "auto (the profile's device), cpu, cuda (a GPU per rank while there are enough; else ranks "
                      "share them) or cuda:K (every rank on GPU K)")
      ->capture_default_str();
  command->add_option("--backend", request.backend,
                      "How stages exchange tensors: auto (NCCL where every rank has a GPU of its own and LibTorch "
                      "has NCCL, else Gloo; GPU tensors then go through host copies), gloo or nccl")
      ->capture_default_str();
  command->add_option("--timeout", request.timeout_s, "Seconds a rank waits for a peer before failing")
      ->capture_default_str();
  command->add_option("--grad-tolerance", request.grad_tolerance,
                      "Largest accepted relative gradient difference (default: 1e-4 for a float32 profile, 3e-2 "
                      "for bfloat16, 1e-2 for float16: their rounding)");
  command->add_option("--seed", options->seed, "Seed of the batch")->capture_default_str();
  command->add_option("--recompute", request.recompute,
                      "none, or full: also run the steps with every stage checkpointed and compare")
      ->capture_default_str();
  command->add_option("--optimizer", request.optimizer,
                      "none, sgd, sgd-momentum or adam (float32 profiles; default adam), adam-mixed "
                      "(bfloat16 and float16 ones: float32 master weights, moments and gradients): run at the "
                      "end of every step (learning rate 0), so that measured memory holds its state; match "
                      "partition's --optimizer");
  command->add_option("--data-parallel", request.data_parallel,
                      "Data-parallel replicas of the pipeline: runs stages x replicas ranks")
      ->capture_default_str();
  command->add_option("--trace", options->trace_path, "Write a Chrome trace of the predicted and measured step");
  command->add_flag("--json", options->json, "Print the stagecut.validation/1 document");
  command->add_flag("--strict", options->strict,
                    "Exit 1 when the machine voids the run (oversubscribed, other processes' load, the reference "
                    "kernel drifting from the profile's); the figures are printed either way");
  command->callback([options, arguments, command] {
    options->trace_given = command->count("--trace") > 0;
    options->optimizer_given = command->count("--optimizer") > 0;
    options->tolerance_given = command->count("--grad-tolerance") > 0;
    options->request.batch_seed = parseSeed(options->seed, "--seed");
    const int ranks = checkRequest(*options);
    if (launchedByTorchrun()) {
      runWorker(*options, ranks);
      return;
    }
    checkLocalRanks(options->request, ranks);
    LaunchOptions launch;
    launch.world_size = ranks;
    launch.arguments = arguments;
    launch.stopped_limit = std::chrono::milliseconds(static_cast<std::int64_t>(options->request.timeout_s * 1000));
    launchRanks(launch);
  });
}

}  // namespace stagecut
