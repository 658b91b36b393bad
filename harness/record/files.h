// The files the gate reads and writes: JSON read back with errors placed at
// their line and column, and writes that a reader never sees half done
// (goldens, proofs, records) and that never leave their folder through a
// link.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace fg {

// The descriptor a path names when it is this process's own stream
// (/dev/stdout 1, /dev/stderr 2, /dev/fd/N or /proc/self/fd/N), else -1:
// write_atomic writes those down the descriptor, as it is open.
int std_stream_fd(const std::string& path);

// Reads a JSON file: nullopt when it does not exist; a folder, an unreadable
// file, one nested deeper than 64 levels or malformed JSON is a UserError
// naming path[:line:col], `what` it is ("golden file", "proof") and `hint`
// (how to recover). `text` (may be null) gets the file's text.
std::optional<nlohmann::json> read_json_file(const std::string& path, const std::string& what,
                                             const std::string& hint, std::string* text = nullptr);

// Replaces `path` with `text` so that a reader sees the old file or the new
// one, never a mix: creates parent folders, writes a temporary file beside
// the target, syncs it, renames it over the target.
void write_atomic(const std::string& path, const std::string& text);
// write_atomic for what belongs in `folder` (a golden under the golden
// folder, a proof under its proofs, a record under --records): the file
// `path` names, its links and its folders' links followed, must lie inside
// `folder` (its own links followed); else a UserError naming both paths and
// nothing is written. A golden folder comes from a pull request: a link in
// it must not make a bless write elsewhere.
void write_inside(const std::string& folder, const std::string& path, const std::string& text);
// Where writing `path` would land when that is outside `folder` (links
// followed as write_inside follows them); "" when it stays inside.
std::string link_leaves(const std::string& folder, const std::string& path);
// Removes a folder and everything under it (symbolic links are removed,
// not followed); a missing folder is no error. Not std::filesystem::
// remove_all: PyTorch 2.11's libtorch.so exports its own copy of it, which
// the dynamic linker binds this program's calls to and which calls through
// a null pointer (found twice: the launcher's scratch folders, then the
// fuzz supervisor's; the test lint.no_remove_all keeps it out).
void remove_tree(const std::string& dir);
// Removes the temporary file write_atomic() is writing now, if any; safe in
// a signal handler.
void unlink_inflight_write();
// Removes write_atomic() temporaries under `golden_dir` left by processes
// that are gone (killed mid-write); never a golden.
void sweep_stale_writes(const std::string& golden_dir);

}  // namespace fg
