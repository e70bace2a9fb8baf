#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "cli/commands.h"
#include "cli/flag_bounds.h"
#include "cli/self_executable.h"
#include "cli/standard_output.h"
#include "cli/torch_commands.h"
#include "core/error.h"
#include "core/suggest.h"

namespace {

#ifndef STAGECUT_WITH_TORCH
bool isTorchCommand(int argc, char** argv) {
  return argc >= 2 && std::strlen(stagecut::torchCommandDescription(argv[1])) > 0;
}

// A LibTorch command goes to the LibTorch part as it was typed, before any parsing here, so
// that its options, help and errors are the part's own; argv[0] stays what the user typed.
void runTorchPart(char** argv) {
  const std::string command = argv[1];
#ifdef STAGECUT_TORCH_PART
  std::string path = stagecut::selfExecutablePath(command);
  path = path.substr(0, path.rfind('/') + 1) + stagecut::kTorchPartName;
  if (::access(path.c_str(), X_OK) != 0) {
    throw stagecut::Error(command + ": needs stagecut's LibTorch part, " + path + ", which is missing (" +
                              std::strerror(errno) + "); build it with 'make build', or reinstall stagecut with it",
                          stagecut::ErrorKind::kRuntime);
  }
  ::execv(path.c_str(), argv);
  throw stagecut::Error(command + ": cannot start " + path + " (" + std::strerror(errno) + ")",
                        stagecut::ErrorKind::kRuntime);
#else
  throw stagecut::Error(command + ": needs LibTorch, and this stagecut was built without it (STAGECUT_TORCH=OFF); " +
                        "build it with LibTorch: 'make build'");
#endif
}
#endif

// CLI11 reports a mistyped command as "A subcommand is required"; name it and the nearest one.
void checkCommandName(const CLI::App& app, int argc, char** argv) {
  if (argc < 2) return;
  const std::string typed = argv[1];
  if (typed[0] == '-') {
    if (typed == "-h" || typed == "--help" || typed == "--help-all" || typed == "--version") return;
    throw stagecut::Error("unknown option '" + typed + "'; options go after the command, e.g. " +
                          "'stagecut inspect FILE'; run 'stagecut --help' for usage");
  }
  std::vector<std::string> names;
  for (const CLI::App* command : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (command->get_name() == typed) return;
    names.push_back(command->get_name());
  }
  throw stagecut::Error("unknown command '" + typed + "'" + stagecut::unknownNameHint(typed, names));
}

std::string commandLine(int argc, char** argv) {
  std::string line;
  for (int i = 0; i < argc; ++i) line += (i ? " " : "") + std::string(argv[i]);
  return line;
}

// The command's exit code; what it printed is still in std::cout's buffer.
int runCommand(int argc, char** argv) {
  CLI::App app{
      "stagecut: measure a model's layers, cut it into balanced pipeline stages, simulate the\n"
      "schedule and prove the split by running it.",
      "stagecut"};
  app.require_subcommand(1);
  app.set_version_flag("--version", [] { return stagecut::versionText(); });
  stagecut::addBubbleCommand(app);
  stagecut::addInspectCommand(app);
  stagecut::addPartitionCommand(app);
  stagecut::addCompareCommand(app);
  stagecut::addImportCommand(app);
  stagecut::addCalibrateCommand(app);
  stagecut::addSimulateCommand(app);
  stagecut::addPlanCommand(app);
  stagecut::addReportCommand(app, commandLine(argc, argv));
#ifdef STAGECUT_WITH_TORCH
  stagecut::addDemoCommand(app, commandLine(argc, argv));
  stagecut::addProfileCommand(app, commandLine(argc, argv));
  stagecut::addValidateCommand(app, std::vector<std::string>(argv, argv + argc));
#else
  // Listed in --help (and in the nearest-name hint) as the LibTorch part has them.
  for (const stagecut::TorchCommand& command : stagecut::kTorchCommands) app.add_subcommand(command.name, command.description);
#endif
  stagecut::boundNumericFlags(app);
  app.footer("Run 'stagecut <command> --help' for a command's options.\n");

  try {
#ifndef STAGECUT_WITH_TORCH
    if (isTorchCommand(argc, argv)) runTorchPart(argv);
#endif
    checkCommandName(app, argc, argv);
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // CLI11 would print several lines; users get one, with the way to the right help.
    const auto parsed = app.get_subcommands();
    const std::string help = parsed.empty() ? "stagecut --help" : "stagecut " + parsed.front()->get_name() + " --help";
    std::cerr << "stagecut: " << e.what() << "; run '" << help << "' for usage\n";
    return 2;
  } catch (const stagecut::Error& e) {
    std::cerr << "stagecut: " << e.what() << '\n';
    return e.exitCode();
  } catch (const std::exception& e) {
    std::cerr << "stagecut: internal error: " << e.what()
              << "; please report it with the command that caused it\n";
    return 1;
  }
  return 0;
}

}  // namespace

// A write into a pipe whose reader has gone (`stagecut ... | head -1`) ends the process with
// SIGPIPE, quietly, as for cat or grep (the shell sees 141); a caller that ignores SIGPIPE gets
// the one line below and exit code 1 instead.
int main(int argc, char** argv) {
  stagecut::reserveStandardDescriptors();
  stagecut::StandardOutput standard_output;
  const int exit_code = runCommand(argc, argv);
  // Output lost to a full disk or a closed stdout must not end in exit code 0. After a failed
  // command its own message is the one that matters.
  const int error_number = standard_output.finish();
  if (error_number != 0 && exit_code == 0) {
    std::cerr << "stagecut: cannot write standard output (" << std::strerror(error_number) << ")\n";
    return 1;
  }
  return exit_code;
}
