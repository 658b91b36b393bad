// What a rank measures before its timed forwards, every rank adopting rank
// 0's decision: the cuBLASLt algorithm of each GEMM shape (max-autotune on
// cuda), where each replicated residual add runs (the same), and whether a
// GEMM runs as a generated template or a library call (max-autotune on cpu).
// And the pace of a step, which sizes each warm-up.
#pragma once
#include <functional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/run/run.h"
#include "kernels/collectives/collectives.h"
#include "kernels/cpu/runtime.h"

namespace fg {

// Runs `step` n times from a drained device and returns its pace (ms a step,
// host clock, the device drained again).
double paced_ms(AtenExecutor& ex, const std::function<void()>& step, int n);
// The pace of `step` as the timings that follow run it: replays of its CUDA
// graph where `graph`, else its host launches.
double step_pace_ms(AtenExecutor& ex, const std::function<void()>& step, int n, bool graph);
// How many untimed steps fill `ms` at `pace_ms`: rank 0's count on every rank.
int agreed_warm_steps(Collectives& coll, const std::string& key, double ms, double pace_ms);
// A share of the agreed warm-up's `warm_steps` forwards: 1/`divisor` of
// them, at most about `at_most_ms` of them; 0 without a warm-up.
int warmup_share(int warm_steps, int warmup_ms, int divisor, int at_most_ms);

// After the warm-up forward: rank 0 chooses each GEMM shape's algorithm,
// every rank adopts the table and checks it in the forward `fwd`.
void choose_gemm_algos(const RunSpec& spec, Collectives& coll, int rank, AtenExecutor& ex,
                       const std::function<void()>& fwd, bool graph);

// After the warm-up forward: each residual hoist site placed (forced, the
// golden's, else timed with `time_forward`); returns the table.
nlohmann::json choose_residual_placement(
    const RunSpec& spec, Collectives& coll, int rank, AtenExecutor& ex,
    const std::function<std::vector<double>(const std::set<std::string>&, std::string*)>& time_forward);

// After the warm-up forward, which compiled every linear as a template: each
// template kernel's shapes run as the template or the library call; returns
// the table.
nlohmann::json choose_gemm_templates(const RunSpec& spec, Collectives& coll, int rank, AtenExecutor& ex,
                                     const std::function<void()>& one_forward);

}  // namespace fg
