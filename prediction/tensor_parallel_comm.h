#pragma once

// A tensor-parallel profile's collectives as time. `profile --tensor-parallel t` records, per
// layer, how many collectives its shard runs forward and backward and the bytes each moves
// (LayerCost::tp_collectives); a ring collective among t ranks of b bytes takes
// 2 (t - 1) x latency + 2 (t - 1) / t x b / bandwidth (an all-reduce, or an all-gather and a
// reduce-scatter under sequence parallelism). Priced once, on the profile itself, so that every
// command's prediction (partition, simulate, plan, report) takes them through its one path.

#include <string>

#include "core/profile.h"

namespace stagecut {

/// The link between the tensor-parallel ranks of a stage (NVLink within a node, say).
struct TensorParallelLink {
  double bandwidth_bytes_per_s = 0.0;  ///< 0: not given; nothing is priced
  double latency_ms = 0.0;
};

/// The tensor-parallel degree the profile was measured at (core/parallel_degrees.h; 1 when its
/// model.config records none). Throws Error (input) when the recorded degree is no whole number
/// from 1 to kMaxTensorParallel.
int profileTensorParallel(const Profile& profile);

/// ms of one ring collective of `bytes` among `ranks`.
double tensorParallelCollectiveMs(double bytes, int ranks, const TensorParallelLink& link);

/// Adds each layer's collectives (every measured microbatch size's too) to its times: the
/// forward's to forward_ms, the backward's to backward_ms and to B (backward_input_ms: the
/// input's gradient is what they reduce), and records the link in run.extra["tp_link"]. Does
/// nothing without collectives or a bandwidth.
void priceTensorParallelComm(Profile& profile, const TensorParallelLink& link);

/// One line for a command's output: what the tensor-parallel collectives cost in this
/// prediction ("tensor parallel 8: collectives priced at 300 GB/s, 5 us: 41.2 ms per microbatch
/// in all"), or that they are not ("... not priced: give --tp-bandwidth"); empty for a profile
/// with none.
std::string tensorParallelNote(const Profile& profile, const TensorParallelLink& link);

}  // namespace stagecut
