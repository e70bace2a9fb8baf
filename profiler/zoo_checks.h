#pragma once

// The zoo's checks, free of LibTorch: what a request, or a profile's model.config, may ask for
// (the builders in zoo_*.cpp expect options these checks passed). Internal to the profiler and
// the runtime's model.config reader; the fuzz target of that reader compiles them alone.

#include <string>

#include "profiler/zoo.h"

namespace stagecut {

/// A gpt model's shape: its preset's, with the options' overrides.
struct GptShape {
  int layers, hidden, heads, ffn, seq, vocab;
};

/// The preset's shape with the options' sizes. Throws Error (input) for an unknown preset, a
/// size out of the zoo's bounds, or heads that do not divide the width.
GptShape resolveGptShape(const ZooOptions& options);

/// A size of a zoo model: 1 or more, and at most `max`. Beyond the bounds a size is a typo on
/// this tool's runs, and the shapes' int arithmetic would overflow.
void requireSize(const char* flag, int value, int max);

/// Refuses a model whose weights and gradients (4 bytes each) would not fit in this machine's
/// memory, before an allocation tries and fails with a LibTorch error.
void requireWeightsFit(double parameters, const std::string& model);

/// Each family's checks (checkZooOptions dispatches to them).
void checkGpt(const ZooOptions& options);
void checkMlp(const ZooOptions& options);
void checkVgg16(const ZooOptions& options);

}  // namespace stagecut
