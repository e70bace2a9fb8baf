// The zoo's checks before anything is allocated: shared bounds, the memory rule, and the check of
// a whole request (which validate runs on a profile's model.config before any rank starts).
#include "profiler/zoo_checks.h"

#include "core/error.h"
#include "core/suggest.h"
#include "profiler/machine_memory.h"

namespace stagecut {

namespace {

struct GptPreset {
  const char* name;
  GptShape shape;
};

// GPT-2 shapes (Radford et al. 2019); gpt-tiny is the fast one for tests.
constexpr GptPreset kPresets[] = {
    {"gpt2-small", {12, 768, 12, 3072, 1024, 50257}},
    {"gpt2-medium", {24, 1024, 16, 4096, 1024, 50257}},
    {"gpt2-large", {36, 1280, 20, 5120, 1024, 50257}},
    {"gpt-tiny", {4, 128, 4, 512, 64, 8192}},
    // The demo's model: profiled in about a minute on 2 cores, with a vocabulary large enough
    // that the embedding holds many parameters and little compute and the head the opposite.
    {"gpt-demo", {6, 256, 4, 1024, 128, 16384}},
};

}  // namespace

GptShape resolveGptShape(const ZooOptions& options) {
  const std::string preset = options.preset.empty() ? "gpt2-small" : options.preset;
  const GptPreset* found = nullptr;
  for (const auto& candidate : kPresets) {
    if (preset == candidate.name) found = &candidate;
  }
  if (!found) {
    throw Error("--preset " + preset + ": not a gpt preset" + unknownNameHint(preset, gptPresets()));
  }
  GptShape shape = found->shape;
  if (options.layers) shape.layers = options.layers;
  if (options.hidden) shape.hidden = options.hidden;
  if (options.heads) shape.heads = options.heads;
  if (options.ffn) shape.ffn = options.ffn;
  else if (options.hidden) shape.ffn = 4 * options.hidden;
  if (options.seq) shape.seq = options.seq;
  if (options.vocab) shape.vocab = options.vocab;
  requireSize("--layers", shape.layers, 4096);
  requireSize("--hidden", shape.hidden, 65536);
  requireSize("--heads", shape.heads, 4096);
  requireSize("--ffn", shape.ffn, 262144);
  requireSize("--seq", shape.seq, 131072);
  requireSize("--vocab", shape.vocab, 1 << 22);
  if (shape.hidden % shape.heads != 0) {
    throw Error("--hidden " + std::to_string(shape.hidden) + " is not divisible by --heads " +
                std::to_string(shape.heads) + "; pick a head count that divides the width");
  }
  return shape;
}

std::vector<std::string> gptPresets() {
  std::vector<std::string> names;
  for (const auto& preset : kPresets) names.push_back(preset.name);
  return names;
}

void checkGpt(const ZooOptions& options) {
  const GptShape shape = resolveGptShape(options);
  const double hidden = shape.hidden;
  const double block = 4.0 * hidden * hidden + 2.0 * hidden * shape.ffn;
  requireWeightsFit((2.0 * shape.vocab + shape.seq) * hidden + shape.layers * block, "gpt");
}

void checkMlp(const ZooOptions& options) {
  const int depth = options.layers ? options.layers : 4;
  const int width = options.hidden ? options.hidden : 256;
  requireSize("--layers", depth, 4096);
  requireSize("--hidden", width, 65536);
  requireWeightsFit(static_cast<double>(depth) * width * width, "mlp");
}

void checkVgg16(const ZooOptions& options) {
  const int image = options.image_size ? options.image_size : 224;
  const int classes = options.classes ? options.classes : 1000;
  requireSize("--image-size", image, 8192);
  requireSize("--classes", classes, 1 << 20);
  if (image % 32 != 0) {
    throw Error("--image-size " + std::to_string(image) +
                ": vgg16 halves the image five times; use a multiple of 32 (e.g. 224 or 64)");
  }
  // The convolutions hold 14.7M parameters; the first fully connected layer grows with the image.
  const double spatial = image / 32;
  requireWeightsFit(14.7e6 + 512.0 * spatial * spatial * 4096 + 4096.0 * 4096 + 4096.0 * classes, "vgg16");
}

std::vector<std::string> zooFamilies() { return {"mlp", "gpt", "vgg16"}; }

void requireSize(const char* flag, int value, int max) {
  if (value < 1) throw Error(std::string(flag) + " " + std::to_string(value) + ": must be 1 or more");
  if (value > max) {
    throw Error(std::string(flag) + " " + std::to_string(value) + ": at most " + std::to_string(max) +
                " for a zoo model; choose a smaller size");
  }
}

void requireWeightsFit(double parameters, const std::string& model) {
  requireFitsInMemory(parameters * 4.0 * 2.0, model, "its weights and their gradients alone", "choose smaller sizes");
}

void checkZooOptions(const ZooOptions& options) {
  if (options.family == "gpt") return checkGpt(options);
  if (options.family == "mlp") return checkMlp(options);
  if (options.family == "vgg16") return checkVgg16(options);
  throw Error("--model " + options.family + ": not a built-in model" + unknownNameHint(options.family, zooFamilies()));
}

}  // namespace stagecut
