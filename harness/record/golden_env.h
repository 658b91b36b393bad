// A golden across environments. A RunRecord carries one environment (`env`)
// and one exact digest an output; a golden (harness/RECORD.md, format 2)
// keeps every environment it was blessed in, keyed by fingerprint
// (`environments`), and each output's exact digest per environment (`exact`
// an object, fingerprint -> digest). Everything else in a golden holds in
// every environment: counts, breaks, kernels, ledger, hashes, fast paths, and
// the outputs' fingerprints within their tolerance; `bless` adds an
// environment only where that part agrees.
#pragma once
#include <map>
#include <string>

#include "harness/record/record.h"

namespace fg {

// xxh64 of `text`, as 16 hex digits.
std::string hash_text(const std::string& text);

// The hash an environment is keyed by: xxh64 of its text as a JSON object,
// its own "fingerprint" key left out.
std::string environment_fingerprint(const record::Environment& env);

// What a golden keeps of a record: the record without timings (they vary
// run to run), of the GEMM template choices each shape's choice and of the
// residual placement each site's, without the gathered copy's exact digest
// (never compared), with its one environment as `environments` and each
// exact digest keyed by it.
record::RunRecord golden_of(record::RunRecord record);

// Whether two goldens record the same state: equal in everything an
// environment does not decide, which leaves out the environments, exact
// digests, fingerprints, the accuracy's figures (each output's pass kept),
// the names of the device kernels a launch ran (their count kept) and how
// each GEMM algorithm was chosen (its shape and algorithm kept).
bool same_state(const record::RunRecord& a, const record::RunRecord& b);

// What differs between two environment objects, "key a -> b, ..." (the
// fingerprints left out); "" when nothing does.
std::string environment_difference(const record::Environment& from, const record::Environment& to);

// Of a golden's environments, the one nearest `env` (fewest keys differing)
// and what differs from it; "" where there is none.
std::string nearest_environment_difference(const std::map<std::string, record::Environment>& environments,
                                           const record::Environment& env);

// How a bless writes `fresh` (golden_of a new run) over `old` (the golden
// file's contents, or nullptr when there is none).
struct BlessPlan {
  enum Kind {
    Unchanged,  // this environment is there with the same digests, and nothing else moved
    Added,      // this environment's digests added; nothing else changed
    Pruned,     // as Unchanged, but environments recorded under another key dropped
    Replaced,   // a new state: the golden is `fresh` alone
    Created,    // no golden was there
  } kind = Created;
  record::RunRecord golden;  // what to write
  int dropped = 0;        // Replaced: environments of the old golden left out
  int unmatchable = 0;    // Added, Pruned: environments of another key's fields dropped (an older fusegate's)
  std::string why;        // Replaced: what moved (first difference), for the summary
};
BlessPlan plan_bless(const record::RunRecord* old, const record::RunRecord& fresh);

}  // namespace fg
