// GEMM algorithm choice by measurement: what max-autotune on the cuda
// backend adds to cuBLASLt's top-1 heuristic (kernels/cuda/cublaslt.h), as
// Inductor's max-autotune benchmarks its GEMM choices. One choice per GEMM
// shape (type, m, n, k, batch, epilogue), the same on every rank and every
// run:
//   1. every rank: gemm_tuning_start(); the warm-up forward runs each GEMM
//      with the top-1 and notes its shape;
//   2. rank 0: gemm_tuning_choose(known) takes, per noted shape, the choice
//      `known` holds (the golden's, else the on-disk cache's, for this GPU
//      model) where cuBLASLt still accepts it, else measures the candidates
//      (lt_measure); the table goes to every rank through the c10d store;
//   3. every rank: gemm_tuning_adopt(table); from the next forward on, its
//      GEMMs run the table's choices;
//   4. the record keeps gemm_tuning_record(): each shape's choice, where it
//      came from, and its timings (harness/RECORD.md, `gemm_algos`).
// Tables are JSON arrays of objects:
//   {"shape": "bf16 m1024 n6144 k2048", "type", "m", "n", "k", "batch",
//    "bias", "gelu", "addend", "algo": 128 hex digits, "config": "algo 66
//    tile 20 ...", "choice": rank in the heuristic's list, "candidates",
//    "us", "top1_us", "source": "measured" | "golden" | "cache" | "top-1",
//    "why" (top-1 only: why no choice)}
// Without the cuda runtime (kernels/cuda/no_cuda.cpp) start and adopt do
// nothing and the tables are empty.
#pragma once
#include <string>

namespace fg {

void gemm_tuning_start();
// rank 0; `known` a table (may be "" or "[]"). Returns the table.
std::string gemm_tuning_choose(const std::string& known);
// every rank; "" or what in the table could not be read
std::string gemm_tuning_adopt(const std::string& table);
// what this process runs with: the adopted entries, with "fallbacks" (plans
// whose operands' alignment ruled the choice out), and the shapes this rank
// ran that the table did not hold (source "top-1")
std::string gemm_tuning_record();
// "cuBLASLt 130000": what the choices are valid for, with the GPU model
std::string gemm_tuning_library();

}  // namespace fg
