// Verdicts: a RunRecord against its golden file, across ranks, and across
// world sizes (harness/RECORD.md has the schema; DESIGN.md "Harness outputs"
// the meaning of each verdict).
//
// Each comparison reads the record's types (harness/record/record.h): the
// launcher gathers a run's record as them, load_golden reads a golden into
// them.
#pragma once
#include <string>
#include <vector>

#include "harness/record/record.h"

namespace fg {

// Flaky: a failing or untestable check under an unexpired quarantine
// (harness/record/quarantine.h); it does not fail the gate.
enum class VerdictKind { Pass, Fail, Improved, Missing, CannotTest, Flaky };

// "PASS", "FAIL", "IMPROVED", "MISSING", "CANNOT_TEST", "FLAKY".
const char* verdict_name(VerdictKind k);

// One observation. Pass-kind findings are informative (a renamed kernel, a
// changed fusion decision at equal counts): they never change the verdict.
struct Finding {
  VerdictKind kind;
  std::string message;
};

struct Verdict {
  std::string check_id;
  VerdictKind kind = VerdictKind::Pass;
  std::vector<Finding> findings;
  std::string bless_command;
};

// Fail if any finding fails, else CannotTest if any, else Improved if any,
// else Pass. Missing is decided by the caller (no golden), not by findings.
VerdictKind overall_kind(const std::vector<Finding>& findings);

// Whether an ATen operator only makes a view or flips a conjugate or
// negative bit (as_strided, select, transpose, resolve_conj, ...): no work
// runs. The checks of what an extern really runs leave these out: LibTorch
// makes more or fewer of them by the machine it runs on (a bf16 bmm on a
// CPU without AVX-512 walks its batches through select and as_strided,
// measured on an AMD EPYC with AVX2: 12 selects more in one bmm, the same
// work).
bool aten_metadata_op(const std::string& op);
// A rank's ATen operator calls in externs that do work: its launches'
// operators less the metadata ones (the record's aten_op_count where no
// launch lists its operators).
std::optional<long long> aten_work_count(const record::RankRecord& r);

// The run against its golden (nullptr: no golden file, so the verdict is
// Missing unless a run-only check fails). Run-only checks (accuracy,
// cross-rank agreement) apply either way. Exact digests are compared where
// the golden holds the run's environment, fingerprints within tolerance
// elsewhere (a note says which environment differs in what); with
// `require_exact` a golden without this environment fails. `golden_file`
// and `bless_command` only go into messages.
Verdict compare_with_golden(const record::RunRecord& run, const record::RunRecord* golden,
                            const std::string& golden_file, const std::string& check_id,
                            const std::string& bless_command, bool require_exact = false);

// Checks that need no golden: replicated outputs bit-identical on every rank,
// and every rank compiled the same graphs, decisions and collectives.
std::vector<Finding> cross_rank_findings(const record::RunRecord& run);

// Everything a run must hold whatever its golden says
// (docs/ARCHITECTURE.md, "Invariants on their own"): accuracy against eager and fp64, the
// recompile rules of a repro that drives recompiles, in mode C one graph,
// no break and no recompile unless the repro declares them (each rank
// record's `expected_breaks`), and cross_rank_findings. `check` fails a violation
// even against a golden that recorded it; `bless` refuses to write one.
std::vector<Finding> invariant_findings(const record::RunRecord& run);

// Two output fingerprints (RECORD.md "fingerprint") equal within the
// tolerance of their dtype; `why` (may be null) gets the first figure that
// is not, with both values.
bool fingerprints_close(const record::Fingerprint& a, const record::Fingerprint& b, std::string* why);

// Rank 0's outputs at another world size against the world-1 record, matched
// by name. Outputs the other run marks "replicated": false are shards, which
// cannot be compared with the whole tensor; they are reported, not judged.
Verdict compare_across_worlds(const record::RunRecord& base, const record::RunRecord& other,
                              const std::string& check_id);

// A ledger entry as a reader needs it: "buf2+buf4 score (2, 0, 66048, -1)
// at repros/x.cpp:17-21 (norm)" (no "at" when the record has no source, or
// `with_source` is false).
std::string ledger_entry_text(const record::LedgerEntry& entry, bool with_source = true);
// Only the "at ..." part ("" without source): consecutive lines of one
// function as a range, functions separated by "; ".
std::string ledger_source_text(const record::LedgerEntry& entry);

}  // namespace fg
