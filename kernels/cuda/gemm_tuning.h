// GEMM algorithm choice by measurement: what max-autotune on the cuda
// backend adds to cuBLASLt's top-1 heuristic (kernels/cuda/cublaslt.h), as
// Inductor's max-autotune benchmarks its GEMM choices. One choice per GEMM
// shape (type, m, n, k, batch, epilogue), the same on every rank and every
// run:
//   1. every rank: gemm_tuning_start(); the next forward (in the worker,
//      the one after the residual placement: harness/run/placement.h) runs
//      each GEMM with the top-1 and notes its shape;
//   2. rank 0: gemm_tuning_choose(known) takes, per noted shape, the choice
//      `known` holds (the golden's, else the on-disk cache's, for this GPU
//      model) where cuBLASLt still accepts it, else measures the candidates
//      (lt_measure); the table goes to every rank through the c10d store;
//   3. every rank: gemm_tuning_adopt(table); from the next forward on, its
//      GEMMs run the table's choices;
//   4. every rank: a choice other than the top-1 is checked in the forward
//      it serves (gemm_tuning_unchecked): the caller times the whole forward
//      as it runs (its CUDA graph replayed, or its host launches) with the
//      choice and with the top-1 (gemm_tuning_try), rank 0's times decide,
//      and every rank settles the same way (gemm_tuning_settle). A GEMM
//      timed alone does not see what it costs the forward: measured on the
//      H100 and the H200, a qkv candidate 0.6-1.7 us faster alone needs a
//      4-byte memset before its kernel, and in traced replays of the forward
//      8-23 us fell idle around that memset (the top-1 needs none); timed
//      in the forward, untraced, the two were within 0.5 us;
//   5. the record keeps gemm_tuning_record(): each shape's choice, where it
//      came from, and its timings (harness/RECORD.md, `gemm_algos`); rank 0
//      caches gemm_tuning_table() after the checks.
// Tables are JSON arrays of objects:
//   {"shape": "bf16 m1024 n6144 k2048", "type", "m", "n", "k", "batch",
//    "bias", "gelu", "addend", "algo": 128 hex digits, "config": "algo 66
//    tile 20 ...", "choice": rank in the heuristic's list, "candidates",
//    "us", "top1_us", "top1_algo": the top-1's 128 hex digits, "forward":
//    the check in the forward ({"how", "graph", "checked", "choice", "choice_config",
//    "choice_ms", "top1_ms", "kept": "choice" | "top-1"}), "source":
//    "measured" | "golden" | "cache" | "top-1", "why" (top-1 only: why no
//    choice)}
// A known choice other than the top-1 without "forward" is measured again.

// Without the cuda runtime (kernels/cuda/no_cuda.cpp) start and adopt do
// nothing and the tables are empty.
#pragma once
#include <string>
#include <vector>

namespace fg {

void gemm_tuning_start();
// rank 0; `known` a table (may be "" or "[]"). Returns the table.
std::string gemm_tuning_choose(const std::string& known);
// every rank; "" or what in the table could not be read
std::string gemm_tuning_adopt(const std::string& table);
// every rank, after adopt: the shapes whose adopted choice is not the top-1
// and has not been kept by a check in a forward timed as this run times it
// (`graph`: CUDA graph replays, else host launches), in table order. A
// choice kept with host launches is checked again in a run that replays
// CUDA graphs and the other way round: measured on the H100
// (tp_block_llama_h2048), a qkv choice that needs a memset won by 1.3% with
// host launches and was kept, while in the replayed graph the top-1 had won
// before (bench/RESULTS.md, "Issue 17, seventh step"). The entry's
// forward.checked lists the ways that kept it; once a check keeps the
// top-1, the entry names it and no run checks that shape again.
std::vector<std::string> gemm_tuning_unchecked(bool graph);
// every rank: `shape`'s GEMMs run its choice (true) or the top-1 (false)
// from the next call on; "" or why not
std::string gemm_tuning_try(const std::string& shape, bool choice);
// every rank, with rank 0's times: keeps the choice or the top-1 (the entry
// then names the top-1, with "forward" saying what was measured: both
// medians, "choice_faster_rounds" as "3 of 4", how) and runs it; "" or why
// not. The caller decides keep_choice (harness/run/rounds.h: 1% and every round)
std::string gemm_tuning_settle(const std::string& shape, bool keep_choice, double choice_ms, double top1_ms,
                               int choice_faster_rounds, int rounds, const std::string& how, bool graph);
// the adopted table, for rank 0's cache
std::string gemm_tuning_table();
// what this process runs with: the adopted entries, with "fallbacks" (plans
// whose operands' alignment ruled the choice out), and the shapes this rank
// ran that the table did not hold (source "top-1")
std::string gemm_tuning_record();
// "cuBLASLt 130000": what the choices are valid for, with the GPU model
std::string gemm_tuning_library();

}  // namespace fg
