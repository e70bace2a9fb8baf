#include <iostream>

#include "cli/commands.h"
#include "cli/identical_layers_text.h"
#include "cli/partition_table.h"
#include "cli/whole_model_text.h"
#include "cli/text_table.h"
#include "core/error.h"
#include "core/json_document.h"
#include "core/partition_json.h"
#include "core/profile_json.h"
#include "core/profile_shards.h"
#include "core/units.h"

namespace stagecut {

namespace {

std::string optionalStats(const std::optional<TimeStatsMs>& stats) {
  return stats ? formatMs(stats->median) : "-";
}

std::string orUnknown(const std::string& text) { return text.empty() ? "?" : text; }

void printProfile(std::ostream& out, const Profile& profile, const std::string& path) {
  out << path << ": " << profileFormatOf(profile) << ", " << profile.layerCount() << " layers";
  if (!profile.shards.empty()) {
    std::string degrees;
    for (const ShardCosts& shard : profile.shards) degrees += (degrees.empty() ? "" : "; ") + degreesText(shard.degrees);
    out << " at " << degrees;
  }
  out << "\n";
  out << "  model   " << orUnknown(profile.model.name) << " (" << orUnknown(profile.model.source)
      << ")\n";
  out << "  device  " << orUnknown(profile.device.kind);
  if (!profile.device.name.empty()) out << " \"" << profile.device.name << "\"";
  if (profile.device.threads > 0) out << ", " << profile.device.threads << " threads";
  if (!profile.device.torch.empty()) out << ", LibTorch " << profile.device.torch;
  out << "\n  run     ";
  const RunInfo& run = profile.run;
  out << "microbatch " << (run.microbatch_size > 0 ? std::to_string(run.microbatch_size) : "?");
  if (run.seq_len > 0) out << ", seq " << run.seq_len;
  if (!run.dtype.empty()) out << ", " << run.dtype;
  if (run.repeats > 0) out << ", " << run.warmup << " warm-up + " << run.repeats << " timed runs";
  if (!run.timer.empty()) out << " (" << run.timer << ")";
  if (!profile.microbatch_sizes.empty()) {
    out << "\n  sizes   measured at microbatch " << joinNumbers(measuredMicrobatchSizes(profile)) << " (the table shows " << run.microbatch_size
        << "; `stagecut plan` uses them all)";
  }
  out << "\n\n";

  TextTable table;
  table.addColumn("#", TextTable::Align::kRight);
  table.addColumn("name", TextTable::Align::kLeft);
  table.addColumn("kind", TextTable::Align::kLeft);
  table.addColumn("fwd ms", TextTable::Align::kRight);
  table.addColumn("bwd ms", TextTable::Align::kRight);
  table.addColumn("B ms", TextTable::Align::kRight);
  table.addColumn("W ms", TextTable::Align::kRight);
  // Each layer as the whole-model pass timed it, beside its neighbours (docs/profiler.md).
  const bool in_chain = profile.whole_model && !profile.whole_model->in_chain_forward_ms.empty();
  if (in_chain) {
    table.addColumn("in-chain fwd", TextTable::Align::kRight);
    table.addColumn("in-chain bwd", TextTable::Align::kRight);
  }
  table.addColumn("params", TextTable::Align::kRight);
  table.addColumn("activations", TextTable::Align::kRight);
  table.addColumn("output", TextTable::Align::kRight);
  double forward_ms = 0, backward_ms = 0;
  std::uint64_t params = 0, param_bytes = 0, activation_bytes = 0;
  for (const auto& layer : profile.layers) {
    std::vector<std::string> row = {std::to_string(layer.index), layerNameCell(layer), layer.kind.empty() ? "-" : layer.kind,
                                    formatMs(layer.forward_ms.median), formatMs(layer.backward_ms.median),
                                    optionalStats(layer.backward_input_ms), optionalStats(layer.backward_weight_ms)};
    if (in_chain) {
      const auto position = static_cast<std::size_t>(layer.index);
      row.push_back(formatMs(profile.whole_model->in_chain_forward_ms.at(position)));
      row.push_back(formatMs(profile.whole_model->in_chain_backward_ms.at(position)));
    }
    row.insert(row.end(), {formatCount(layer.params), formatBytes(layer.activation_bytes), formatBytes(layer.output_bytes)});
    table.addRow(row);
    forward_ms += layer.forward_ms.median;
    backward_ms += layer.backward_ms.median;
    params += layer.params;
    param_bytes += layer.param_bytes;
    activation_bytes += layer.activation_bytes;
  }
  table.print(out, "  ");
  for (const auto& line : identicalLayersLines(profile)) out << "  " << line << "\n";
  out << "\n  total   forward " << formatMs(forward_ms) << " ms, backward " << formatMs(backward_ms)
      << " ms per microbatch; " << formatCount(params) << " params (" << formatBytes(param_bytes)
      << "); activations " << formatBytes(activation_bytes) << " per microbatch\n";
  if (profile.whole_model) {
    out << "  whole   forward " << formatMs(profile.whole_model->forward_ms) << " ms, backward "
        << formatMs(profile.whole_model->backward_ms) << " ms; the layers' sum differs by "
        << formatPercent(profile.whole_model->sum_of_layers_vs_whole) << wholeModelScope(profile) << "\n";
  }
}

void printPartition(std::ostream& out, const PartitionDocument& document, const std::string& path) {
  const Partition& partition = document.partition;
  out << path << ": " << kPartitionFormat << ", method " << orUnknown(partition.method) << ", "
      << partition.stages.size() << " stages over " << partition.stages.back().last + 1
      << " layers\n\n";
  printPartitionTable(out, partition, layerIndexRanges(partition));
  out << "  layers per stage: " << joinNumbers(partition.layersPerStage()) << "\n";
  for (const auto& [name, text] : document.outputs) out << "  " << name << ": " << text << "\n";
}

}  // namespace

void addInspectCommand(CLI::App& app) {
  auto* command = app.add_subcommand(
      "inspect", "Check a stagecut profile or partition file and print its summary");
  auto path = std::make_shared<std::string>();
  command->add_option("file", *path, "A stagecut.profile (version 1 or 2) or stagecut.partition/1 JSON file")
      ->required();
  command->callback([path] {
    const nlohmann::json document = parseJsonDocument(readTextFile(*path), *path);
    const std::string format = documentFormat(document, *path);
    if (isProfileFormat(format)) {
      printProfile(std::cout, profileFromJson(document, *path), *path);
    } else if (format == kPartitionFormat) {
      printPartition(std::cout, partitionDocumentFromJson(document, *path), *path);
    } else {
      throw Error(*path + ": unknown format \"" + format + "\"; this stagecut reads \"" +
                  kProfileFormat + "\", \"" + kProfileFormatV2 + "\", \"" + kProfileFormatV3 + "\" and \"" +
                  kPartitionFormat + "\"");
    }
  });
}

}  // namespace stagecut
