// libFuzzer target: the --input spec of a TorchScript profile (profiler/input_spec.cpp), which
// validate also applies to the input a profile records. An accepted spec must be one the
// profiler can use: 1 to 999999999 per dimension, a known dtype, and an integer range LOW < HIGH
// exactly when the dtype is an integer.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_check.h"
#include "profiler/input_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  stagecut::fuzz::expectCleanOutcome([&] {
    const stagecut::InputSpec spec = stagecut::parseInputSpec(text);
    if (spec.shape.empty()) stagecut::fuzz::finding("an input spec without dimensions");
    for (std::int64_t dim : spec.shape) {
      if (dim < 1 || dim > 999999999) stagecut::fuzz::finding("dimension " + std::to_string(dim) + " accepted");
    }
    const bool integer = spec.dtype == "int64" || spec.dtype == "int32";
    if (!integer && spec.dtype != "float32" && spec.dtype != "float64") {
      stagecut::fuzz::finding("dtype \"" + spec.dtype + "\" accepted");
    }
    if (integer && !(spec.low < spec.high)) stagecut::fuzz::finding("an integer range with LOW >= HIGH");
    if (!integer && (spec.low != 0 || spec.high != 0)) stagecut::fuzz::finding("a range on a float input");
    const double bytes = stagecut::inputBytes(spec);
    if (!(bytes > 0) || std::isnan(bytes)) stagecut::fuzz::finding("input bytes " + std::to_string(bytes));
  });
  return 0;
}
