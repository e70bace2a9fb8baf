#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace stagecut {

/// A sample input described on the command line: "8x3x224x224:float32" or
/// "4x512:int64:0..50257" (integers drawn from [low, high)).
struct InputSpec {
  std::vector<std::int64_t> shape;
  std::string dtype;  ///< "float32", "float64", "int64" or "int32"
  std::int64_t low = 0;
  std::int64_t high = 0;  ///< integer inputs only; exclusive
};

/// Parses an --input spec. Throws Error (input) naming the spec and the accepted form.
InputSpec parseInputSpec(const std::string& text);

/// The sample input's size in bytes (a double: the shape's product may exceed 2^64).
double inputBytes(const InputSpec& spec);

}  // namespace stagecut
