#include "core/chain_metadata.h"

#include <set>

#include "core/error.h"
#include "core/json_fields.h"

namespace stagecut {

namespace {

const char* const kExportAgain = "; export the model again with tools/stagecut_export.py";

}  // namespace

ChainMetadata parseChainMetadata(const std::string& text, const std::string& file) {
  const std::string where = file + ": its stagecut.json";
  nlohmann::json document;
  try {
    document = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(where + " is not JSON (" + std::string(e.what()) + ")" + kExportAgain);
  }
  if (!document.is_object()) throw Error(where + " is not a JSON object" + kExportAgain);
  const JsonFields fields(document, where);
  if (fields.string("format") != "stagecut-chain") {
    fields.fail("format", "must be \"stagecut-chain\"" + std::string(kExportAgain));
  }
  const int version = fields.integer("version", 1, 1 << 20);
  if (version > kChainMetadataVersion) {
    throw Error(where + " has version " + std::to_string(version) + "; this stagecut reads version " +
                std::to_string(kChainMetadataVersion) + ": update stagecut, or export with its own exporter");
  }
  ChainMetadata metadata;
  metadata.source = fields.optionalString("source");
  metadata.input = fields.optionalString("input");
  const nlohmann::json& layers = fields.array("layers");
  std::set<std::string> names;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (!layers[i].is_object()) fields.fail("layers[" + std::to_string(i) + "]", "must be an object");
    const JsonFields layer(layers[i], where, "layers[" + std::to_string(i) + "].");
    ChainMetadata::Layer entry{layer.string("child"), layer.string("name"), layer.optionalString("kind"),
                               layer.optionalString("module")};
    if (entry.name.empty()) layer.fail("name", "is empty" + std::string(kExportAgain));
    if (!names.insert(entry.name).second) layer.fail("name", "repeats \"" + entry.name + "\"" + kExportAgain);
    metadata.layers.push_back(std::move(entry));
  }
  return metadata;
}

}  // namespace stagecut
