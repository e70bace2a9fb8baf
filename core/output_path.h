#pragma once

// Every file stagecut writes goes through here, so that no output path can lose data: not the
// command's own input, not a device or a pipe turned into a regular file, not a link replaced by
// a file, not a file its owner made read-only. Rules in docs/architecture.md, "Writing files".

#include <string>
#include <utility>
#include <vector>

namespace stagecut {

/// A file the command reads, named as messages name it: {"the input profile", "a.json"}.
struct InputFile {
  std::string what;
  std::string path;
};

/// A file the command writes: its path as the user typed it, the flag that named it ("-o",
/// "--trace"; empty for files the command names itself, such as the demo's) and the files the
/// command reads, which the output must not be. A plain path converts to one, with no flag and
/// no inputs.
struct OutputPath {
  OutputPath(std::string path_, std::string flag_ = {}, std::vector<InputFile> inputs_ = {})
      : path(std::move(path_)), flag(std::move(flag_)), inputs(std::move(inputs_)) {}
  OutputPath(const char* path_) : OutputPath(std::string(path_)) {}

  std::string path;
  std::string flag;
  std::vector<InputFile> inputs;
};

/// Checks, before any work, that `output` can be written by the rules of writeOutputFile, so a
/// long run fails before it starts rather than at its end. Touches nothing: no file is created
/// or opened (a FIFO would block). Throws Error (input) with one line naming the path and, where
/// the flag is the fix, the flag: an empty path; the same file (device and inode, through links)
/// as one of `inputs`; a folder; a block device; an existing regular file the user may not write
/// (as root access() allows it, as for the shell's `>`); a missing or read-only folder; a
/// closed or read-only descriptor for /dev/stdout, /dev/stderr, /dev/fd/N or /proc/self/fd/N.
void checkOutputPath(const OutputPath& output);

/// checkOutputPath for each of a command's outputs, and no two of them the same file (the same
/// path, or through links, or an existing file by device and inode): the second write would
/// replace the first. Devices, FIFOs and descriptors may be shared (`/dev/null` twice loses
/// nothing). Throws Error (input): "<flag> <path>: is also the <flag> file; give each output its
/// own file".
void checkDistinctOutputs(const std::vector<OutputPath>& outputs);

/// Writes `content` to `output` by what the path is, after the checks of checkOutputPath:
/// - /dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N (or a link to one): written to that
///   descriptor as it is, after flushing what the command printed to stdout;
/// - a character device, a FIFO or a socket: opened for writing without creating or truncating
///   it, and written through, so the node stays what it was;
/// - anything else: replaced atomically, a reader sees the old file or the new one: a temporary
///   file next to it, fsync, rename. A symbolic link is followed to its target, which is
///   replaced, so the link stays a link. A replaced file keeps its permission bits (and, where
///   the process may, its owner); a new one gets 0666 under the umask.
/// Content over kMaxDocumentBytes (512 MiB, what readTextFile takes) is refused before anything is
/// written, kind input: whatever stagecut writes, it reads back.
/// Throws Error naming the path: kind input for the path's faults (as checkOutputPath), kind
/// runtime when the data does not get through (a full disk, an I/O error). A failed write leaves
/// no temporary file and, for a replaced file, the old file as it was.
void writeOutputFile(const OutputPath& output, const std::string& content);

}  // namespace stagecut
