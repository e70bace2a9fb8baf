#pragma once

// The registry of zoo model families: the one list the profile command, the zoo's checks and
// validate's rebuild look a family up in. A family is one zoo file (its layers' descriptions, and
// its entry) and one line in modelFamilies() (model_families.cpp); a program built on stagecut's
// libraries adds its own with addModelFamily (docs/extending.md, "Adding a model family").

#include <vector>

#include "profiler/zoo_family.h"

namespace stagecut {

/// Every family this process knows: the built-in ones, then those added, in that order (the
/// order of --help and of the "use one of" lists).
std::vector<ModelFamily> modelFamilies();

/// Adds a family for the rest of the process, as if it were built in: call it before any
/// command runs (a static initializer of the family's file does, in an executable). Safe to call
/// from several threads. Throws Error (input) when the name is empty or taken, or check or
/// describe is missing.
void addModelFamily(const ModelFamily& family);

}  // namespace stagecut
