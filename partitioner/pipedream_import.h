#pragma once

#include <string>
#include <vector>

#include "core/profile.h"

namespace stagecut {

/// A PipeDream profile turned into a stagecut profile, with what the import left out.
struct PipedreamImport {
  Profile profile;
  /// "node1 (Input0, 0.75 ms)": Input nodes, dropped because their time is the data loader's,
  /// not compute, as PipeDream's own optimizer drops them.
  std::vector<std::string> dropped_inputs;
};

/// Reads the text of PipeDream's profiler output (`graph.txt`): node lines
/// `nodeK -- Desc -- forward_compute_time=F, backward_compute_time=B, activation_size=A,
/// parameter_size=P` (ms, bytes; A may be a list `[a; b]`, summed; an optional trailing
/// `-- stage_id=S` is ignored) and edge lines `<tab>nodeA -- nodeB`. Drops Input nodes,
/// orders the rest topologically (ties by order of appearance) and sets each layer's
/// output_bytes to all tensors produced up to it and consumed after it, skip connections
/// included. params = parameter_size / 4 (PipeDream profiles fp32). `source` names the file in
/// messages. Throws Error (input) naming the line for a malformed line, a time above a day
/// (kLongestOpMs, so the profile reads back) or a size above 1e12,
/// an unknown node, a repeated node, a cycle, or a graph without node lines or compute nodes.
PipedreamImport importPipedreamGraph(const std::string& text, const std::string& source);

}  // namespace stagecut
