#include <catch2/catch.hpp>

#include <string>

#include "core/error.h"
#include "core/profile.h"
#include "profiler/profile_request.h"
#include "profiler/torch_runtime.h"

namespace {

// gpt-tiny cut down to 2 blocks at seq 32, measured in one round: its bytes, not its times.
stagecut::Profile tinyGpt(const std::string& dtype) {
  stagecut::ProfileRequest request;
  request.zoo.family = "gpt";
  request.zoo.preset = "gpt-tiny";
  request.zoo.layers = 2;
  request.zoo.seq = 32;
  request.zoo.vocab = 512;
  request.dtype = dtype;
  request.measure.microbatch_size = 2;
  request.measure.warmup_rounds = 0;
  request.measure.min_repeats = 1;
  request.measure.max_repeats = 1;
  return stagecut::runProfile(request);
}

}  // namespace

TEST_CASE("a bfloat16 profile records its precision and holds 2 bytes per weight", "[profiler][precision]") {
  stagecut::pinThreads(1);
  const stagecut::Profile profile = tinyGpt("bf16");
  CHECK(profile.run.dtype == "bfloat16");
  for (const auto& layer : profile.layers) {
    INFO(layer.name);
    CHECK(layer.param_bytes == 2 * layer.params);
  }
  CHECK(tinyGpt("").run.dtype == "float32");
}

// The independent count: the same tensors at half the bytes, except what does not scale with
// the precision: the causal mask (seq x seq booleans) a block keeps, and the loss, which upcasts
// the logits to float32 as frameworks do.
TEST_CASE("bfloat16 keeps the same tensors as float32 at half the bytes", "[profiler][precision]") {
  stagecut::pinThreads(1);
  const stagecut::Profile single = tinyGpt("float32");
  const stagecut::Profile half = tinyGpt("bfloat16");
  REQUIRE(single.layers.size() == half.layers.size());
  const std::uint64_t mask_bytes = 32 * 32;
  for (std::size_t i = 0; i < single.layers.size(); ++i) {
    const auto& wide = single.layers[i];
    const auto& narrow = half.layers[i];
    INFO(wide.name);
    if (wide.name == "loss") {
      CHECK(narrow.activation_bytes == wide.activation_bytes);
      CHECK(narrow.output_bytes == wide.output_bytes);  // a float32 scalar
      continue;
    }
    CHECK(2 * narrow.output_bytes == wide.output_bytes);
    if (wide.name.rfind("block.", 0) == 0) {
      CHECK(2 * narrow.activation_bytes - wide.activation_bytes == mask_bytes);
    } else if (wide.name == "head") {
      CHECK(2 * narrow.activation_bytes == wide.activation_bytes);
    }
  }
}

TEST_CASE("a precision the device cannot compute in is refused before the model runs", "[profiler][precision][errors]") {
  stagecut::pinThreads(1);
  // LibTorch 1.13 has no float16 softmax or matrix products on the CPU; 2.x has them.
  std::string refusal;
  stagecut::ErrorKind kind = stagecut::ErrorKind::kInput;
  std::string recorded;
  try {
    recorded = tinyGpt("fp16").run.dtype;
  } catch (const stagecut::Error& error) {
    refusal = error.what();
    kind = error.kind();
  }
  if (refusal.empty()) {
    CHECK(recorded == "float16");
  } else {
    CHECK(kind == stagecut::ErrorKind::kInput);
    CHECK_THAT(refusal, Catch::Matchers::StartsWith("--dtype float16 on cpu: this LibTorch (") &&
                            Catch::Matchers::EndsWith("); use bfloat16, or profile on cuda"));
  }
  CHECK_THROWS_WITH(tinyGpt("int8"), Catch::Matchers::StartsWith("--dtype int8: not a precision"));
}
