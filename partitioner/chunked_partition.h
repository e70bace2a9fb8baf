#pragma once

#include <string>

#include "core/partition.h"
#include "core/profile.h"
#include "partitioner/chunked_solver.h"
#include "partitioner/partition_options.h"

namespace stagecut {

/// The best equal-compute split of `profile` for the pipeline `options` describes: the one
/// chooser between the two solvers. A placement of one chunk per rank gives the exact N-stage
/// split (partitionProfile, SplitMethod::kCompute), several the N x v chunks partitionChunked
/// places as the schedule runs them. `search`, when given, receives the search's figures (for
/// the N-stage solver: exact, its bound and its split). Throws Error (input) as the solver it
/// chooses does.
Partition scheduleSplit(const Profile& profile, const PartitionOptions& options, const std::string& source,
                        ChunkedSplit* search = nullptr);

/// The split of a profile into the N x v contiguous chunks of options.placement, placed on the
/// ranks as options.schedule places them (interleaved 1F1B: chunk c on rank c mod N), chosen by
/// solveChunkedSplit under options.rules, the link, the ranks' speeds and memory caps (the
/// schedule's memory timeline per rank), and described as a chunked Partition: per chunk its
/// costs, each chunk's memory_bytes its rank's predicted peak, the slowest rank's load as the
/// bottleneck, and the step and bubble of predictPipeline. `search`, when given, receives the
/// search's figures (exact, nodes, bound). Throws Error (input) for a schedule that runs one chunk
/// per rank, --recompute or --data-parallel (not modelled for chunks yet), more chunks than
/// layers, and when no chunking fits.
Partition partitionChunked(const Profile& profile, const PartitionOptions& options, const std::string& source,
                           ChunkedSplit* search = nullptr);

/// The chunked Partition of a given chunking (layers per chunk in chain order) under `options`,
/// described as partitionChunked describes its own; lower_bound_ms is the search's bound when
/// `search` is given, else the work over the ranks' speeds.
Partition describeChunkedSplit(const Profile& profile, const PartitionOptions& options,
                               const std::vector<int>& layers_per_chunk, const std::string& method,
                               const std::string& source, const ChunkedSplit* search = nullptr);

}  // namespace stagecut
