#include "core/placement.h"

namespace stagecut {

const char* placementStyleName(Placement::Style style) {
  return style == Placement::Style::kV ? "v" : "loop";
}

const char* placementStyleWords(Placement::Style style) {
  return style == Placement::Style::kV ? "in a V" : "in loop order";
}

}  // namespace stagecut
