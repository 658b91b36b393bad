// Golden files: where they live, their canonical text and how one is read
// back and checked against the schema. A golden file is a RunRecord
// (harness/RECORD.md) in canonical text, so that a bless reads as a small,
// reviewable diff (harness/record/diff.h); it is written with
// harness/record/files.h.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "harness/record/record.h"

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
// keyed by them: harness/record/golden_env.h), and a record's `env` holds the
// environment key of harness/run/environment.h. Bump it when a key changes
// meaning or type; harness/record/record.schema.json holds the same number.
constexpr int kRecordFormatVersion = 2;

// Canonical text: sorted keys, indent 2, one figure per line, trailing
// newline. Equal records give byte-equal text.
std::string dump_record(const nlohmann::json& j);
std::string dump_record(const record::RunRecord& r);

// nullopt when `path` does not exist. A file that exists but cannot be read,
// is not JSON, lacks the keys `check` relies on or has a field of another
// type than the record's types read is a UserError naming path:line[:col]
// and how to recover.
std::optional<record::RunRecord> load_golden(const std::string& path);

}  // namespace fg
