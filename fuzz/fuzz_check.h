#pragma once

// What every stagecut fuzz target holds the library to: on any input it either returns or
// throws stagecut::Error with a message that is one non-empty line (the CLI prints it as is).
// Anything else (another exception, a sanitizer report, a hang) is a finding.

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "core/error.h"

namespace stagecut::fuzz {

/// Aborts, so that libFuzzer keeps the input, with `what` on stderr.
[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "stagecut fuzz finding: %s\n", what.c_str());
  std::abort();
}

/// Runs `body`; an Error must carry a one-line message, any other exception is a finding.
template <typename Body>
void expectCleanOutcome(Body&& body) {
  try {
    body();
  } catch (const Error& e) {
    const std::string message = e.what();
    if (message.empty()) finding("an Error with an empty message");
    if (message.find_first_of("\n\r") != std::string::npos) {
      finding("an Error message of more than one line: " + message);
    }
  } catch (const std::exception& e) {
    finding(std::string("an exception that is not stagecut::Error: ") + e.what());
  }
}

}  // namespace stagecut::fuzz
