// Golden files: where they live, how they are written and read back, and the
// diff that `bless` shows. A golden file is a RunRecord (harness/RECORD.md)
// in canonical text, so that a bless reads as a small, reviewable diff.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace fg {

// root/backend/repro/MODE_wN.json for the default fusion policy and fast
// path selection and for mode A (eager has neither), else
// MODE_wN[.FUSION][.fp-SELECTION][.nodesK].json (a selection's commas
// become '+'; .nodesK for ranks spread over K nodes).
std::string golden_path(const std::string& root, const std::string& backend,
                        const std::string& repro, const std::string& mode, int world,
                        const std::string& fusion, const std::string& fast_paths = "proven", int nnodes = 1);

// The command that (re)writes one golden file; --backend, --fusion,
// --fast-paths and --nnodes appear only when they differ from the CLI's
// defaults (cpu, default, proven, 1).
std::string bless_command(const std::string& repro, const std::string& mode, int world,
                          const std::string& backend, const std::string& fusion,
                          const std::string& fast_paths = "proven", int nnodes = 1);

// The RunRecord format this fusegate writes (every record's and golden's
// "format_version") and the only one its golden loader reads. Format 2: a
// golden keeps several environments (`environments`, each output's `exact`
// keyed by them: harness/golden_env.h), and a record's `env` holds the
// environment key of harness/environment.h. Bump it when a key changes
// meaning or type; harness/record.schema.json holds the same number.
constexpr int kRecordFormatVersion = 2;

// Canonical text: sorted keys, indent 2, one figure per line, trailing
// newline. Equal records give byte-equal text.
std::string dump_record(const nlohmann::json& j);

// nullopt when `path` does not exist. A file that exists but cannot be read,
// is not JSON, or lacks the keys `check` relies on is a UserError naming
// path:line[:col] and how to recover.
std::optional<nlohmann::json> load_golden(const std::string& path);

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

// Line-based unified diff (3 lines of context); empty when equal.
std::string unified_diff(const std::string& old_text, const std::string& new_text,
                         const std::string& old_name, const std::string& new_name);

}  // namespace fg
