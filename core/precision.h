#pragma once

// The floating-point precisions stagecut profiles in, free of LibTorch: their names as the
// profile records them (run.dtype), the spellings users type, and their element sizes.

#include <string>
#include <vector>

namespace stagecut {

/// The canonical names, in the order help texts list them: "float32", "bfloat16", "float16".
const std::vector<std::string>& precisionNames();

/// `text` as its canonical name: the names themselves, and the spellings frameworks use
/// ("fp32", "bf16", "fp16", "half"). Throws Error (input) naming `flag` and the names otherwise:
/// "--dtype fp8: not a precision stagecut profiles in; use float32, bfloat16 or float16".
std::string canonicalPrecision(const std::string& text, const std::string& flag = "--dtype");

/// Whether a profile's run.dtype is a 16-bit precision ("bfloat16", "float16"), which trains with
/// float32 gradients and master weights.
bool isSixteenBitPrecision(const std::string& name);

}  // namespace stagecut
