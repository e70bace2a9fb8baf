#include "profiler/input_spec.h"

#include <cerrno>
#include <cstdlib>

#include "core/error.h"
#include "core/suggest.h"

namespace stagecut {

namespace {

const char* const kForm =
    "use DIMSxDIMS:DTYPE, e.g. 8x3x224x224:float32, or 4x512:int64:0..50257 for integers";

std::vector<std::string> split(const std::string& text, const std::string& separator) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const auto found = text.find(separator, start);
    parts.push_back(text.substr(start, found - start));
    if (found == std::string::npos) return parts;
    start = found + separator.size();
  }
}

bool parseInteger(const std::string& text, std::int64_t* value) {
  if (text.empty()) return false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (!(std::isdigit(static_cast<unsigned char>(text[i])) || (i == 0 && text[i] == '-'))) return false;
  }
  errno = 0;
  *value = std::strtoll(text.c_str(), nullptr, 10);
  return errno == 0;
}

constexpr std::int64_t kMaxDimension = 999999999;

}  // namespace

double inputBytes(const InputSpec& spec) {
  double bytes = spec.dtype == "float64" || spec.dtype == "int64" ? 8.0 : 4.0;
  for (std::int64_t dim : spec.shape) bytes *= static_cast<double>(dim);
  return bytes;
}

InputSpec parseInputSpec(const std::string& text) {
  const auto fail = [&](const std::string& problem) {
    return Error("--input \"" + text + "\": " + problem + "; " + kForm);
  };
  const auto fields = split(text, ":");
  if (fields.size() < 2 || fields.size() > 3) throw fail("expected a shape and a dtype");
  InputSpec spec;
  for (const auto& dim_text : split(fields[0], "x")) {
    std::int64_t dim = 0;
    if (!parseInteger(dim_text, &dim) || dim < 1) throw fail("dimension \"" + dim_text + "\" is not a whole number >= 1");
    // The first dimension is the microbatch size, an int everywhere after this.
    if (dim > kMaxDimension) {
      throw fail("dimension " + dim_text + " is more than " + std::to_string(kMaxDimension));
    }
    spec.shape.push_back(dim);
  }
  spec.dtype = fields[1];
  const std::vector<std::string> dtypes = {"float32", "float64", "int64", "int32"};
  bool known = false;
  for (const auto& dtype : dtypes) known = known || dtype == spec.dtype;
  if (!known) {
    throw Error("--input \"" + text + "\": unknown dtype \"" + spec.dtype + "\"" +
                unknownNameHint(spec.dtype, dtypes));
  }
  const bool integer = spec.dtype.rfind("int", 0) == 0;
  if (integer && fields.size() != 3) throw fail("an integer input needs its range LOW..HIGH");
  if (!integer && fields.size() == 3) throw fail("a range only applies to integer inputs");
  if (integer) {
    const auto bounds = split(fields[2], "..");
    if (bounds.size() != 2 || !parseInteger(bounds[0], &spec.low) ||
        !parseInteger(bounds[1], &spec.high) || spec.low >= spec.high) {
      throw fail("range \"" + fields[2] + "\" is not LOW..HIGH with LOW < HIGH");
    }
  }
  return spec;
}

}  // namespace stagecut
