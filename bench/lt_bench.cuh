// What the standalone cuBLASLt benchmarks share (bench/lt_algos.cu,
// bench/lt_context.cu): the error check, a data fill, and a row-major bf16
// GEMM D[m, n] = A[m, k] W[n, k]^T (f32 accumulate) as the cuda backend
// runs it, with cuBLASLt's heuristic candidates for it.
#pragma once
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x) do { auto e = (x); if (e != 0) { std::printf("%s failed: %d (line %d)\n", #x, int(e), __LINE__); std::exit(1); } } while (0)

// pseudo-random bf16 in [-1, 1): GEMM times depend on the data (power)
__global__ void fill(__nv_bfloat16* p, long n, unsigned seed) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
    unsigned x = (unsigned)i * 2654435761u ^ seed;
    x ^= x >> 13; x *= 0x5bd1e995u; x ^= x >> 15;
    p[i] = __float2bfloat16((x & 0xffff) / 32768.0f - 1.0f);
  }
}

// The descriptors of one GEMM shape and up to `most` heuristic candidates
// (r[0] the top-1), released with the object.
struct LtGemmPlan {
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t lw, la, ld;
  cublasLtMatmulPreference_t pref;
  std::vector<cublasLtMatmulHeuristicResult_t> r;
  int found = 0;
  LtGemmPlan(cublasLtHandle_t h, long m, long n, long k, size_t ws_bytes, int most) : r(most) {
    CK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t tw = CUBLAS_OP_T, ta = CUBLAS_OP_N;
    CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &tw, sizeof(tw)));
    CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &ta, sizeof(ta)));
    CK(cublasLtMatrixLayoutCreate(&lw, CUDA_R_16BF, k, n, k));
    CK(cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, k, m, k));
    CK(cublasLtMatrixLayoutCreate(&ld, CUDA_R_16BF, n, m, n));
    CK(cublasLtMatmulPreferenceCreate(&pref));
    CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof(ws_bytes)));
    CK(cublasLtMatmulAlgoGetHeuristic(h, op, lw, la, ld, ld, pref, most, r.data(), &found));
  }
  ~LtGemmPlan() {
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(lw);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(ld);
    cublasLtMatmulDescDestroy(op);
  }
  LtGemmPlan(const LtGemmPlan&) = delete;
  LtGemmPlan& operator=(const LtGemmPlan&) = delete;
};
