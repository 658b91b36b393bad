// Tests write records and goldens as JSON fixtures (a figure of a copy is
// changed in place); the comparison and the golden functions take the
// record's types. These read a fixture into the types (a value of another
// type throws record::RecordError, as a golden's would) and write results
// back.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "harness/record/compare.h"
#include "harness/record/golden_env.h"
#include "harness/record/record.h"
#include "harness/tools/ab.h"

namespace fg {

inline Verdict compare_with_golden(const nlohmann::json& run, const nlohmann::json* golden,
                                   const std::string& golden_file, const std::string& check_id,
                                   const std::string& bless_command, bool require_exact = false) {
  const record::RunRecord r = record::from_json(run);
  if (!golden) return compare_with_golden(r, nullptr, golden_file, check_id, bless_command, require_exact);
  const record::RunRecord g = record::from_json(*golden);
  return compare_with_golden(r, &g, golden_file, check_id, bless_command, require_exact);
}
inline std::vector<Finding> cross_rank_findings(const nlohmann::json& run) {
  return cross_rank_findings(record::from_json(run));
}
inline std::vector<Finding> invariant_findings(const nlohmann::json& run) {
  return invariant_findings(record::from_json(run));
}
inline bool fingerprints_close(const nlohmann::json& a, const nlohmann::json& b, std::string* why) {
  return fingerprints_close(record::part_from_json<record::Fingerprint>(a),
                            record::part_from_json<record::Fingerprint>(b), why);
}
inline Verdict compare_across_worlds(const nlohmann::json& base, const nlohmann::json& other,
                                     const std::string& check_id) {
  return compare_across_worlds(record::from_json(base), record::from_json(other), check_id);
}
inline std::string ledger_entry_text(const nlohmann::json& entry, bool with_source = true) {
  return ledger_entry_text(record::part_from_json<record::LedgerEntry>(entry), with_source);
}
inline std::string ledger_source_text(const nlohmann::json& entry) {
  return ledger_source_text(record::part_from_json<record::LedgerEntry>(entry));
}

// An ab run's record as JSON ({"ranks": [...]}, each rank's "ab" figures).
inline AbVerdict ab_verdict(const nlohmann::json& record, const std::string& fast_path, bool generic_order) {
  return ab_verdict(record::part_from_json<std::vector<record::AbRankRecord>>(record.at("ranks")), fast_path,
                    generic_order);
}

namespace testing_golden {

// golden_of a record fixture, as JSON.
inline nlohmann::json golden_json(const nlohmann::json& rec) {
  return record::to_json(golden_of(record::from_json(rec)));
}

// plan_bless over JSON goldens (`old` nullptr: no golden file).
struct JsonBlessPlan {
  BlessPlan::Kind kind = BlessPlan::Created;
  nlohmann::json golden;
  int dropped = 0, unmatchable = 0;
  std::string why;
};
inline JsonBlessPlan plan_bless_json(const nlohmann::json* old, const nlohmann::json& fresh) {
  std::optional<record::RunRecord> o;
  if (old) o = record::from_json(*old);
  const BlessPlan p = plan_bless(o ? &*o : nullptr, record::from_json(fresh));
  return {p.kind, record::to_json(p.golden), p.dropped, p.unmatchable, p.why};
}

}  // namespace testing_golden
}  // namespace fg
