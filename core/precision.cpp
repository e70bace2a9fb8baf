#include "core/precision.h"

#include "core/error.h"

namespace stagecut {

namespace {

struct Spelling {
  const char* text;
  const char* name;
};

// Megatron's --bf16/--fp16, torchtitan's mixed_precision_param = "bfloat16", DeepSpeed's
// "bf16": users arrive with any of these.
constexpr Spelling kSpellings[] = {{"float32", "float32"}, {"fp32", "float32"},   {"float", "float32"},
                                   {"bfloat16", "bfloat16"}, {"bf16", "bfloat16"}, {"float16", "float16"},
                                   {"fp16", "float16"},     {"half", "float16"}};

}  // namespace

const std::vector<std::string>& precisionNames() {
  static const std::vector<std::string> names = {"float32", "bfloat16", "float16"};
  return names;
}

std::string canonicalPrecision(const std::string& text, const std::string& flag) {
  for (const auto& spelling : kSpellings) {
    if (text == spelling.text) return spelling.name;
  }
  throw Error(flag + " " + (text.empty() ? "''" : text) +
              ": not a precision stagecut profiles in; use float32, bfloat16 or float16");
}

bool isSixteenBitPrecision(const std::string& name) { return name == "bfloat16" || name == "float16"; }

}  // namespace stagecut
