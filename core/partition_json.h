#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/output_path.h"
#include "core/partition.h"

namespace stagecut {

/// The `stagecut.partition/1` document of a partition, with each framework's text of it in
/// "outputs" (an empty object when none is given).
nlohmann::json partitionToJson(const Partition& partition, const FrameworkOutputs& outputs = {});

/// Reads a `stagecut.partition/1` document, its "outputs" as written. Throws Error (input) with
/// one line naming the source, the stage and the field for an unknown format, a missing or
/// negative field, stages that are empty, overlap or leave a gap, or an output that is not text.
PartitionDocument partitionDocumentFromJson(const nlohmann::json& document, const std::string& source);

/// The split of partitionDocumentFromJson (what predictions and validations use).
Partition partitionFromJson(const nlohmann::json& document, const std::string& source);

/// Reads and validates a partition file.
Partition readPartitionFile(const std::string& path);

/// Writes a partition file by writeOutputFile's rules (a plain path converts to an OutputPath).
/// Throws Error as writeOutputFile does.
void writePartitionFile(const OutputPath& output, const Partition& partition, const FrameworkOutputs& outputs = {});

/// The stagecut.comparison/1 document of `comparison` (each split as partitionToJson writes it).
nlohmann::json comparisonToJson(const ComparisonDocument& comparison);

/// Reads a stagecut.comparison/1 document back, every field of every split kept (its per-stage
/// recompute and all-reduce included). Throws Error (input) naming `source` for another format,
/// a missing "splits" list, or a split the partition reader rejects ("<source> split <i>: ...").
ComparisonDocument comparisonFromJson(const nlohmann::json& document, const std::string& source);

/// Checks that the partition covers layers 0..layer_count-1 of a profile exactly.
/// Throws Error (input) naming `source` and the fix otherwise.
void checkPartitionCoversLayers(const Partition& partition, std::size_t layer_count,
                                const std::string& source);

}  // namespace stagecut
