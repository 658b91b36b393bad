// Residual placement (max-autotune on cuda): where a replicated residual add
// runs, decided per site by what the forward measures rather than by a rule.
//
// The TP residual hoist (fusion/passes/tp_rewrite.h) moves `r + all_reduce(g)`
// onto rank 0's GEMM as its C operand: the add costs no kernel of its own,
// but the GEMM reads r in its epilogue, after its main loop, where a short
// GEMM has little time to hide it; left after the all-reduce, the add joins
// the next kernel's pass over the same rows (the next RMSNorm reads r and
// the sum there). Measured on the H100 (bench/RESULTS.md), neither wins at
// every size: at tp_block_llama hidden 2048, seq 512 the output projection
// took 16.9 us with C against 13.7-15.2 alone and its norm 3.5-3.7 against
// 4.0-4.1 with the add; at seq 2048 the hoist won by 2.4 us. So can fuse is
// not should fuse, and the run decides, as Inductor's benchmark_fusion does:
//   1. every rank: the warm-up forward compiles every hoist the pass proves
//      (the ledger's tp_residual_hoisted entries are the sites);
//   2. rank 0 decides what it knows (known_placements): FUSEGATE_FAULT=
//      residual_placement:gemm|apart forces every site; else the golden's
//      table, whatever machine blessed it, since the golden fixes the
//      program the gate checks (a golden blessed before the choice holds no
//      table and decides nothing: its sites are measured, as any compiler
//      change is checked against it, and a site that moves fails the check
//      until it is blessed again);
//   3. every site still undecided is timed in the whole forward, as the run
//      times it (its CUDA graph replayed, or its host launches), hoisted and
//      apart, in alternating order over 4 rounds of 30 forwards, each side's
//      median over its 120 kept; rank 0's times decide (apart_wins: the add
//      apart only where its median is 0.5% below the hoist's and it was
//      faster in each of the 4 rounds, harness/run/rounds.h), every rank adopts. The median, not the fastest: the spread belongs to the
//      program. On the H100, tp_block_llama_h2048_s2048 at world size 1
//      with the down projection's residual hoisted ran its fastest forward
//      at 0.800-0.801 ms but its median at 0.868-0.915 (three processes),
//      with the add apart 0.811-0.812 and 0.821-0.849. That spread was the
//      GPU settling at its 700 W power cap under the load (SM clock 1.98 ->
//      1.4-1.6 GHz within ~50 ms): so each round's timed forwards come after
//      250 ms of the same forward back to back, at the sustained state, where
//      the same process-to-process spread is under 1% and the hoist won at
//      both sites of seq 2048 and hidden 4096 (1-3%; bench/RESULTS.md, tenth
//      step);
//   4. the graphs compile with the table (AtenExecutor::set_residuals_apart:
//      a site left apart is a ledger entry rejected with tp_residual_apart)
//      and the record keeps it (`residual_placement`, harness/RECORD.md).
// There is no cache: the timing costs about 2 s a site, and a golden holds
// the choice that a check runs.
#pragma once
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/record/record.h"
#include "harness/run/rounds.h"

namespace fg {

struct PlacementChoice {
  std::string site;        // "%30(linear) + %32(add)" (residual_site)
  bool apart = false;      // the add stays after the all-reduce
  std::string source;      // measured, golden or forced
  double gemm_ms = 0;      // the forward with the hoist (measured only)
  double apart_ms = 0;     // the forward with the add apart (measured only)
  std::string how = "";    // how the forwards were timed (measured only)
  int apart_faster = 0;    // rounds in which the add apart was faster (measured only)
  int rounds = 0;          // rounds timed (measured only; 0: not measured)
};

// The sites are the ledger's entries that hoisted (tp_residual_hoisted) or
// were left apart (tp_residual_apart), in order (the worker collects them).

// Rank 0, before measuring: the sites decided by `forced` ("gemm", "apart"
// or "": FUSEGATE_FAULT=residual_placement) or by `golden` (the run's
// golden record, when there is one; `golden_name` names it in messages).
// Throws UserError on a table entry without a site or of another placement.
std::map<std::string, PlacementChoice> known_placements(const std::vector<std::string>& sites,
                                                        const std::string& forced,
                                                        const std::optional<record::RunRecord>& golden,
                                                        const std::string& golden_name);

// The add stays apart only where its forward's median was faster than the
// hoist's by more than 0.5% and it was faster in every round (the rounds'
// default side is the hoist): the hoist is the compiler's default.
bool apart_wins(const RoundsSummary& hoisted_vs_apart);

// {"site", "placement": "gemm" | "apart", "source"} and, where measured,
// "gemm_ms", "apart_ms", "apart_faster_rounds" ("3 of 4"), "how".
nlohmann::json placement_json(const PlacementChoice& c);
// A record's table: rank 0's residual_placement (every rank holds rank 0's),
// or null where it has none.
const std::vector<record::ResidualPlacement>* placement_table(const record::RunRecord& record);
// The sites a table (the record's residual_placement) leaves apart.
std::set<std::string> apart_sites(const std::vector<record::ResidualPlacement>& table);

}  // namespace fg
