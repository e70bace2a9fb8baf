#include "core/placement.h"

namespace stagecut {

const char* placementStyleName(Placement::Style style) {
  return style == Placement::Style::kV ? "v" : "loop";
}

}  // namespace stagecut
