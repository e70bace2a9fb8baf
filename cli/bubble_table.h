#pragma once

#include <ostream>

namespace stagecut {

/// Prints the lesson of the pipeline bubble for N stages: the closed form at M microbatches
/// and a grid of M around it (powers of two up to at least 64, M itself marked).
void printBubbleLesson(std::ostream& out, int stages, int microbatches);

}  // namespace stagecut
