// Fused gate/up GEMM + SwiGLU of the transformer MLP on Hopper (sm_90a),
// against the current path: one strided-batched cuBLASLt GEMM for gate and up
// followed by a separate SiLU*mul kernel, timed as the project's compiled
// forward runs it.
//
//   x  [M, K] bf16 row-major, Wg/Wu [N, K] bf16 row-major (nn.Linear layout)
//   h  [M, N] bf16 = bf16( silu(g) * u ),  g = x Wg^T, u = x Wu^T (f32 acc),
//   silu(g) = g / (1 + exp(-g)) in f32 (MUFU ex2 and rcp, approximate).
//
// Build (CUDA 12.3+; checked with 13.0), then run on an H100 / sm_90 GPU:
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o swiglu_gemm bench/swiglu_gemm.cu -lcublasLt
//   ./swiglu_gemm                    # the three sizes, a few lines each, then a table
//   SWIGLU_CLUSTER=1 ./swiglu_gemm   # the fused kernel without CTA pairs
//   SWIGLU_TILE_N=112 ./swiglu_gemm  # its tiles of 112 output columns (N % 112 == 0;
//                                    # default 128), as the compiler takes them where
//                                    # they fill the rounds of tiles better
//   SWIGLU_SIZES="1024,7168,4096;1024,8448,4096" ./swiglu_gemm   # other sizes
//   SWIGLU_WARMUP_MS=2000 ./swiglu_gemm  # each graph replayed back to back this
//                                    # long before it is timed: the GPU at its
//                                    # power cap, as the forward runs (0 to 60000)
// Exit status: 0 all PASS, 1 a correctness check failed, 2 a CUDA/cuBLASLt call
// failed or a size is not supported (M % 128, N % 128 (and % 112 with
// SWIGLU_TILE_N=112), K % 64 must be 0).
//
// Baseline GEMM algorithm, chosen by timing as the project's GEMM tuning does:
// up to 16 candidates of cublasLtMatmulAlgoGetHeuristic; each one call that
// must succeed, 2 warm-ups, then the best of 3 rounds of 10 back-to-back
// calls; the top-1 stays unless another is at least 1% faster.
// Timing of each variant (GEMM alone, silu*mul alone, GEMM + silu*mul, fused),
// all on one non-default stream:
// - CUDA graph (the main figures): 20 back-to-back calls captured into one
//   graph (the cuBLASLt workspace is preallocated, so its calls capture), one
//   warm-up replay, then 30 replays each between CUDA events: the median / 20.
// - per launch: one call between a pair of CUDA events, the median of 200
//   after 10 warm-ups (host launch latency can fall between the events).
// Checks: the first outputs (written into NaN) against the baseline and a
// sampled f32 reference, then the outputs after the per-launch runs and after
// the graph replays (NaN-filled again before them) against the baseline.
//
// Fused kernel: the gate_up_swiglu fast path's own source,
// kernels/fastpaths/cuda/gate_up_swiglu.cu, included by
// bench/swiglu_gemm/kernels.cuh (the compiler runs the same file through
// NVRTC), so this bench times what the compiler launches; its layout, tiles
// and pipeline are described there. The weights are interleaved once, before
// timing, by interleave_weights (the layout the fast path's runtime makes).
// The kernels and the host side (tensor maps, timing, the baseline's
// algorithm) live in bench/swiglu_gemm/; this file reads the options and
// measures each size.
#include <cuda.h>           // CUtensorMap and the driver enums (types only; not linked)
#include <cudaTypedefs.h>   // PFN_cuTensorMapEncodeTiled
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cublasLt.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

// the kernels, then the host side: bench/swiglu_gemm/
#include "swiglu_gemm/kernels.cuh"
#include "swiglu_gemm/host.cuh"

struct Row {
  long m, n, k;
  // CUDA graph, per call (the main figures), us; g_gemm_top1 = g_gemm when the top-1 is chosen
  double g_gemm, g_silu, g_base, g_fused, g_gemm_top1;
  // per launch, us
  double l_gemm, l_silu, l_base, l_fused;
  int choice, timed;  // chosen candidate index, candidates that ran
  double tflops_base, tflops_fused, max_err, rel_rms;
  bool pass;
};

// The sizes (SWIGLU_SIZES, else the three of the TP blocks), the tile width
// (SWIGLU_TILE_N) and the warm-up (SWIGLU_WARMUP_MS), read before the GPU is
// touched: false, with a line that says why, on bad input.
static bool read_options(std::vector<std::array<long, 3>>* out) {
  std::vector<std::array<long, 3>>& sizes = *out;
  sizes = {{1024, 8192, 2048}, {4096, 8192, 2048}, {1024, 14336, 4096}};
  if (const char* t = std::getenv("SWIGLU_TILE_N")) {
    if (std::strcmp(t, "128") != 0 && std::strcmp(t, "112") != 0) {
      std::printf("SWIGLU_TILE_N must be 128 or 112, not '%s'\n", t);
      return false;
    }
    g_tile_n = std::atoi(t);
  }
  if (const char* env = std::getenv("SWIGLU_SIZES")) {
    // "M,N,K;M,N,K..." in place of the three sizes
    sizes.clear();
    const std::string text = env;
    size_t at = 0;
    while (at <= text.size()) {
      const size_t end = std::min(text.find(';', at), text.size());
      const std::string item = text.substr(at, end - at);
      std::array<long, 3> s{};
      char tail = 0;
      if (item.empty()) {
        std::printf("SWIGLU_SIZES must be M,N,K;M,N,K...: an empty entry in '%s'\n", text.c_str());
        return false;
      }
      if (std::sscanf(item.c_str(), "%ld,%ld,%ld%c", &s[0], &s[1], &s[2], &tail) != 3) {
        std::printf("SWIGLU_SIZES must be M,N,K;M,N,K...: '%s' is not\n", item.c_str());
        return false;
      }
      if (s[0] <= 0 || s[1] <= 0 || s[2] <= 0 || s[0] % BM || s[1] % BN_OUT || s[1] % g_tile_n || s[2] % BK) {
        std::printf("SWIGLU_SIZES: %ld,%ld,%ld is not supported: need M %% %d, N %% %d and %% %d, K %% %d == 0\n",
                    s[0], s[1], s[2], BM, BN_OUT, g_tile_n, BK);
        return false;
      }
      sizes.push_back(s);
      at = end + 1;
    }
  }
  if (const char* w = std::getenv("SWIGLU_WARMUP_MS")) {
    char* end = nullptr;
    const long v = std::strtol(w, &end, 10);
    if (!*w || *end || v < 0 || v > 60000) {
      std::printf("SWIGLU_WARMUP_MS must be milliseconds from 0 to 60000, not '%s'\n", w);
      return false;
    }
    g_warmup_ms = static_cast<int>(v);
  }
  return true;
}

// What every size's measurement shares.
struct Bench {
  cudaDeviceProp prop;
  PFN_cuTensorMapEncodeTiled_v12000 encode;
  cublasLtHandle_t lt;
  void* ws;
  size_t ws_bytes;
  cudaStream_t stream;  // every timed call runs on it
  cudaEvent_t e0, e1;
  CompareStats* dstats;
  int cluster_pref;  // SWIGLU_CLUSTER=1: the fused kernel without CTA pairs
};

// One size: the baseline's GEMM algorithm chosen by timing, both variants
// checked (against each other and a sampled f32 reference) and timed per
// launch and as CUDA-graph replays; false if the size is not supported.
static bool measure_size(const Bench& b, long M, long N, long K, Row* out) {
  const cudaDeviceProp& prop = b.prop;
  const PFN_cuTensorMapEncodeTiled_v12000 encode = b.encode;
  cublasLtHandle_t lt = b.lt;
  void* ws = b.ws;
  const size_t ws_bytes = b.ws_bytes;
  cudaStream_t stream = b.stream;
  cudaEvent_t e0 = b.e0, e1 = b.e1;
  CompareStats* dstats = b.dstats;
  const int cluster_pref = b.cluster_pref;
  if (M % BM || N % BN_OUT || N % g_tile_n || K % BK || M <= 0 || N <= 0 || K <= 0) {
    std::printf("unsupported size M=%ld N=%ld K=%ld: need M %% %d, N %% %d and %% %d, K %% %d == 0\n", M, N, K, BM,
                BN_OUT, g_tile_n, BK);
    return false;
  }
  __nv_bfloat16 *x, *wgu, *w2, *gu, *h_base, *h_fused;
  CUDA_CHECK(cudaMalloc(&x, M * K * 2));
  CUDA_CHECK(cudaMalloc(&wgu, 2 * N * K * 2));
  CUDA_CHECK(cudaMalloc(&w2, 2 * N * K * 2));
  CUDA_CHECK(cudaMalloc(&gu, 2 * M * N * 2));
  CUDA_CHECK(cudaMalloc(&h_base, M * N * 2));
  CUDA_CHECK(cudaMalloc(&h_fused, M * N * 2));
  fill_uniform<<<1024, 256>>>(x, M * K, 1u, 1.0f);
  LAUNCH_CHECK();
  fill_uniform<<<1024, 256>>>(wgu, 2 * N * K, 2u, 1.0f / std::sqrt(static_cast<float>(K)));
  LAUNCH_CHECK();
  interleave_weights<<<1024, 256>>>(wgu, w2, static_cast<int>(N), static_cast<int>(K), g_tile_n);
  LAUNCH_CHECK();
  // NaN everywhere (0xFFFF) so that a tile the kernels miss cannot pass
  CUDA_CHECK(cudaMemset(h_fused, 0xFF, M * N * 2));
  CUDA_CHECK(cudaMemset(h_base, 0xFF, M * N * 2));
  CUDA_CHECK(cudaDeviceSynchronize());  // the timing stream does not wait for the default stream

  // ---- baseline: D[b] = x W[b]^T for b = gate, up, as column-major D^T = W x^T
  cublasLtMatmulDesc_t op;
  LT_CHECK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t tw = CUBLAS_OP_T, tx = CUBLAS_OP_N;
  LT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &tw, sizeof(tw)));
  LT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tx, sizeof(tx)));
  cublasLtMatrixLayout_t lw, lx, ld;
  LT_CHECK(cublasLtMatrixLayoutCreate(&lw, CUDA_R_16BF, K, N, K));
  LT_CHECK(cublasLtMatrixLayoutCreate(&lx, CUDA_R_16BF, K, M, K));
  LT_CHECK(cublasLtMatrixLayoutCreate(&ld, CUDA_R_16BF, N, M, N));
  const int32_t batch = 2;
  const int64_t sw = N * K, sx = 0, sd = M * N;
  for (auto l : {lw, lx, ld})
    LT_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof(batch)));
  LT_CHECK(cublasLtMatrixLayoutSetAttribute(lw, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sw, sizeof(sw)));
  LT_CHECK(cublasLtMatrixLayoutSetAttribute(lx, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sx, sizeof(sx)));
  LT_CHECK(cublasLtMatrixLayoutSetAttribute(ld, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sd, sizeof(sd)));
  cublasLtMatmulPreference_t pref;
  LT_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  LT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes,
                                                sizeof(ws_bytes)));
  std::vector<cublasLtMatmulHeuristicResult_t> cands(kLtCandidates);
  int found = 0;
  LT_CHECK(cublasLtMatmulAlgoGetHeuristic(lt, op, lw, lx, ld, ld, pref, kLtCandidates, cands.data(), &found));
  if (found < 1) {
    std::printf("cublasLtMatmulAlgoGetHeuristic found no algorithm for M=%ld N=%ld K=%ld\n", M, N, K);
    return false;
  }
  cands.resize(static_cast<size_t>(found));
  const float alpha = 1.f, beta = 0.f;
  const size_t mn = static_cast<size_t>(M) * N;
  const int ew_blocks = prop.multiProcessorCount * 8;
  auto gemm_with = [&](const cublasLtMatmulAlgo_t& algo, cudaStream_t st) {
    return cublasLtMatmul(lt, op, &alpha, wgu, lw, x, lx, &beta, gu, ld, gu, ld, &algo, ws, ws_bytes, st);
  };

  std::vector<double> cand_us;
  int choice = 0, timed = 0;
  if (!choose_algo(cands, ws_bytes, gemm_with, stream, e0, e1, &cand_us, &choice, &timed)) {
    std::printf("cuBLASLt's top-1 algorithm did not run for M=%ld N=%ld K=%ld\n", M, N, K);
    return false;
  }
  std::printf("M=%ld N=%ld K=%ld: cuBLASLt candidates, us per call (best of 3 x 10; - = did not run):", M, N, K);
  for (size_t i = 0; i < cand_us.size(); ++i) {
    if (cand_us[i] < 0)
      std::printf(" #%zu -", i);
    else
      std::printf(" #%zu %.1f", i, cand_us[i]);
  }
  std::printf("\n  GEMM algorithm: candidate #%d of %d timed (%d offered): %.1f us vs top-1 %.1f us (%.3fx) [%s]", choice,
              timed, found, cand_us[choice], cand_us[0], cand_us[choice] / cand_us[0],
              algo_text(cands[choice].algo).c_str());
  if (choice != 0) std::printf("; top-1 [%s]", algo_text(cands[0].algo).c_str());
  std::printf("\n");

  const cublasLtMatmulAlgo_t algo = cands[choice].algo, algo_top1 = cands[0].algo;
  auto run_gemm = [&](cudaStream_t st) { LT_CHECK(gemm_with(algo, st)); };
  auto run_gemm_top1 = [&](cudaStream_t st) { LT_CHECK(gemm_with(algo_top1, st)); };
  auto run_silu = [&](cudaStream_t st) {
    silu_mul<<<ew_blocks, 256, 0, st>>>(gu, h_base, mn);
    LAUNCH_CHECK();
  };
  auto run_base = [&](cudaStream_t st) {
    run_gemm(st);
    run_silu(st);
  };

  // ---- fused: CTA pairs sharing the W2 tile when M allows (SWIGLU_CLUSTER=1 forces single CTAs)
  const int cm = (M % (2 * BM) == 0 && cluster_pref != 1) ? 2 : 1;
  const CUtensorMap tm_x = make_map(encode, x, M, K, BM);
  const CUtensorMap tm_w = make_map(encode, w2, 2 * N, K, 2 * g_tile_n / cm);
  // out: boxes of 64 x 64 swizzled (128 columns) or one of 64 x 112 without
  const CUtensorMap tm_h = g_tile_n == 128 ? make_map(encode, h_fused, M, N, 64)
                                           : make_map(encode, h_fused, M, N, 64, g_tile_n, false);
  const int tiles = static_cast<int>((M / BM) * (N / g_tile_n));
  const int grid = cm == 2 ? fused_grid<2>(tiles, prop.multiProcessorCount) : fused_grid<1>(tiles, prop.multiProcessorCount);
  auto run_fused = [&](cudaStream_t st) {
    if (cm == 2)
      launch_fused<2>(grid, tm_x, tm_w, tm_h, static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), st);
    else
      launch_fused<1>(grid, tm_x, tm_w, tm_h, static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), st);
  };

  // ---- correctness (first runs, into NaN-filled outputs; the baseline with the chosen algorithm)
  run_base(stream);
  run_fused(stream);
  CUDA_CHECK(cudaDeviceSynchronize());
  auto compare_outputs = [&](float& max_abs, float& max_rel) {  // returns the relative RMS difference
    CUDA_CHECK(cudaDeviceSynchronize());  // everything on the timing stream is done
    CUDA_CHECK(cudaMemset(dstats, 0, sizeof(CompareStats)));
    compare<<<prop.multiProcessorCount * 4, 256>>>(h_fused, h_base, mn, dstats);
    LAUNCH_CHECK();
    CompareStats st;
    CUDA_CHECK(cudaMemcpy(&st, dstats, sizeof(st), cudaMemcpyDeviceToHost));
    std::memcpy(&max_abs, &st.max_abs_bits, 4);
    std::memcpy(&max_rel, &st.max_rel_bits, 4);
    return std::sqrt(st.sum_d2 / std::max(st.sum_b2, 1e-30));
  };
  float max_abs, max_rel;
  const double rel_rms = compare_outputs(max_abs, max_rel);

  const int NS = 256;
  std::vector<int2> pts(NS);
  uint32_t lcg = 12345u + static_cast<uint32_t>(M * 7 + N * 3 + K);
  auto next = [&] { lcg = lcg * 1664525u + 1013904223u; return lcg >> 8; };
  for (int i = 0; i < NS; ++i) pts[i] = make_int2(static_cast<int>(next() % M), static_cast<int>(next() % N));
  pts[0] = make_int2(0, 0);
  pts[1] = make_int2(static_cast<int>(M - 1), static_cast<int>(N - 1));
  pts[2] = make_int2(0, static_cast<int>(N - 1));
  pts[3] = make_int2(static_cast<int>(M - 1), 0);
  int2* dpts;
  float *dref, *dgot;
  CUDA_CHECK(cudaMalloc(&dpts, NS * sizeof(int2)));
  CUDA_CHECK(cudaMalloc(&dref, NS * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&dgot, NS * sizeof(float)));
  CUDA_CHECK(cudaMemcpy(dpts, pts.data(), NS * sizeof(int2), cudaMemcpyHostToDevice));
  sample_reference<<<NS, 256>>>(x, wgu, h_fused, dpts, static_cast<int>(N), static_cast<int>(K), dref, dgot);
  LAUNCH_CHECK();
  std::vector<float> ref(NS), got(NS);
  CUDA_CHECK(cudaMemcpy(ref.data(), dref, NS * sizeof(float), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(got.data(), dgot, NS * sizeof(float), cudaMemcpyDeviceToHost));
  double max_err = 0, max_err_scaled = 0;
  bool sample_ok = true;
  for (int i = 0; i < NS; ++i) {
    const double e = std::fabs(static_cast<double>(got[i]) - ref[i]);
    const double scaled = e / (1.0 + std::fabs(ref[i]));
    if (!(e <= 2e-2 * (1.0 + std::fabs(ref[i])))) {
      if (sample_ok)
        std::printf("  sample (%d, %d): fused %g, f32 reference %g\n", pts[i].x, pts[i].y, got[i], ref[i]);
      sample_ok = false;
    }
    if (!(e <= max_err)) max_err = e;  // NaN propagates
    if (!(scaled <= max_err_scaled)) max_err_scaled = scaled;
  }

  // ---- timing per launch
  const double l_gemm = median_us(run_gemm, stream, e0, e1);
  const double l_silu = median_us(run_silu, stream, e0, e1);
  const double l_base = median_us(run_base, stream, e0, e1);
  const double l_fused = median_us(run_fused, stream, e0, e1);
  // the outputs of the last of these launches must match as well
  float max_abs2, max_rel2;
  const double rel_rms2 = compare_outputs(max_abs2, max_rel2);
  if (!(rel_rms2 <= 1e-2))
    std::printf("  after the per-launch timed runs: rel RMS %.3g, max abs %.3g\n", rel_rms2, max_abs2);

  // ---- timing as CUDA-graph replays, into NaN-filled outputs again, so that
  // the re-check below sees what the replays wrote
  CUDA_CHECK(cudaMemsetAsync(h_fused, 0xFF, M * N * 2, stream));
  CUDA_CHECK(cudaMemsetAsync(h_base, 0xFF, M * N * 2, stream));
  const double g_gemm_top1 = choice != 0 ? graph_us("the top-1 GEMM", run_gemm_top1, stream, e0, e1) : -1.0;
  const double g_gemm = graph_us("the GEMM", run_gemm, stream, e0, e1);  // last: gu from the chosen algorithm
  const double g_silu = graph_us("silu*mul", run_silu, stream, e0, e1);
  const double g_base = graph_us("GEMM + silu*mul", run_base, stream, e0, e1);
  const double g_fused = graph_us("the fused kernel", run_fused, stream, e0, e1);
  float max_abs3, max_rel3;
  const double rel_rms3 = compare_outputs(max_abs3, max_rel3);
  if (!(rel_rms3 <= 1e-2))
    std::printf("  after the CUDA-graph replays: rel RMS %.3g, max abs %.3g\n", rel_rms3, max_abs3);

  const bool pass = sample_ok && (rel_rms <= 1e-2) && (rel_rms2 <= 1e-2) && (rel_rms3 <= 1e-2);
  const double flops = 2.0 * M * (2.0 * N) * K;
  Row r{M, N, K, g_gemm, g_silu, g_base, g_fused, choice != 0 ? g_gemm_top1 : g_gemm, l_gemm, l_silu, l_base, l_fused,
        choice, timed, flops / g_base * 1e-6, flops / g_fused * 1e-6, max_err, rel_rms, pass};
  *out = r;
  std::printf("  CUDA graph, per call: GEMM %.1f (top-1 %.1f) + silu*mul %.1f; baseline GEMM + silu*mul %.1f us "
              "(%.0f TFLOP/s); fused %.1f us (%.0f TFLOP/s; cluster %d, grid %d); fused/baseline %.3f\n",
              g_gemm, r.g_gemm_top1, g_silu, g_base, r.tflops_base, g_fused, r.tflops_fused, cm, grid, g_fused / g_base);
  std::printf("  per launch:           GEMM %.1f + silu*mul %.1f; baseline GEMM + silu*mul %.1f us; fused %.1f us; "
              "fused/baseline %.3f\n",
              l_gemm, l_silu, l_base, l_fused, l_fused / l_base);
  std::printf(
      "  checks: vs baseline: max abs %.3g, max rel %.3g (|d| / max(|b|, 0.01)), rel RMS %.3g | sampled f32 ref (%d pts): "
      "max abs err %.3g, max err/(1+|ref|) %.3g | rel RMS after per-launch runs %.3g, after graph replays %.3g | %s\n",
      max_abs, max_rel, rel_rms, NS, max_err, max_err_scaled, rel_rms2, rel_rms3, pass ? "PASS" : "FAIL");

  CUDA_CHECK(cudaFree(dpts));
  CUDA_CHECK(cudaFree(dref));
  CUDA_CHECK(cudaFree(dgot));
  LT_CHECK(cublasLtMatmulPreferenceDestroy(pref));
  LT_CHECK(cublasLtMatrixLayoutDestroy(lw));
  LT_CHECK(cublasLtMatrixLayoutDestroy(lx));
  LT_CHECK(cublasLtMatrixLayoutDestroy(ld));
  LT_CHECK(cublasLtMatmulDescDestroy(op));
  for (void* p : {(void*)x, (void*)wgu, (void*)w2, (void*)gu, (void*)h_base, (void*)h_fused}) CUDA_CHECK(cudaFree(p));
  return true;
}

int main() {
  std::vector<std::array<long, 3>> sizes;
  if (!read_options(&sizes)) return 2;
  int dev = 0;
  CUDA_CHECK(cudaSetDevice(dev));
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  int drv = 0, rt = 0;
  CUDA_CHECK(cudaDriverGetVersion(&drv));
  CUDA_CHECK(cudaRuntimeGetVersion(&rt));
  char drv_name[64] = "unknown";  // the kernel module's version, where Linux shows it
  if (FILE* f = std::fopen("/proc/driver/nvidia/version", "r")) {
    char line[512];
    if (std::fgets(line, sizeof line, f)) {
      // "NVRM version: NVIDIA UNIX ... Kernel Module [for x86_64]  580.xx.yy  <date>": the first d.d token
      for (char* t = std::strtok(line, " \t\n"); t; t = std::strtok(nullptr, " \t\n"))
        if (t[0] >= '0' && t[0] <= '9' && std::strchr(t, '.')) {
          std::snprintf(drv_name, sizeof drv_name, "%s", t);
          break;
        }
    }
    std::fclose(f);
  }
  std::printf("GPU: %s (sm_%d%d, %d SMs), driver %s (CUDA %d.%d), runtime %d.%d, cuBLASLt %zu\n",
              prop.name, prop.major, prop.minor, prop.multiProcessorCount, drv_name, drv / 1000,
              (drv % 1000) / 10, rt / 1000, (rt % 1000) / 10, cublasLtGetVersion());
  std::printf(
      "Timing, per variant (GEMM, silu*mul, GEMM + silu*mul, fused), on a non-default stream: "
      "CUDA graph = %d back-to-back calls captured into one graph, 1 warm-up replay, median of %d timed replays / %d "
      "(no launch gaps, as in the project's compiled forward; the main figures); per launch = one call between a pair "
      "of CUDA events, median of 200 after 10 warm-ups (host launch latency can fall between the events). "
      "Baseline GEMM algorithm: the fastest of up to %d cuBLASLt heuristic candidates (2 warm-ups, best of 3 rounds "
      "of 10 back-to-back calls; the top-1 stays unless another is >= 1%% faster).\n",
      kGraphCalls, kGraphReplays, kGraphCalls, kLtCandidates);
  if (prop.major != 9 || prop.minor != 0) {
    std::printf("this benchmark needs an sm_90 GPU (Hopper)\n");
    return 2;
  }
  if (prop.sharedMemPerBlockOptin < static_cast<size_t>(SMEM_BYTES)) {
    std::printf("needs %d bytes of shared memory per block, device allows %zu\n", SMEM_BYTES,
                prop.sharedMemPerBlockOptin);
    return 2;
  }
  CUDA_CHECK(cudaFuncSetAttribute(fused_kernel<1>(), cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES));
  CUDA_CHECK(cudaFuncSetAttribute(fused_kernel<2>(), cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES));
  const PFN_cuTensorMapEncodeTiled_v12000 encode = get_encode_tiled();

  cublasLtHandle_t lt;
  LT_CHECK(cublasLtCreate(&lt));
  const size_t ws_bytes = 32u << 20;  // preallocated: the cuBLASLt calls can be captured into graphs
  void* ws = nullptr;
  CUDA_CHECK(cudaMalloc(&ws, ws_bytes));
  // every timed call runs on this stream; the set-up and checking kernels run
  // on the legacy default stream, with device-wide synchronisation in between
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  CUDA_CHECK(cudaEventCreate(&e0));
  CUDA_CHECK(cudaEventCreate(&e1));
  CompareStats* dstats = nullptr;
  CUDA_CHECK(cudaMalloc(&dstats, sizeof(CompareStats)));

  const char* cluster_env = std::getenv("SWIGLU_CLUSTER");
  const Bench b{prop, encode, lt, ws, ws_bytes, stream, e0, e1, dstats, cluster_env ? std::atoi(cluster_env) : 2};
  std::vector<Row> rows;
  bool all_pass = true;
  for (const auto& s : sizes) {
    Row r;
    if (!measure_size(b, s[0], s[1], s[2], &r)) return 2;
    rows.push_back(r);
    all_pass = all_pass && r.pass;
  }

  std::printf("\nCUDA graph: per call, median of %d replays of %d back-to-back calls; per launch: median of 200 single "
              "launches between CUDA events. Baseline GEMM: the chosen cuBLASLt candidate (index among the heuristic's, "
              "0 = top-1). Fused kernel: tiles of %d output columns (SWIGLU_TILE_N).\n",
              kGraphReplays, kGraphCalls, g_tile_n);
  std::printf("\n| M x N x K | baseline GEMM (tuned) µs | SiLU-mul µs | baseline total µs | fused µs | fused / baseline total "
              "| GEMM top-1 µs | GEMM candidate (chosen / timed) | per-launch GEMM µs | per-launch SiLU-mul µs "
              "| per-launch total µs | per-launch fused µs | per-launch fused / total | TFLOP/s base / fused "
              "| max err (sampled) | rel RMS vs base | result |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const Row& r : rows)
    std::printf("| %ld x %ld x %ld | %.1f | %.1f | %.1f | %.1f | %.3f | %.1f | %d / %d | %.1f | %.1f | %.1f | %.1f | %.3f "
                "| %.0f / %.0f | %.3g | %.3g | %s |\n",
                r.m, r.n, r.k, r.g_gemm, r.g_silu, r.g_base, r.g_fused, r.g_fused / r.g_base, r.g_gemm_top1, r.choice,
                r.timed, r.l_gemm, r.l_silu, r.l_base, r.l_fused, r.l_fused / r.l_base, r.tflops_base, r.tflops_fused,
                r.max_err, r.rel_rms, r.pass ? "PASS" : "FAIL");
  CUDA_CHECK(cudaFree(dstats));
  CUDA_CHECK(cudaFree(ws));
  CUDA_CHECK(cudaEventDestroy(e0));
  CUDA_CHECK(cudaEventDestroy(e1));
  CUDA_CHECK(cudaStreamDestroy(stream));
  LT_CHECK(cublasLtDestroy(lt));
  if (!all_pass) {
    std::printf("FAIL\n");
    return 1;
  }
  std::printf("PASS\n");
  return 0;
}
