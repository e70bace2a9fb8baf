#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/output_path.h"
#include "core/profile.h"

namespace stagecut {

/// The `stagecut.profile/1` document of a profile.
nlohmann::json profileToJson(const Profile& profile);

/// Reads a `stagecut.profile/1` document. `source` names the file in messages. Throws Error
/// (input) with one line naming the source, the layer and the field for an unknown format, a
/// missing field, a negative or non-finite number, or layer indices out of order.
Profile profileFromJson(const nlohmann::json& document, const std::string& source);

/// Reads and validates a profile file.
Profile readProfileFile(const std::string& path);

/// Reads a profile file at one of its measured microbatch sizes (`--microbatch-size`): 0 keeps
/// the size its layers hold; another size must be in its `microbatch_sizes` table (or be its
/// only size). Throws Error (input) naming the file and the measured sizes otherwise.
Profile readProfileFile(const std::string& path, int microbatch_size);

/// Writes a profile file by writeOutputFile's rules (a plain path converts to an OutputPath).
/// Throws Error as writeOutputFile does.
void writeProfileFile(const OutputPath& output, const Profile& profile);

}  // namespace stagecut
