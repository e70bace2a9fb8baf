#include <iostream>

#include "cli/commands.h"
#include "core/error.h"
#include "core/json_document.h"
#include "core/output_path.h"
#include "core/profile_json.h"
#include "core/suggest.h"
#include "partitioner/pipedream_import.h"

namespace stagecut {

void addImportCommand(CLI::App& app) {
  auto* command = app.add_subcommand(
      "import", "Turn another tool's profile into a stagecut profile (pipedream graph.txt)");
  struct Options {
    std::string tool;
    std::string input_path;
    std::string output_path;
  };
  auto options = std::make_shared<Options>();
  command->add_option("tool", options->tool, "The tool that wrote the file: pipedream")->required();
  command->add_option("file", options->input_path, "Its profile, e.g. graph.txt")->required();
  command->add_option("-o,--output", options->output_path, "The stagecut.profile/1 file to write")
      ->required();
  command->callback([options] {
    if (options->tool != "pipedream") {
      throw Error("import: unknown tool '" + options->tool + "'" +
                  unknownNameHint(options->tool, {"pipedream"}));
    }
    const OutputPath output(options->output_path, "-o", {{"the PipeDream graph", options->input_path}});
    checkOutputPath(output);
    const PipedreamImport imported =
        importPipedreamGraph(readTextFile(options->input_path), options->input_path);
    // Through the reader once more: the file written is one every stagecut command accepts.
    profileFromJson(profileToJson(imported.profile), options->output_path);
    writeProfileFile(output, imported.profile);
    std::cout << options->input_path << ": " << imported.profile.layerCount()
              << " layers in topological order";
    if (imported.dropped_inputs.empty()) {
      std::cout << "; no Input nodes\n";
    } else {
      std::cout << "; dropped " << imported.dropped_inputs.size() << " Input node"
                << (imported.dropped_inputs.size() > 1 ? "s" : "")
                << " (data loading, not compute, as PipeDream's optimizer does):";
      for (const std::string& dropped : imported.dropped_inputs) std::cout << " " << dropped;
      std::cout << "\n";
    }
    std::cout << "params assumed fp32 (parameter_size / 4); wrote " << options->output_path << "\n";
  });
}

}  // namespace stagecut
