#include "profiler/torch_error.h"

#include <c10/util/Exception.h>

#include <sstream>
#include <vector>

namespace stagecut {

namespace {

std::string trimmed(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  const auto last = text.find_last_not_of(" \t\r.");
  return last == std::string::npos || last < first ? text.substr(first) : text.substr(first, last - first + 1);
}

std::string withoutPrefix(std::string line, const std::string& prefix) {
  if (line.rfind(prefix, 0) == 0) line = line.substr(prefix.size());
  return line;
}

}  // namespace

std::string torchErrorLine(const std::exception& error) {
  const auto* torch_error = dynamic_cast<const c10::Error*>(&error);
  const std::string text = torch_error ? torch_error->what_without_backtrace() : error.what();
  std::vector<std::string> lines;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) {
    line = trimmed(line);
    if (!line.empty()) lines.push_back(line);
  }
  if (lines.empty()) return "no message";
  // The interpreter prints where it failed first and what failed last ("RuntimeError: ...").
  const bool traceback = text.find("Traceback of TorchScript") != std::string::npos;
  std::string line = traceback ? lines.back() : lines.front();
  line = withoutPrefix(line, "RuntimeError: ");
  const auto enforce = line.find("] err == 0. ");
  if (line.rfind("[enforce fail at ", 0) == 0 && enforce != std::string::npos) line = line.substr(enforce + 12);
  // Without LibTorch's advice for Python users, which changes from version to version ("This
  // is an internal miniz error. If you are seeing...", "Hint: enable anomaly detection ...
  // set_detect_anomaly(True)").
  for (const char* advice : {". This is an internal", ". If you are seeing", ". Hint: "}) {
    const auto at = line.find(advice);
    if (at != std::string::npos) line = line.substr(0, at);
  }
  return line;
}

}  // namespace stagecut
