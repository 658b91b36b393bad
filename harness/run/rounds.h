// The verdict of alternating timing rounds (ABBA) between a program's
// default form and a candidate: the residual placement (harness/run/placement.h:
// the hoist against the add left apart) and a GEMM algorithm choice checked
// in the forward (kernels/cuda/gemm_tuning.h: the top-1 against the choice).
//
// Each round times both sides, 30 forwards each, after 250 ms of the same
// forward. The candidate replaces the default only where it wins twice:
//   - its median over all its rounds' forwards is below the default's by
//     more than the margin (0.5% for the placement, 1% for a GEMM choice);
//   - its median is below the default's in every round.
// The second condition came from the H100 (2026-11-26 evening): with the
// median rule alone, blessing the 22 max-autotune goldens again at the
// sustained state (their GEMM choices measured again too) moved 9 of their
// 27 placement sites, 6 of them back to where the bless before the last had
// put them: the two forwards were within the spread of the rounds. A decision that flips at each bless is noise written into a
// golden (and a kernel count that moves with it); the default form, the
// compiler's, stays unless the other wins each time it is timed.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fg {

// The median of a set of timings (the upper middle of an even count; 0 for
// none): what every timed decision and the profile read.
double median_of(std::vector<double> v);

struct RoundsSummary {
  double default_ms = 0;    // the default side's median over all its forwards
  double candidate_ms = 0;  // the candidate's
  int candidate_faster = 0; // rounds whose candidate median is below the default's
  int rounds = 0;           // rounds with both sides timed
};

// times[r][0]: round r's forwards of the default side, times[r][1]: of the
// candidate (ms each). A round with a side empty is not counted.
RoundsSummary summarize_rounds(const std::vector<std::vector<std::vector<double>>>& times);

// The candidate wins: both medians finite and positive, the candidate's
// below (1 - margin) x the default's, and faster in every one of at least
// one round.
bool candidate_wins(const RoundsSummary& s, double margin);

// [default_ms, candidate_ms, candidate_faster, rounds]: what rank 0 sends
// every rank, so that all decide alike; from_json throws std::exception on
// another form.
nlohmann::json rounds_json(const RoundsSummary& s);
RoundsSummary rounds_from_json(const nlohmann::json& j);

// "3 of 4"
std::string rounds_text(const RoundsSummary& s);

}  // namespace fg
