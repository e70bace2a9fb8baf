#include <iostream>

#include "cli/bubble_table.h"
#include "cli/commands.h"

namespace stagecut {

void addBubbleCommand(CLI::App& app) {
  auto* command = app.add_subcommand(
      "bubble", "Print the closed-form pipeline bubble (N-1)/(M+N-1) of GPipe and 1F1B");
  struct Options {
    int stages = 4;
    int microbatches = 8;
  };
  auto options = std::make_shared<Options>();
  command->add_option("--stages,-n", options->stages, "Pipeline stages N")->capture_default_str();
  command->add_option("--microbatches,-m", options->microbatches, "Microbatches per step M")
      ->capture_default_str();
  command->callback([options] {
    printBubbleLesson(std::cout, options->stages, options->microbatches);
  });
}

}  // namespace stagecut
