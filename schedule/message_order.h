#pragma once

#include <optional>
#include <string>

#include "schedule/pipeline_schedule.h"

namespace stagecut {

/// Whether a transport that pairs a rank's sends with its peer's receives by their order, not
/// by tag (NCCL's point-to-point calls), carries a schedule's tensors to the right ops: for
/// every two ranks and each direction between them, the sender's k-th message (an F's
/// activation, a B's input gradient) must be the one the receiver's k-th receive waits for.
/// Returns the first pair that disagrees, in words ("rank 0 sends F(2)'s activation to rank 1
/// as its 3rd message to it, where rank 1's 3rd receive from rank 0 is F(1)'s"), or nullopt.
/// Directions are told apart by the peer (later rank: downstream), as DirectionSplitTransport
/// routes them.
std::optional<std::string> firstMessageOrderMismatch(const Schedule& schedule);

}  // namespace stagecut
