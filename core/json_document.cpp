#include "core/json_document.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <sys/stat.h>

#include "core/error.h"
#include "core/units.h"

namespace stagecut {

std::string readTextFile(const std::string& path, std::uint64_t max_bytes) {
  struct stat status {};
  if (::stat(path.c_str(), &status) != 0) {
    throw Error(path + ": cannot open (" + std::strerror(errno) + "); check the path");
  }
  if (S_ISDIR(status.st_mode)) throw Error(path + ": is a folder; give the file in it");
  // /dev/zero or a pipe never ends, and its size says nothing: only regular files are read.
  if (!S_ISREG(status.st_mode)) {
    throw Error(path + ": is not a regular file (a device, pipe or socket); give a file stagecut wrote");
  }
  if (static_cast<std::uint64_t>(status.st_size) > max_bytes) {
    throw Error(path + ": is " + formatBytes(static_cast<std::uint64_t>(status.st_size)) +
                ", more than any document stagecut writes (at most " + formatBytes(max_bytes) + "); check the path");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error(path + ": cannot open (" + std::strerror(errno) + "); check the path");
  }
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) {
    throw Error(path + ": cannot read (" + std::strerror(errno) + ")");
  }
  return content.str();
}

namespace {

// nlohmann prefixes its messages with "[json.exception.parse_error.101] "; users need the rest.
std::string withoutExceptionTag(const std::string& message) {
  if (!message.empty() && message.front() == '[') {
    const auto close = message.find("] ");
    if (close != std::string::npos) return message.substr(close + 2);
  }
  return message;
}

bool isBlank(const std::string& text) {
  return text.find_first_not_of(" \t\r\n") == std::string::npos;
}

// Control bytes other than whitespace never occur in JSON text; seeing one in the first bytes
// means the user passed a binary file (a .pt model, a trace), which deserves its own message.
// DEL (0x7f) is not one of them: JSON strings may hold it raw, and our own writer leaves it raw.
bool looksBinary(const std::string& text) {
  const std::size_t probe = std::min<std::size_t>(text.size(), 512);
  for (std::size_t i = 0; i < probe; ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte < 0x20 && byte != '\t' && byte != '\n' && byte != '\r') return true;
  }
  return false;
}

}  // namespace

nlohmann::json parseJsonDocument(const std::string& text, const std::string& source) {
  if (isBlank(text)) {
    throw Error(source + ": file is empty; expected a stagecut JSON document");
  }
  if (looksBinary(text)) {
    throw Error(source + ": is a binary file, not JSON; expected a stagecut JSON document");
  }
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(source + ": not valid JSON: " + withoutExceptionTag(e.what()));
  }
}

std::string documentFormat(const nlohmann::json& document, const std::string& source) {
  if (!document.is_object()) {
    throw Error(source + ": expected a JSON object with a \"format\" field, got " +
                std::string(document.type_name()));
  }
  const auto format = document.find("format");
  if (format == document.end() || !format->is_string()) {
    throw Error(source + ": no string \"format\" field; expected \"stagecut.profile/1\" or "
                         "\"stagecut.partition/1\"");
  }
  return format->get<std::string>();
}

void requireDocumentFormat(const nlohmann::json& document, const std::string& source,
                           const std::string& expected, const std::string& write_command) {
  if (document.is_object() && !(document.contains("format") && document["format"].is_string())) {
    throw Error(source + ": no string \"format\" field; expected a " + expected + " document, written with '" +
                write_command + "'");
  }
  const std::string format = documentFormat(document, source);
  if (format != expected) {
    throw Error(source + ": is a " + format + " document, not " + expected + "; write one with '" +
                write_command + "'");
  }
}

std::string toJsonText(const nlohmann::json& document) { return document.dump(2) + "\n"; }

}  // namespace stagecut
