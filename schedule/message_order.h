#pragma once

#include <optional>
#include <string>

#include "schedule/pipeline_schedule.h"

namespace stagecut {

/// Whether a transport that pairs a rank's sends with its peer's receives by their order, not
/// by tag (NCCL's point-to-point calls), carries a schedule's tensors to the right ops when it
/// gives each kind of tensor its own ordered channel between two ranks: for every sender,
/// receiver and kind (an F's activation, a B's input gradient), the sender's k-th message must
/// be the one the receiver's k-th receive waits for. Returns the first channel that disagrees,
/// in words ("rank 0 sends F(2)'s activation to rank 1 as its 3rd message to it, where rank 1's
/// 3rd receive from rank 0 is F(1)'s"), or nullopt. A V sends both kinds both ways between
/// neighbours (chunk 0's activations and chunk 1's gradients down), so the runtime's order-paired
/// transport has a channel per direction and kind (DirectionSplitTransport).
std::optional<std::string> firstMessageOrderMismatch(const Schedule& schedule);

}  // namespace stagecut
