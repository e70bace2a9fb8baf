#include "schedule/op_palette.h"

#include <cmath>
#include <cstdio>

namespace stagecut {

// Tableau's palette stays distinct for colour-blind readers and in greyscale print.
Rgb opKindColour(OpKind kind) {
  switch (kind) {
    case OpKind::kForward:
      return {0x4e, 0x79, 0xa7};
    case OpKind::kBackward:
      return {0xf2, 0x8e, 0x2b};
    case OpKind::kWeight:
      return {0x59, 0xa1, 0x4f};
    case OpKind::kAllReduce:
      return {0xe1, 0x57, 0x59};
  }
  return {0x88, 0x88, 0x88};
}

std::string hexColour(Rgb colour) {
  char buffer[8];
  std::snprintf(buffer, sizeof buffer, "#%02x%02x%02x", static_cast<int>(std::lround(colour.r)),
                static_cast<int>(std::lround(colour.g)), static_cast<int>(std::lround(colour.b)));
  return buffer;
}

}  // namespace stagecut
