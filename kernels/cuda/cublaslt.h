// GEMMs through cuBLASLt, on raw device pointers and a stream: what the cuda
// backend runs for linear layers. Needs only the CUDA toolkit to build (CI
// compiles it); running it needs a GPU.
//
// Row-major D[b] = A · W[b]^T (+ bias) (then GELU) (+ beta · C) for b < batch, with
// A [m, k], W[b] [n, k], D[b] and C [m, n]; bf16, f16 or f32 storage and f32
// accumulation. W and D advance by n*k and m*n elements per batch entry; A
// and C are shared. One cuBLASLt call, one kernel (cuBLASLt may pick an
// algorithm that adds a split-K reduction; the caller counts one launch).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

namespace fg {

enum class LtType { BF16, F16, F32 };

struct LtGemm {
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 1;
  LtType type = LtType::BF16;
  bool bias = false;    // a [n] vector added to every row (cuBLASLt's bias epilogue)
  bool gelu_tanh = false;  // GELU (tanh approximation) on the f32 result, after the bias
  bool addend = false;  // beta · C added (C [m, n], read as D's type)
};

// Runs the GEMM on `stream`; "" on success, else what failed. Plans
// (descriptors and the chosen algorithm) are cached per shape and device.
std::string lt_gemm(const LtGemm& g, const void* a, const void* w, const void* bias, const void* c, float beta,
                    void* d, void* workspace, size_t workspace_bytes, cudaStream_t stream);

// The workspace lt_gemm's plans may use.
constexpr size_t kLtWorkspaceBytes = 32u << 20;

// -- GEMM algorithm choice by measurement (max-autotune on cuda) -------------
//
// By default lt_gemm runs cuBLASLt's top-1 heuristic algorithm. With tuning
// on, it runs the algorithm chosen for the GEMM's shape (lt_choose), where
// one is chosen and cuBLASLt accepts it for the operands at hand, else the
// top-1 (and remembers the shape as untuned, or counts the fallback).
// kernels/cuda/gemm_tuning.h decides what is chosen (rank 0 measures,
// every rank adopts the same choice).

struct LtAlgo {
  uint64_t data[8] = {};  // cublasLtMatmulAlgo_t, opaque
};
std::string lt_algo_hex(const LtAlgo& a);                     // 128 hex digits
bool lt_algo_from_hex(const std::string& hex, LtAlgo* a);     // false if not 128 hex digits
std::string lt_algo_text(const LtAlgo& a);                    // "algo 66 tile 20 stages 28 splitk 1 ..."
// The shape of a GEMM as tuning keys it: "bf16 m1024 n6144 k2048" plus
// " batch2", " bias", " gelu", " addend" where they apply.
std::string lt_shape_key(const LtGemm& g);
int lt_version();  // cublasLtGetVersion()

struct LtMeasured {
  LtAlgo algo;        // the choice
  LtAlgo top1;        // cuBLASLt's top-1 (the forward check runs it against the choice)
  int choice = 0;     // its rank in the heuristic's list (0: the top-1)
  int candidates = 0; // how many ran and were timed
  double us = 0, top1_us = 0;
};
// Times up to `max_candidates` of cuBLASLt's candidates for `g` on operands
// of its shape (pseudo-random values, 256-byte aligned) at the sustained
// state (after 250 ms of the top-1 back to back; the median of 5 rounds
// that run every candidate in turn) and picks the fastest; the top-1 stays
// unless another is at least 1% faster (the spread of repeated timings
// here). "" or what failed.
std::string lt_measure(const LtGemm& g, int max_candidates, LtMeasured* out);

void lt_set_tuning(bool on);
bool lt_tuning();
// The algorithm lt_gemm runs for shapes like g's from now on (its plans are
// remade); "" or why cuBLASLt refuses it for 256-byte aligned operands.
std::string lt_choose(const LtGemm& g, const LtAlgo& a);
// Whether cuBLASLt runs `a` for g (256-byte aligned operands), choosing
// nothing: "" or why not.
std::string lt_fits(const LtGemm& g, const LtAlgo& a);
// The algorithm chosen for g's shape, if one is (false: none).
bool lt_chosen(const LtGemm& g, LtAlgo* a);
// Up to n of cuBLASLt's candidates for g, in its heuristic's order (the
// top-1 first); "" or what failed.
std::string lt_candidates(const LtGemm& g, int n, std::vector<LtAlgo>* out);
// Shapes lt_gemm ran with tuning on and no choice, in the order first run.
std::vector<LtGemm> lt_untuned();
// Per chosen shape: how many plans had to fall back to the top-1 because
// cuBLASLt refused the choice for their operands (alignment).
std::vector<std::pair<std::string, int>> lt_fallbacks();
void lt_forget_choices();  // tests

}  // namespace fg
