#pragma once

// A profile measured at several parallel degrees, seen one degree at a time: what the planner
// prices a layout of (tp, cp) with. Free of LibTorch and of I/O.

#include <vector>

#include "core/parallel_degrees.h"
#include "core/profile.h"

namespace stagecut {

/// The degrees a profile's layers were measured at: its shards' (ascending by tensor, then
/// context parallelism), or the one model.config records. Throws Error (input) as
/// readParallelDegrees does for a malformed config; `source` names the profile.
std::vector<ParallelDegrees> measuredDegrees(const Profile& profile, const std::string& source);

/// The profile one rank of `degrees` sees: the shard's layers, whole-model timing and microbatch
/// sizes in place of the profile's, and model.config recording `degrees`; the profile itself when
/// it was measured at `degrees` alone. Throws Error (input) naming `source` and the degrees it
/// has when `degrees` was not measured.
Profile shardProfile(const Profile& profile, const ParallelDegrees& degrees, const std::string& source);

/// One profile of `points`, each measured at the one degree its model.config records, the same
/// chain at the same microbatch sizes: the first point's layers, model and run, and every point
/// as a shard. Throws Error (input) naming `source` when points repeat a degree or differ in
/// their layers' names or microbatch sizes.
Profile profileOfDegrees(const std::vector<Profile>& points, const std::string& source);

/// "TP 4, CP 2" (and ", SP" with sequence parallelism): how messages name a point.
std::string degreesText(const ParallelDegrees& degrees);

}  // namespace stagecut
