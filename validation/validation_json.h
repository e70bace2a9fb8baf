#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "validation/validation_report.h"

namespace stagecut {

/// Format tag of `stagecut validate --json` documents.
inline constexpr const char* kValidationFormat = "stagecut.validation/1";

/// The `stagecut.validation/1` document: the summary figures, one entry per global rank, and the
/// predicted and measured step as timelines (per rank [kind, microbatch, start_ms, end_ms]).
nlohmann::json validationToJson(const ValidationReport& report);

/// Reads a validation document back into the report validationToJson writes it from (writing the
/// result again gives the same bytes). Fields that early /1 writers left out (microbatch_size,
/// op_median_ms) read as 0. Throws Error (input) with one line naming `source` and the field for
/// another format, a missing or ill-typed field, ranks that do not match "stages" x
/// "data_parallel", or timelines whose ranks, ops or times do not make sense.
ValidationReport validationFromJson(const nlohmann::json& document, const std::string& source);

}  // namespace stagecut
