// How much a measured choice among cuBLASLt's candidates gains over its
// top-1 heuristic, per GEMM shape of the TP blocks (issue 17): for each
// shape, up to 32 candidates from cublasLtMatmulAlgoGetHeuristic, each timed
// with CUDA events (median of 50 after 10 warm-up calls, bf16 in, f32
// accumulate, the row-major D = A W^T as the cuda backend runs it).
//   nvcc -O2 -std=c++17 -o lt_algos bench/lt_algos.cu -lcublasLt
//   ./lt_algos                  # the shapes of tp_block_llama_h2048 and its larger sizes
#include <algorithm>
#include <cstdio>
#include <vector>

#include "lt_bench.cuh"

struct Shape { const char* what; long m, n, k; };

int main() {
  std::vector<Shape> shapes = {
      {"h2048 qkv", 1024, 6144, 2048},  {"h2048 o", 1024, 2048, 2048},  {"h2048 gate/up", 1024, 8192, 2048},
      {"h2048 down", 1024, 2048, 8192}, {"h2048 gate|up", 1024, 16384, 2048},
      {"seq2048 qkv", 4096, 6144, 2048}, {"seq2048 gate/up", 4096, 8192, 2048}, {"seq2048 down", 4096, 2048, 8192},
      {"h4096 qkv", 1024, 12288, 4096}, {"h4096 o", 1024, 4096, 4096}, {"h4096 gate/up", 1024, 14336, 4096},
      {"h4096 down", 1024, 4096, 14336}, {"big square", 8192, 8192, 8192}};
  cublasLtHandle_t h;
  CK(cublasLtCreate(&h));
  size_t ws_bytes = 32u << 20;
  void* ws;
  CK(cudaMalloc(&ws, ws_bytes));
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::printf("| shape | m x n x k | candidates | top-1 us | best us (index) | best / top-1 | top-1 TFLOP/s | best TFLOP/s |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  for (const Shape& s : shapes) {
    void *a, *w, *d;
    CK(cudaMalloc(&a, s.m * s.k * 2));
    CK(cudaMalloc(&w, s.n * s.k * 2));
    CK(cudaMalloc(&d, s.m * s.n * 2));
    fill<<<1024, 256>>>(static_cast<__nv_bfloat16*>(a), s.m * s.k, 1);
    fill<<<1024, 256>>>(static_cast<__nv_bfloat16*>(w), s.n * s.k, 2);
    LtGemmPlan plan(h, s.m, s.n, s.k, ws_bytes, 32);
    const int found = plan.found;
    const float alpha = 1, beta = 0;
    std::vector<double> med(found, 1e30);
    for (int i = 0; i < found; ++i) {
      bool ok = true;
      for (int it = 0; it < 10 && ok; ++it)
        ok = cublasLtMatmul(h, plan.op, &alpha, w, plan.lw, a, plan.la, &beta, d, plan.ld, d, plan.ld, &plan.r[i].algo, ws, ws_bytes, 0) == 0;
      if (!ok) continue;
      std::vector<float> t;
      for (int it = 0; it < 50; ++it) {
        cudaEventRecord(e0);
        cublasLtMatmul(h, plan.op, &alpha, w, plan.lw, a, plan.la, &beta, d, plan.ld, d, plan.ld, &plan.r[i].algo, ws, ws_bytes, 0);
        cudaEventRecord(e1);
        cudaEventSynchronize(e1);
        float ms;
        cudaEventElapsedTime(&ms, e0, e1);
        t.push_back(ms);
      }
      std::sort(t.begin(), t.end());
      med[i] = t[t.size() / 2] * 1000.0;
    }
    int best = int(std::min_element(med.begin(), med.end()) - med.begin());
    const double flop = 2.0 * s.m * s.n * s.k;
    std::printf("| %s | %ld x %ld x %ld | %d | %.1f | %.1f (%d) | %.3f | %.0f | %.0f |\n", s.what, s.m, s.n, s.k, found,
                med[0], med[best], best, med[best] / med[0], flop / med[0] / 1e6, flop / med[best] / 1e6);
    cudaFree(a);
    cudaFree(w);
    cudaFree(d);
  }
  return 0;
}
