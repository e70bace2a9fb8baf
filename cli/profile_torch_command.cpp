#include <iostream>

#include "cli/commands.h"
#include "cli/profile_display.h"
#include "cli/progress_bar.h"
#include "cli/text_table.h"
#include "cli/version.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/json_document.h"
#include "core/profile_json.h"
#include "core/units.h"
#include "profiler/profile_request.h"

namespace stagecut {

namespace {

struct ProfileCommandOptions {
  ProfileRequest request;
  std::string output_path;
  bool json = false;
};

}  // namespace

void addProfileCommand(CLI::App& app, const std::string& command_line) {
  auto* command = app.add_subcommand(
      "profile", "Measure every layer's forward, backward (B and W apart) and memory");
  auto options = std::make_shared<ProfileCommandOptions>();
  ProfileRequest& request = options->request;
  MeasureOptions& measure = request.measure;
  ZooOptions& zoo = request.zoo;
  zoo.family = "gpt";
  command->add_option("--model", zoo.family, "Built-in model: mlp, gpt or vgg16")->capture_default_str();
  command->add_option("--preset", zoo.preset, "gpt preset: gpt2-small, gpt2-medium, gpt2-large, gpt-tiny");
  command->add_option("--layers", zoo.layers, "gpt blocks or mlp layers (overrides the preset)");
  command->add_option("--hidden", zoo.hidden, "Model width");
  command->add_option("--heads", zoo.heads, "Attention heads");
  command->add_option("--ffn", zoo.ffn, "gpt MLP width (default 4 x hidden)");
  command->add_option("--seq", zoo.seq, "gpt sequence length");
  command->add_option("--vocab", zoo.vocab, "gpt vocabulary size");
  command->add_option("--image-size", zoo.image_size, "vgg16 image height and width (default 224)");
  command->add_option("--classes", zoo.classes, "vgg16 classes (default 1000)");
  command->add_option("--torchscript", request.torchscript_path,
                      "A torch.jit.save'd module whose top-level children form a chain");
  command->add_option("--input", request.input_spec,
                      "TorchScript sample input, e.g. 8x3x224x224:float32 or 4x512:int64:0..50257");
  command->add_option("--microbatch", measure.microbatch_size, "Samples per microbatch")->capture_default_str();
  command->add_option("--threads", request.threads, "LibTorch and BLAS threads (one core stands for one device)")
      ->capture_default_str();
  command->add_option("--device", request.device, "cpu, cuda or cuda:K")->capture_default_str();
  command->add_option("--timer", request.timer, "steady_clock (CPU), cuda-events or cupti (CUDA)")
      ->capture_default_str();
  command->add_option("--warmup", measure.warmup_rounds, "Untimed rounds first")->capture_default_str();
  command->add_option("--min-repeats", measure.min_repeats, "Timed rounds at least")->capture_default_str();
  command->add_option("--max-repeats", measure.max_repeats, "Timed rounds at most")->capture_default_str();
  command->add_option("--cv-target", measure.cv_target, "Stop a layer once its coefficient of variation is below this")
      ->capture_default_str();
  command->add_option("--budget", measure.budget_s_per_layer, "Seconds of timing per layer before it stops")
      ->capture_default_str();
  command->add_option("--seed", zoo.seed, "Seed of the weights and the sample batch")->capture_default_str();
  command->add_option("-o,--output", options->output_path, "Write the stagecut.profile/1 JSON here");
  command->add_flag("--json", options->json, "Print the profile JSON on stdout instead of the table");

  command->callback([options, command_line] {
    ProfileRequest run_request = options->request;
    run_request.measure.seed = run_request.zoo.seed;
    if (!run_request.torchscript_path.empty() && run_request.input_spec.empty()) {
      throw Error("--torchscript " + run_request.torchscript_path +
                  ": needs --input, e.g. --input 8x3x224x224:float32");
    }
    if (!options->output_path.empty()) checkWritable(options->output_path);
    ProgressBar bar;
    run_request.measure.on_progress = profileProgressReporter(bar);
    Profile profile = runProfile(run_request);
    bar.finish();
    profile.run.extra["command"] = command_line;
    profile.run.extra["stagecut"] = STAGECUT_VERSION;
    profile.run.extra["build_type"] = STAGECUT_BUILD_TYPE;
    if (std::string(STAGECUT_BUILD_TYPE) != "Release" && std::string(STAGECUT_BUILD_TYPE) != "RelWithDebInfo") {
      std::cerr << "stagecut: warning: this is a " << STAGECUT_BUILD_TYPE
                << " build; its timings are not those of an optimised build\n";
    }
    if (!options->output_path.empty()) writeProfileFile(options->output_path, profile);
    if (options->json) {
      std::cout << toJsonText(profileToJson(profile));
    } else {
      printProfileTable(std::cout, profile);
      if (!options->output_path.empty()) std::cout << "\nwrote " << options->output_path << "\n";
    }
  });
}

}  // namespace stagecut
