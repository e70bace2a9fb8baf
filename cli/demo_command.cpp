#include <iostream>

#include "cli/bubble_table.h"
#include "cli/commands.h"

namespace stagecut {

void addDemoCommand(CLI::App& app) {
  auto* command = app.add_subcommand(
      "demo", "The end-to-end tour on the built-in default model (what `make demo` runs)");
  command->callback([] {
    std::cout << "stagecut demo\n\n"
                 "A pipeline cuts a model into N stages, one per rank, and streams M microbatches\n"
                 "through them. Two things waste the GPUs: the bubble, while the pipeline fills and\n"
                 "drains, and imbalance, when one stage is slower than the others.\n\n";
    printBubbleLesson(std::cout, 4, 8);
    std::cout << "\nProfiling, partitioning, simulating and validating a real model join this demo\n"
                 "as those parts land; `stagecut --help` lists what this build can do.\n";
  });
}

}  // namespace stagecut
