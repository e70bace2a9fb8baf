#include "tests/test_support.h"

#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <catch2/catch.hpp>

#include "core/error.h"
#include "core/profile_json.h"

namespace stagecut::testing {

Profile makeGptChain(int blocks) {
  Profile profile = makeProfile(blocks + 3);
  profile.layers[0].name = "embed";
  profile.layers[0].kind = "Embedding";
  for (int b = 0; b < blocks; ++b) {
    profile.layers[static_cast<std::size_t>(b) + 1].name = "block." + std::to_string(b);
    profile.layers[static_cast<std::size_t>(b) + 1].kind = "TransformerBlock";
  }
  profile.layers[static_cast<std::size_t>(blocks) + 1].name = "head";
  profile.layers[static_cast<std::size_t>(blocks) + 1].kind = "LMHead";
  profile.layers[static_cast<std::size_t>(blocks) + 2].name = "loss";
  profile.layers[static_cast<std::size_t>(blocks) + 2].kind = "CrossEntropyLoss";
  return profile;
}

Profile makeProfile(int layers) {
  Profile profile;
  profile.model.name = "test-chain";
  profile.model.source = "test";
  profile.model.config = {{"layers", layers}};
  profile.device.kind = "cpu";
  profile.device.name = "test machine";
  profile.device.threads = 1;
  profile.device.torch = "1.13.1";
  profile.run.microbatch_size = 4;
  profile.run.dtype = "float32";
  profile.run.warmup = 2;
  profile.run.repeats = 5;
  profile.run.timer = "steady_clock";
  for (int i = 0; i < layers; ++i) {
    LayerCost layer;
    layer.index = i;
    layer.name = "layer." + std::to_string(i);
    layer.kind = i % 2 ? "Linear" : "";
    layer.forward_ms = {0.5 + i, 0.4 + i, 0.75 + i, 0.03125, 7};
    layer.backward_ms = TimeStatsMs::exactly(1.25 + 2 * i);
    if (i % 2) {
      layer.backward_input_ms = TimeStatsMs::exactly(0.5 + i);
      layer.backward_weight_ms = TimeStatsMs::exactly(0.75 + i);
      layer.output_shape = std::vector<std::int64_t>{4, 16 + i};
    }
    layer.params = 1000u * static_cast<unsigned>(i + 1);
    layer.param_bytes = 4 * layer.params;
    layer.activation_bytes = 4096u * static_cast<unsigned>(i + 1);
    layer.output_bytes = 256;
    profile.layers.push_back(layer);
  }
  profile.whole_model = WholeModelCost{1.5, 3.25, -0.0125, {}, {}, {}};
  return profile;
}

Partition makePartition(const std::vector<int>& layers_per_stage) {
  Partition partition;
  partition.method = "compute";
  int first = 0;
  for (int count : layers_per_stage) {
    StageCost stage;
    stage.first = first;
    stage.last = first + count - 1;
    stage.forward_ms = 1.5 * count;
    stage.backward_ms = 3.0 * count;
    stage.comm_ms = 0.125;
    stage.cost_ms = stage.forward_ms + stage.backward_ms + stage.comm_ms;
    stage.params = 1000u * static_cast<unsigned>(count);
    stage.memory_bytes = 1u << 20;
    partition.stages.push_back(stage);
    partition.bottleneck_ms = std::max(partition.bottleneck_ms, stage.cost_ms);
    first += count;
  }
  partition.lower_bound_ms = partition.bottleneck_ms * 0.75;
  partition.predicted_step_ms = 42.5;
  partition.predicted_bubble = 0.25;
  return partition;
}

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "stagecut-test-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

void TempDir::write(const std::string& name, const std::string& content) const {
  std::ofstream(file(name), std::ios::binary) << content;
}

std::vector<std::string> TempDir::list() const {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(path_)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

CommandResult runStagecut(const std::string& args, const std::string& environment) {
  return runProgram(STAGECUT_BINARY, args, environment);
}

CommandResult runProgram(const std::string& binary, const std::string& args, const std::string& environment) {
  const TempDir capture;
  const std::string command = environment + " '" + binary + "' " + args + " >'" +
                              capture.file("out") + "' 2>'" + capture.file("err") + "' </dev/null";
  const int status = std::system(command.c_str());
  CommandResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = slurp(capture.file("out"));
  result.err = slurp(capture.file("err"));
  return result;
}

CommandResult runStagecutWithStdout(const std::string& args, const std::string& stdout_redirect) {
  const TempDir capture;
  const std::string command = "'" + std::string(STAGECUT_BINARY) + "' " + args + " " + stdout_redirect + " 2>'" +
                              capture.file("err") + "' </dev/null";
  const int status = std::system(command.c_str());
  CommandResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.err = slurp(capture.file("err"));
  return result;
}

Profile makeSizedProfile(int layers, const std::vector<int>& sizes,
                         const std::function<void(LayerCost& layer, int size)>& cost_at) {
  Profile profile = makeProfile(layers);
  profile.run.microbatch_size = sizes.back();
  for (int size : sizes) {
    MicrobatchSizeCosts entry;
    entry.microbatch_size = size;
    entry.layers = profile.layers;
    for (auto& layer : entry.layers) cost_at(layer, size);
    profile.microbatch_sizes.push_back(entry);
  }
  profile.layers = profile.microbatch_sizes.back().layers;
  return profile;
}

std::string inputErrorOf(const std::function<void()>& run) {
  try {
    run();
  } catch (const Error& e) {
    CHECK(e.exitCode() == 2);
    return e.what();
  }
  return "";
}

void writeTinyGptSplit(const TempDir& dir) {
  REQUIRE(runStagecut("profile --model gpt --preset gpt-tiny --layers 2 --seq 16 --vocab 256 --microbatch 2" +
                      kQuickProfileFlags + " -o " + dir.file("p.json"))
              .exit_code == 0);
  REQUIRE(runStagecut("partition " + dir.file("p.json") + " --stages 2 --microbatches 4 -o " + dir.file("s.json"))
              .exit_code == 0);
}

std::string profileRejection(const nlohmann::json& document) {
  const std::string message = inputErrorOf([&] { profileFromJson(document, "p.json"); });
  CHECK(message.find('\n') == std::string::npos);
  return message;
}

std::vector<std::string> goldenDocuments(const std::string& prefix) {
  std::vector<std::string> paths;
  for (const auto& folder : std::filesystem::directory_iterator(STAGECUT_SOURCE_DIR "/tests/golden")) {
    if (!folder.is_directory()) continue;
    for (const auto& file : std::filesystem::directory_iterator(folder.path())) {
      if (file.path().filename().string().rfind(prefix, 0) == 0) paths.push_back(file.path().string());
    }
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

void checkInputError(const CommandResult& result, const std::string& message) {
  CHECK(result.exit_code == 2);
  CHECK(result.out.empty());
  CHECK(result.err == "stagecut: " + message + "\n");
}

}  // namespace stagecut::testing
