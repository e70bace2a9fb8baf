#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace stagecut {

/// The largest file readTextFile() takes by default: above any document stagecut writes for a
/// model it can plan (a profile is about 1 KB a layer per measured size).
inline constexpr std::uint64_t kMaxDocumentBytes = std::uint64_t{512} << 20;

/// Reads a whole file, looked at before it is read: a folder, a device, a pipe or a socket, or a
/// file over `max_bytes`, is refused without reading it. Throws Error (input) naming the path
/// for those and when it cannot be opened or read.
std::string readTextFile(const std::string& path, std::uint64_t max_bytes = kMaxDocumentBytes);

/// Parses JSON text from `source` (a file name, used in messages). Throws Error (input) with one
/// line naming the source when the text is empty, not JSON, or holds a number out of range.
nlohmann::json parseJsonDocument(const std::string& text, const std::string& source);

/// The document's "format" tag, e.g. "stagecut.profile/1". Throws Error (input) when the document
/// is not an object or has no string "format" field.
std::string documentFormat(const nlohmann::json& document, const std::string& source);

/// Throws Error (input) unless the document's "format" tag is `expected`, saying how to make
/// one: "<source>: is a <tag> document, not <expected>; write one with '<write_command>'".
/// A document without a tag is refused naming `expected`; one that is not an object as
/// documentFormat() refuses it.
void requireDocumentFormat(const nlohmann::json& document, const std::string& source,
                           const std::string& expected, const std::string& write_command);

/// Serialises a document the way every stagecut writer does: 2-space indent, trailing newline.
std::string toJsonText(const nlohmann::json& document);

}  // namespace stagecut
