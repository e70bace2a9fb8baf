#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/output_path.h"
#include "core/profile.h"

namespace stagecut {

/// The longest time a profile may give one layer's op for one microbatch, and a whole model's
/// forward or backward: a day, the longest step validate lets run (its --timeout), so longer
/// is no time a run of the profile can have, and the chain's sums over any number of layers and
/// microbatches stay finite.
inline constexpr double kLongestOpMs = 86400.0 * 1000.0;

/// The oldest format that holds `profile`: /1 for one size at one degree, /2 with several
/// microbatch sizes, /3 with several parallel degrees.
const char* profileFormatOf(const Profile& profile);

/// The `stagecut.profile/1` document of a profile (/2, /3 as profileFormatOf says).
nlohmann::json profileToJson(const Profile& profile);

/// Reads a `stagecut.profile/1` document. `source` names the file in messages. Throws Error
/// (input) with one line naming the source, the layer and the field for an unknown format, a
/// missing field, a negative or non-finite number, a time above kLongestOpMs, or layer indices
/// out of order.
Profile profileFromJson(const nlohmann::json& document, const std::string& source);

/// Reads and validates a profile file.
Profile readProfileFile(const std::string& path);

/// Reads a profile file at one of its measured microbatch sizes (`--microbatch-size`): 0 keeps
/// the size its layers hold; another size must be in its `microbatch_sizes` table (or be its
/// only size). Throws Error (input) naming the file and the measured sizes otherwise.
Profile readProfileFile(const std::string& path, int microbatch_size);

/// The fingerprint of a profile document, "sha256:<hex>" of its content (not of its layout: a
/// file reformatted by a JSON tool keeps it). Validations and comparisons record the one of the
/// profile they were made from, and report refuses to put them beside another profile.
std::string profileFingerprint(const nlohmann::json& document);

/// profileFingerprint of a profile file (the whole file, every microbatch size).
std::string readProfileFingerprint(const std::string& path);

/// Refuses a document made from another profile: `recorded` (its profile_fingerprint; "" when
/// it has none, which passes) must be `actual`, the fingerprint of `profile_path`. The one line
/// names `source`, the profile and `remake`, the command that makes one from this profile.
void requireMadeFromProfile(const std::string& recorded, const std::string& actual, const std::string& source,
                            const std::string& profile_path, const std::string& remake);

/// Writes a profile file by writeOutputFile's rules (a plain path converts to an OutputPath).
/// Throws Error as writeOutputFile does.
void writeProfileFile(const OutputPath& output, const Profile& profile);

}  // namespace stagecut
