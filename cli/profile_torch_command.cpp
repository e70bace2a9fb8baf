#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <utility>

#include <unistd.h>

#include "cli/commands.h"
#include "cli/torch_commands.h"
#include "cli/number_flags.h"
#include "cli/profile_display.h"
#include "cli/progress_bar.h"
#include "cli/text_table.h"
#include "cli/version.h"
#include "core/error.h"
#include "core/json_document.h"
#include "core/output_path.h"
#include "core/profile_json.h"
#include "core/profile_shards.h"
#include "core/units.h"
#include "profiler/measure_checkpoint.h"
#include "profiler/model_families.h"
#include "profiler/model_fingerprint.h"
#include "profiler/profile_request.h"
#include "profiler/recorded_config.h"
#include "profiler/zoo.h"

namespace stagecut {

namespace {

struct ProfileCommandOptions {
  ProfileRequest request;
  std::string microbatch = "4";
  std::string seed = "0";
  std::string output_path;
  bool output_given = false;  ///< -o, even as '' (refused by name)
  bool json = false;
  bool resume = false;
  std::string tensor_parallel;  ///< --tensor-parallel: one degree, or several measured in turn

  /// -o, with the TorchScript model as the input it must not be.
  OutputPath output() const {
    return OutputPath(output_path, "-o", {{"the --torchscript model", request.torchscript_path}});
  }
  /// The side file of -o, under the same rules; the command names it, so no flag. A profile of
  /// several tensor-parallel degrees keeps one per degree (`tp_degree`), so that an interrupted
  /// run keeps the degrees it finished; 0 for one degree.
  OutputPath progressOutput(int tp_degree = 0) const {
    const std::string infix = tp_degree > 0 ? ".tp" + std::to_string(tp_degree) : "";
    return OutputPath(output_path + infix + ".resume.json", "", {{"the --torchscript model", request.torchscript_path}});
  }
};

volatile std::sig_atomic_t g_stop_signal = 0;

extern "C" void noteStopSignal(int signal_number) { g_stop_signal = signal_number; }

// While alive, SIGINT and SIGTERM ask the profiler to stop at its next timing instead of killing
// the process, so that it can keep its samples and leave no partial output.
class StopSignals {
 public:
  StopSignals() {
    g_stop_signal = 0;
    struct sigaction action {};
    action.sa_handler = noteStopSignal;
    sigemptyset(&action.sa_mask);
    // A second Ctrl-C, while the current timing finishes, kills at once as the user expects.
    action.sa_flags = SA_RESETHAND | SA_RESTART;
    sigaction(SIGINT, &action, &previous_int_);
    sigaction(SIGTERM, &action, &previous_term_);
  }
  ~StopSignals() {
    sigaction(SIGINT, &previous_int_, nullptr);
    sigaction(SIGTERM, &previous_term_, nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  struct sigaction previous_int_ {};
  struct sigaction previous_term_ {};
};

const char* signalName(int signal_number) {
  return signal_number == SIGINT ? "SIGINT" : signal_number == SIGTERM ? "SIGTERM" : "a signal";
}

const char* const kModelFingerprintKey = "torchscript fingerprint";

// What a zoo setting's flag holds in `zoo`.
nlohmann::json flagValue(const ZooOptions& zoo, const ZooSetting& setting) {
  if (setting.size != nullptr) return zoo.*setting.size;
  if (setting.number != nullptr) return zoo.*setting.number;
  const std::optional<bool>& choice = zoo.*setting.choice;
  return choice ? nlohmann::json(*choice) : nlohmann::json();
}

// What decides the measured numbers: a side file is reused only by the same request.
nlohmann::json requestKey(const ProfileRequest& request, const std::vector<int>& sizes) {
  const ZooOptions& zoo = request.zoo;
  const MeasureOptions& measure = request.measure;
  // Keyed by the flags' own spellings, so that a mismatch names the flag to look at.
  nlohmann::json key = {{"model", zoo.family}, {"preset", zoo.preset}, {"layers", zoo.layers}, {"hidden", zoo.hidden},
          {"heads", zoo.heads}, {"ffn", zoo.ffn}, {"seq", zoo.seq}, {"vocab", zoo.vocab},
          {"image-size", zoo.image_size}, {"classes", zoo.classes}, {"seed", zoo.seed},
          {"torchscript", request.torchscript_path}, {"input", request.input_spec},
          {"device", request.device}, {"timer", request.timer}, {"threads", request.threads},
          {"warmup", measure.warmup_rounds}, {"min-repeats", measure.min_repeats},
          {"max-repeats", measure.max_repeats}, {"cv-target", measure.cv_target},
          {"budget", measure.budget_s_per_layer}, {"recompute", measure.recompute},
          {"microbatch", sizes}};
  // Settings newer than the side-file format, keyed only when given, so older side files still match.
  if (!request.dtype.empty()) key["dtype"] = request.dtype;
  if (measure.time_every_layer) key["time-every-layer"] = true;
  if (zoo.parallel.tensor_parallel != 1) key["tensor-parallel"] = zoo.parallel.tensor_parallel;
  if (zoo.parallel.sequence_parallel) key["sequence-parallel"] = true;
  // The family's settings beyond the sizes above (llama's --kv-heads, --rope-theta, --norm-eps).
  if (request.torchscript_path.empty()) {
    const ModelFamily family = findModelFamily(modelFamilies(), zoo.family);
    for (const ZooSetting& setting : zooSettings()) {
      if (setting.flag != nullptr && family.takes(setting.key)) {
        key[std::string(setting.flag).substr(2)] = flagValue(zoo, setting);  // "--kv-heads" as "kv-heads"
      }
    }
  }
  // The same path may hold another model by now: samples of two models must not mix in a layer.
  // An unreadable file has no fingerprint; the loader then says what is wrong with it.
  if (!request.torchscript_path.empty() && ::access(request.torchscript_path.c_str(), R_OK) == 0) {
    key[kModelFingerprintKey] = torchScriptFingerprint(request.torchscript_path);
  }
  return key;
}

// The first flag of the request that differs, for the message.
std::string firstDifference(const nlohmann::json& saved, const nlohmann::json& now) {
  for (const auto& [key, value] : now.items()) {
    if (saved.contains(key) && saved.at(key) != value && key != kModelFingerprintKey) return "another --" + key;
  }
  return "another stagecut version";
}

// The side file of an interrupted run: read with --resume, checked against this request.
std::optional<MeasureCheckpoint> loadProgress(const std::string& path, const nlohmann::json& key) {
  if (!std::filesystem::exists(path)) {
    std::cerr << "stagecut: note: --resume: no " << path << " from an interrupted run; measuring from the start\n";
    return std::nullopt;
  }
  MeasureCheckpoint checkpoint = measureCheckpointFromJson(parseJsonDocument(readTextFile(path), path), path);
  const auto saved_model = checkpoint.request.find(kModelFingerprintKey);
  if (key.contains(kModelFingerprintKey) && saved_model != checkpoint.request.end() &&
      *saved_model != key[kModelFingerprintKey]) {
    throw Error(path + ": holds samples of another version of " + key["torchscript"].get<std::string>() +
                ", which has changed since they were taken; delete the file to profile the new one from the start");
  }
  if (checkpoint.request != key) {
    throw Error(path + ": was written by a profile run with " + firstDifference(checkpoint.request, key) +
                "; rerun that command with --resume, or delete the file to start over");
  }
  const std::vector<int> asked = key.at("microbatch").get<std::vector<int>>();
  std::size_t samples = 0;
  for (const auto& size : checkpoint.sizes) {
    // The run writes only the sizes it measures: another one was put there by hand.
    if (std::find(asked.begin(), asked.end(), size.microbatch_size) == asked.end()) {
      throw Error(path + ": holds samples at microbatch size " + std::to_string(size.microbatch_size) +
                  ", which this run does not measure; delete the file and profile again without --resume");
    }
    samples += size.sampleCount();
  }
  std::cerr << "stagecut: resuming from " << path << " (" << samples << " timed samples kept)\n";
  return checkpoint;
}

// Writes the side file at most once a second (and when asked to), so that small layers do not
// spend their time on the disk; an interrupted run writes the last samples before it exits.
class ProgressFile {
 public:
  /// `output` with an empty path: no side file (no -o).
  ProgressFile(OutputPath output, nlohmann::json key) : output_(std::move(output)), key_(std::move(key)) {}

  /// Starts from a resumed run's samples: stopped before its first new sample, the side file
  /// still holds them, and the message says so.
  void seed(const MeasureCheckpoint& checkpoint) {
    latest_ = checkpoint;
    written_ = true;
  }
  void update(const MeasureCheckpoint& checkpoint) {
    if (output_.path.empty()) return;
    latest_ = checkpoint;
    latest_.request = key_;
    has_latest_ = true;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_write_ >= std::chrono::seconds(1)) flush();
  }
  void flush() {
    if (!has_latest_ || output_.path.empty()) return;
    writeOutputFile(output_, toJsonText(measureCheckpointToJson(latest_)));
    last_write_ = std::chrono::steady_clock::now();
    written_ = true;
  }
  bool written() const { return written_; }
  std::size_t samples() const {
    std::size_t count = 0;
    for (const auto& size : latest_.sizes) count += size.sampleCount();
    return count;
  }
  void remove() const {
    if (!output_.path.empty()) std::remove(output_.path.c_str());
  }
  const std::string& path() const { return output_.path; }

 private:
  OutputPath output_;
  nlohmann::json key_;
  MeasureCheckpoint latest_;
  bool has_latest_ = false;
  bool written_ = false;
  std::chrono::steady_clock::time_point last_write_{};
};

// A profile whose final write failed (a full disk) is not lost: its samples go to the side files
// (one per tensor-parallel degree when there are several), from which --resume continues without
// timing the finished sizes and degrees again. Returns the clause that says so, for the one-line
// message.
std::string keptForResume(std::vector<ProgressFile>& files) {
  std::size_t samples = 0;
  std::string paths;
  for (ProgressFile& progress : files) {
    if (progress.path().empty()) return "";
    try {
      progress.flush();
    } catch (const Error& error) {
      if (!progress.written()) return std::string("; the samples could not be kept either: ") + error.what();
      return "; " + progress.path() + " keeps the samples of its last save (updating it failed too); rerun the " +
             "same command with --resume to continue from them";
    }
    if (!progress.written()) continue;
    samples += progress.samples();
    paths += (paths.empty() ? "" : ", ") + progress.path();
  }
  if (paths.empty()) return "";
  return "; " + std::to_string(samples) + " timed samples kept in " + paths +
         "; rerun the same command with --resume to continue from them";
}

// Test hook: STAGECUT_TEST_INTERRUPT_AFTER=K[,SIGNAL] raises SIGINT (or signal number SIGNAL)
// after K timed samples, as a user's Ctrl-C or a job scheduler's SIGTERM would.
struct TestInterrupt {
  long after_samples = 0;
  int signal_number = SIGINT;
};

TestInterrupt testInterrupt() {
  TestInterrupt hook;
  const char* value = std::getenv("STAGECUT_TEST_INTERRUPT_AFTER");
  if (value == nullptr) return hook;
  char* rest = nullptr;
  hook.after_samples = std::strtol(value, &rest, 10);
  if (rest != nullptr && *rest == ',') hook.signal_number = static_cast<int>(std::strtol(rest + 1, nullptr, 10));
  return hook;
}

// The families that take `setting`: "gpt or llama" (`last_separator` " or ").
std::string familiesTaking(const std::vector<ModelFamily>& families, const ZooSetting& setting,
                           const std::string& last_separator) {
  return familyNamesWhere(families, [&](const ModelFamily& f) { return f.takes(setting.key); }, last_separator);
}

// A zoo setting's flag as given: for the zoo (a TorchScript module has its own sizes), for a
// family that takes it, and a size or number where leaving it out means the preset's.
void checkSettingFlag(const CLI::App& command, const ZooSetting& setting, const ProfileRequest& request,
                      const std::vector<ModelFamily>& families) {
  const std::string flag = setting.flag;
  const std::string takers = "--model " + familiesTaking(families, setting, " or ");
  if (!request.torchscript_path.empty()) {
    if (setting.size != nullptr) throw Error(flag + ": sizes a zoo model; a --torchscript module has its own");
    throw Error(flag + ": is a setting of " + takers + ", not of a --torchscript module");
  }
  if (!findModelFamily(families, request.zoo.family).takes(setting.key)) {
    throw Error(flag + ": is a setting of " + takers + ", not of --model " + request.zoo.family);
  }
  if (setting.size != nullptr && request.zoo.*setting.size < 1) {
    throw Error(flag + " " + std::to_string(request.zoo.*setting.size) +
                ": must be 1 or more; leave it out for the preset's");
  }
  if (setting.number != nullptr && !(request.zoo.*setting.number > 0)) {
    throw Error(flag + " " + command.get_option(flag)->results().front() +
                ": must be above 0; leave it out for the preset's");
  }
}

// What the flags alone can get wrong, refused before LibTorch starts. A zoo size left out takes
// the preset's; given, it must be a size (zero is not "the default").
void checkProfileFlags(const CLI::App& command, const ProfileRequest& request) {
  const bool torchscript = !request.torchscript_path.empty();
  const std::vector<ModelFamily> families = modelFamilies();
  for (const ZooSetting& setting : zooSettings()) {
    if (setting.flag == nullptr || command.count(setting.flag) == 0) continue;
    checkSettingFlag(command, setting, request, families);
  }
  if (command.count("--tensor-parallel") > 0 && torchscript) {
    throw Error("--tensor-parallel: sizes a zoo model; a --torchscript module has its own");
  }
  if (torchscript && request.input_spec.empty()) {
    throw Error("--torchscript " + request.torchscript_path + ": needs --input, e.g. --input 8x3x224x224:float32");
  }
  if (!torchscript && !request.input_spec.empty()) {
    throw Error("--input " + request.input_spec + ": is the sample input of a --torchscript module; a zoo model "
                "makes its own");
  }
  requireThreadsFitCores("--threads", request.threads);
  // The flags' own ranges are the flag table's (cli/flag_bounds.cpp), checked while parsing.
  const MeasureOptions& measure = request.measure;
  requireWholeInRange("--max-repeats", measure.max_repeats, measure.min_repeats, 1000000,
                      "timed rounds (no fewer than --min-repeats)");
}

// --model and --preset, the zoo's settings (each with the families that take it, from the
// registry) and the degrees, and the TorchScript source.
void addModelFlags(CLI::App& command, ProfileCommandOptions& options) {
  ProfileRequest& request = options.request;
  ZooOptions& zoo = request.zoo;
  const std::vector<ModelFamily> families = modelFamilies();
  std::vector<std::string> names, presets;
  for (const ModelFamily& family : families) {
    names.push_back(family.name);
    if (family.presets.empty()) continue;
    std::string text = family.name + " preset: " + family.default_preset + " (default)";
    for (const std::string& preset : family.presets) text += preset == family.default_preset ? "" : ", " + preset;
    presets.push_back(text);
  }
  zoo.family = "gpt";
  command.add_option("--model", zoo.family, "Built-in model: " + joinedNames(names, " or "))->capture_default_str();
  command.add_option("--preset", zoo.preset, joinedNames(presets, "; "));
  for (const ZooSetting& setting : zooSettings()) {
    if (setting.flag == nullptr) continue;
    const std::string help = std::string(setting.help) + " (" + familiesTaking(families, setting, ", ") + ")";
    if (setting.size != nullptr) command.add_option(setting.flag, zoo.*setting.size, help);
    if (setting.number != nullptr) command.add_option(setting.flag, zoo.*setting.number, help);
  }
  const std::string sharded =
      familyNamesWhere(families, [](const ModelFamily& f) { return f.tensor_parallel; }, " or ");
  command.add_option("--tensor-parallel", options.tensor_parallel,
                     sharded + ": profile the shard one of this many tensor-parallel ranks holds (heads, KV heads, "
                     "FFN and vocabulary divided as Megatron divides them), its collectives recorded per layer; "
                     "several degrees (1,2,4,8) are measured in turn into one profile (format 3) for plan --gpus")
      ->default_str("1");
  command.add_flag("--sequence-parallel", zoo.parallel.sequence_parallel,
                   "With --tensor-parallel: Megatron's sequence parallelism (all-gather and reduce-scatter)");
  command.add_option("--torchscript", request.torchscript_path,
                     "A torch.jit.save'd module whose top-level children form a chain");
  command.add_option("--input", request.input_spec,
                     "TorchScript sample input, e.g. 8x3x224x224:float32 or 4x512:int64:0..50257");
}

// Where and how to time: device, precision, timer, rounds and what else to measure.
void addMeasureFlags(CLI::App& command, ProfileCommandOptions& options) {
  ProfileRequest& request = options.request;
  MeasureOptions& measure = request.measure;
  command.add_option("--microbatch", options.microbatch,
                     "Samples per microbatch, or several sizes for `stagecut plan` (e.g. 1,2,4,8)")
      ->capture_default_str();
  command.add_option("--threads", request.threads, "LibTorch and BLAS threads (one core stands for one device)")
      ->capture_default_str();
  command.add_option("--device", request.device, "cpu, cuda or cuda:K")->capture_default_str();
  command.add_option("--dtype", request.dtype,
                     "float32, bfloat16 or float16 (also fp32, bf16, fp16): the weights', activations' and floating "
                     "inputs' precision; the loss is computed in float32 as frameworks do (default: the model's own, "
                     "float32 for the zoo)");
  command.add_option("--timer", request.timer, "steady_clock (CPU), cuda-events or cupti (CUDA)")
      ->capture_default_str();
  command.add_option("--warmup", measure.warmup_rounds,
                     "Untimed forward and backward passes of the whole model first (default: 0 on the CPU, "
                     "where the memory sweep has run every kind of layer already; 1 on a GPU)");
  command.add_option("--min-repeats", measure.min_repeats, "Timed rounds at least")->capture_default_str();
  command.add_option("--max-repeats", measure.max_repeats, "Timed rounds at most")->capture_default_str();
  command.add_option("--cv-target", measure.cv_target, "Stop a layer once its coefficient of variation is below this")
      ->capture_default_str();
  command.add_option("--budget", measure.budget_s_per_layer, "Seconds of timing per layer before it stops")
      ->capture_default_str();
  command.add_option("--seed", options.seed, "Seed of the weights and the sample batch")->capture_default_str();
  command.add_flag("--time-every-layer", measure.time_every_layer,
                   "Time every layer; by default, of 4 or more identical layers (a model's blocks), the first, middle "
                   "and last are timed and the others take their figures");
  command.add_flag("--recompute", measure.recompute,
                   "Also time each layer's forward under no_grad: the extra forward of activation checkpointing");
  command.add_flag("--strict", measure.pace.strict,
                   "Exit 1 when the machine's pace (the reference kernel between rounds, on the CPU) moves more than "
                   "15% during the profile; by default the rounds timed in that phase are timed again");
}

void addOutputFlags(CLI::App& command, ProfileCommandOptions& options) {
  command.add_option("-o,--output", options.output_path,
                     "Write the profile JSON here (stagecut.profile/1; /2 with several microbatch sizes)");
  command.add_flag("--resume", options.resume,
                   "Continue an interrupted run from the samples it kept in <output>.resume.json");
  command.add_flag("--json", options.json, "Print the profile JSON on stdout instead of the table");
}

// The tensor-parallel degrees to measure, ascending: the flag's, or the zoo's default (1).
std::vector<int> tensorParallelDegrees(const ProfileCommandOptions& options, const CLI::App& command) {
  if (command.count("--tensor-parallel") == 0) return {options.request.zoo.parallel.tensor_parallel};
  return parseWholeNumberList(options.tensor_parallel, "--tensor-parallel", "tensor-parallel degree", "degree");
}

// The request at one degree of several or of one; sequence parallelism where the degree shards
// (2 or more), since a list holds 1 beside the others.
ProfileRequest requestAtDegree(ProfileRequest request, int degree, bool several) {
  request.zoo.parallel.tensor_parallel = degree;
  if (several && degree == 1) request.zoo.parallel.sequence_parallel = false;
  return request;
}

// The request the flags make, checked: every degree against the model's shape and every side file
// before the first is measured, so that a run of hours does not stop at its last degree.
ProfileRequest requestOfFlags(const ProfileCommandOptions& options, const CLI::App& command,
                              const std::vector<int>& degrees, const std::vector<int>& sizes) {
  ProfileRequest request = options.request;
  checkProfileFlags(command, request);
  request.zoo.seed = parseSeed(options.seed, "--seed");
  request.measure.seed = request.zoo.seed;
  request.measure.microbatch_size = sizes.back();
  if (sizes.size() > 1) request.microbatch_sizes = sizes;
  if (options.resume && !options.output_given) {
    throw Error("--resume: needs -o FILE; the samples of an interrupted run are kept in FILE.resume.json");
  }
  const bool several = degrees.size() > 1;
  if (options.output_given) {
    checkOutputPath(options.output());
    for (int degree : degrees) checkOutputPath(options.progressOutput(several ? degree : 0));
  }
  if (several && request.torchscript_path.empty()) {
    for (int degree : degrees) checkZooOptions(profiledZooOptions(requestAtDegree(request, degree, several)));
  }
  return request;
}

// Runs the profile with Ctrl-C and SIGTERM turned into a stop that keeps the samples taken.
// `degree` names the tensor-parallel degree being measured when there are several ("" else).
Profile measureStoppably(const ProfileRequest& request, const ProfileCommandOptions& options, ProgressFile& progress,
                         ProgressBar& bar, const std::string& degree) {
  const StopSignals stop_signals;
  try {
    return runProfile(request);
  } catch (const Error& error) {
    if (error.kind() != ErrorKind::kInterrupted) throw;
    bar.finish();
    progress.flush();
    const int signal_number = error.exitCode() - 128;
    const std::string kept =
        progress.path().empty() ? "nothing was kept (without -o there is no progress file)"
        : !progress.written()   ? "nothing was measured yet to keep"
                                : std::to_string(progress.samples()) + " timed samples kept in " + progress.path() +
                                    "; rerun the same command with --resume to continue";
    throw Error::interrupted(std::string("profile stopped by ") + signalName(signal_number) + " " + degree + error.what() +
                                 "; nothing written to " + (options.output_given ? options.output_path : "stdout") +
                                 "; " + kept,
                             signal_number);
  }
}

// The profile's provenance, then the file, the table or the JSON.
void reportProfile(Profile& profile, const ProfileCommandOptions& options, std::vector<ProgressFile>& progress,
                   const std::string& command_line) {
  profile.run.extra["command"] = command_line;
  profile.run.extra["stagecut"] = STAGECUT_VERSION;
  profile.run.extra["build_type"] = STAGECUT_BUILD_TYPE;
  if (std::string(STAGECUT_BUILD_TYPE) != "Release" && std::string(STAGECUT_BUILD_TYPE) != "RelWithDebInfo") {
    std::cerr << "stagecut: warning: this is a " << STAGECUT_BUILD_TYPE
              << " build; its timings are not those of an optimised build\n";
  }
  if (options.output_given) {
    try {
      writeProfileFile(options.output(), profile);
    } catch (const Error& error) {
      throw Error(error.what() + keptForResume(progress), error.kind());
    }
    for (const ProgressFile& file : progress) file.remove();
  }
  if (options.json) {
    std::cout << toJsonText(profileToJson(profile));
  } else {
    printProfileTable(std::cout, profile);
    if (options.output_given) std::cout << "\nwrote " << options.output_path << "\n";
  }
}

// One degree's profile, its samples kept in `progress` as they are taken (and resumed from it).
Profile measureDegree(const ProfileCommandOptions& options, ProfileRequest request, ProgressFile& progress,
                      const nlohmann::json& key, bool several) {
  if (options.resume) request.resume = loadProgress(progress.path(), key);
  if (request.resume) progress.seed(*request.resume);
  // Raised once, as a user's Ctrl-C is: the checkpoints between it and the stop must not raise a
  // second one, which the handler (reset by its first) would let kill the process.
  TestInterrupt interrupt = testInterrupt();
  request.on_checkpoint = [&progress, interrupt](const MeasureCheckpoint& checkpoint) mutable {
    progress.update(checkpoint);
    if (interrupt.after_samples > 0 && progress.samples() >= static_cast<std::size_t>(interrupt.after_samples)) {
      interrupt.after_samples = 0;
      std::raise(interrupt.signal_number);
    }
  };
  request.measure.stop_signal = [] { return static_cast<int>(g_stop_signal); };
  ProgressBar bar;
  request.measure.on_progress = profileProgressReporter(bar);
  const std::string degree =
      several ? "(tensor-parallel degree " + std::to_string(request.zoo.parallel.tensor_parallel) + ") " : "";
  Profile profile = measureStoppably(request, options, progress, bar, degree);
  bar.finish();
  return profile;
}

void runProfileCommand(ProfileCommandOptions& options, const CLI::App& command, const std::string& command_line) {
  options.output_given = command.count("--output") > 0;
  const std::vector<int> degrees = tensorParallelDegrees(options, command);
  const std::vector<int> sizes = parseMicrobatchSizes(options.microbatch, "--microbatch");
  const ProfileRequest base = requestOfFlags(options, command, degrees, sizes);
  const bool several = degrees.size() > 1;
  std::vector<ProgressFile> progress;
  progress.reserve(degrees.size());  // measureDegree's callbacks hold on to their file
  std::vector<Profile> points;
  for (std::size_t i = 0; i < degrees.size(); ++i) {
    if (several) {
      std::cerr << "stagecut: tensor-parallel degree " << degrees[i] << " (" << i + 1 << " of " << degrees.size()
                << ")\n";
    }
    const ProfileRequest request = requestAtDegree(base, degrees[i], several);
    const nlohmann::json key = requestKey(request, sizes);
    progress.emplace_back(options.output_given ? options.progressOutput(several ? degrees[i] : 0) : OutputPath(""), key);
    points.push_back(measureDegree(options, request, progress.back(), key, several));
    // Kept whole on disk: a later degree's interruption resumes after this one.
    if (several) progress.back().flush();
  }
  Profile profile = profileOfDegrees(points, options.output_given ? options.output_path : "the profile");
  reportProfile(profile, options, progress, command_line);
}

}  // namespace

void addProfileCommand(CLI::App& app, const std::string& command_line) {
  auto* command = app.add_subcommand("profile", torchCommandDescription("profile"));
  auto options = std::make_shared<ProfileCommandOptions>();
  addModelFlags(*command, *options);
  addMeasureFlags(*command, *options);
  addOutputFlags(*command, *options);
  command->callback([options, command_line, command] { runProfileCommand(*options, *command, command_line); });
}

}  // namespace stagecut
