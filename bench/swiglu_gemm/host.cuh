// The host side of bench/swiglu_gemm.cu: tensor maps and launches of the
// fused kernel, the two timings (per launch, CUDA-graph replays) and the
// cuBLASLt baseline's algorithm, chosen by timing. Included once, by that file.
#pragma once
#include <cudaTypedefs.h>

#include <algorithm>
#include <string>
#include <vector>

#include "kernels.cuh"

// ---------------------------------------------------------------- host
static PFN_cuTensorMapEncodeTiled_v12000 get_encode_tiled() {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
  CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q));
  if (q != cudaDriverEntryPointSuccess || fn == nullptr) {
    std::printf("cudaGetDriverEntryPointByVersion(cuTensorMapEncodeTiled) failed: query result %d\n", int(q));
    std::exit(2);
  }
  return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
}

// 2-D bf16 row-major [rows, cols] map, box [box_rows, box_cols], 128-byte
// swizzle (or none)
static CUtensorMap make_map(PFN_cuTensorMapEncodeTiled_v12000 encode, const void* ptr, uint64_t rows, uint64_t cols,
                            uint32_t box_rows, uint32_t box_cols = BK, bool swizzle = true) {
  CUtensorMap m;
  const cuuint64_t dims[2] = {cols, rows};
  const cuuint64_t strides[1] = {cols * 2};
  const cuuint32_t box[2] = {box_cols, box_rows};
  const cuuint32_t estr[2] = {1, 1};
  const CUresult r = encode(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(ptr), dims, strides, box, estr,
                            CU_TENSOR_MAP_INTERLEAVE_NONE,
                            swizzle ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    std::printf("cuTensorMapEncodeTiled failed: CUresult %d (rows %llu cols %llu box_rows %u)\n", int(r),
                (unsigned long long)rows, (unsigned long long)cols, box_rows);
    std::exit(2);
  }
  return m;
}

template <int CM>
static cudaLaunchConfig_t fused_config(int grid, cudaLaunchAttribute* attr, cudaStream_t stream = 0) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(grid, 1, 1);
  cfg.blockDim = dim3(THREADS, 1, 1);
  cfg.dynamicSmemBytes = SMEM_BYTES;
  cfg.stream = stream;
  attr->id = cudaLaunchAttributeClusterDimension;
  attr->val.clusterDim.x = CM;
  attr->val.clusterDim.y = 1;
  attr->val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  return cfg;
}

// persistent grid: one CTA per SM, or as many clusters as can be resident at once
template <int CM>
static int fused_grid(int tiles, int sms) {
  if (CM == 1) return std::min(tiles, sms);
  cudaLaunchAttribute attr;
  cudaLaunchConfig_t cfg = fused_config<CM>(sms / CM * CM, &attr);
  int clusters = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, fused_kernel<CM>(), &cfg));
  if (clusters < 1) {
    std::printf("cudaOccupancyMaxActiveClusters: no cluster of %d fits\n", CM);
    std::exit(2);
  }
  return std::min(tiles / CM, clusters) * CM;
}

template <int CM>
static void launch_fused(int grid, const CUtensorMap& tm_x, const CUtensorMap& tm_w, const CUtensorMap& tm_h, int M, int N,
                         int K, cudaStream_t stream) {
  cudaLaunchAttribute attr;
  const cudaLaunchConfig_t cfg = fused_config<CM>(grid, &attr, stream);
  CUDA_CHECK(cudaLaunchKernelEx(&cfg, fused_kernel<CM>(), as_map(tm_x), as_map(tm_w), as_map(tm_h), M, N, K));
}

// ---------------------------------------------------------------- timing
constexpr int kLtCandidates = 16;  // cuBLASLt heuristic candidates timed for the baseline GEMM
constexpr int kGraphCalls = 20;    // back-to-back calls captured into one CUDA graph
constexpr int kGraphReplays = 30;  // timed replays of that graph
static int g_warmup_ms = 0;        // SWIGLU_WARMUP_MS: back-to-back replays before the timed ones

// Per launch: one call between a pair of CUDA events on stream s, median of
// 200 after 10 warm-ups.
template <class F>
static double median_us(F&& run, cudaStream_t s, cudaEvent_t e0, cudaEvent_t e1) {
  for (int i = 0; i < 10; ++i) run(s);
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> t(200);
  for (int i = 0; i < 200; ++i) {
    CUDA_CHECK(cudaEventRecord(e0, s));
    run(s);
    CUDA_CHECK(cudaEventRecord(e1, s));
    CUDA_CHECK(cudaEventSynchronize(e1));
    CUDA_CHECK(cudaEventElapsedTime(&t[i], e0, e1));
  }
  std::sort(t.begin(), t.end());
  return 0.5 * (t[99] + t[100]) * 1000.0;
}

// CUDA graph: kGraphCalls back-to-back calls captured into one graph (stream
// capture on s, a non-default stream), one replay to warm up, then
// kGraphReplays replays, each between a pair of CUDA events; the median
// replay time per call.
template <class F>
static double graph_us(const char* what, F&& run, cudaStream_t s, cudaEvent_t e0, cudaEvent_t e1) {
  CUDA_CHECK(cudaStreamSynchronize(s));
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < kGraphCalls; ++i) run(s);
  const cudaError_t e = cudaStreamEndCapture(s, &graph);
  if (e != cudaSuccess) {
    std::printf("CUDA graph capture of %s failed: %s\n", what, cudaGetErrorString(e));
    std::exit(2);
  }
  CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  CUDA_CHECK(cudaGraphUpload(exec, s));
  CUDA_CHECK(cudaGraphLaunch(exec, s));  // warm-up
  CUDA_CHECK(cudaStreamSynchronize(s));
  if (g_warmup_ms > 0) {
    // as many replays as fill the warm-up at the pace of one, queued back to
    // back: the power state the timed replays then meet is the sustained one
    float one_ms = 0;
    CUDA_CHECK(cudaEventRecord(e0, s));
    CUDA_CHECK(cudaGraphLaunch(exec, s));
    CUDA_CHECK(cudaEventRecord(e1, s));
    CUDA_CHECK(cudaEventSynchronize(e1));
    CUDA_CHECK(cudaEventElapsedTime(&one_ms, e0, e1));
    const int n = static_cast<int>(std::ceil(g_warmup_ms / std::max(one_ms, 1e-3f)));
    for (int i = 0; i < n; ++i) CUDA_CHECK(cudaGraphLaunch(exec, s));
    // timed right behind them, without draining the stream in between
  }
  std::vector<float> t(kGraphReplays);
  for (int i = 0; i < kGraphReplays; ++i) {
    CUDA_CHECK(cudaEventRecord(e0, s));
    CUDA_CHECK(cudaGraphLaunch(exec, s));
    CUDA_CHECK(cudaEventRecord(e1, s));
    CUDA_CHECK(cudaEventSynchronize(e1));
    CUDA_CHECK(cudaEventElapsedTime(&t[i], e0, e1));
  }
  CUDA_CHECK(cudaGraphExecDestroy(exec));
  CUDA_CHECK(cudaGraphDestroy(graph));
  std::sort(t.begin(), t.end());
  const int h = kGraphReplays / 2;
  const double med_ms = (kGraphReplays % 2) ? t[h] : 0.5 * (t[h - 1] + t[h]);
  return med_ms * 1000.0 / kGraphCalls;
}

// "algo 66 tile 20 stages 28 splitk 1 ...": a cuBLASLt algorithm's configuration
static std::string algo_text(const cublasLtMatmulAlgo_t& a) {
  struct Attr {
    cublasLtMatmulAlgoConfigAttributes_t id;
    const char* name;
  };
  const Attr attrs[] = {{CUBLASLT_ALGO_CONFIG_ID, "algo"},
                        {CUBLASLT_ALGO_CONFIG_TILE_ID, "tile"},
                        {CUBLASLT_ALGO_CONFIG_STAGES_ID, "stages"},
                        {CUBLASLT_ALGO_CONFIG_SPLITK_NUM, "splitk"},
                        {CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, "reduction"},
                        {CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, "swizzle"},
                        {CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, "custom"},
                        {CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, "cluster"}};
  std::string s;
  for (const Attr& at : attrs) {
    // each attribute is an integer of its own size (2, 4 or 8 bytes): ask for
    // the size, then read it into the low bytes (little-endian)
    size_t size = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(&a, at.id, nullptr, 0, &size) != CUBLAS_STATUS_SUCCESS || size == 0 ||
        size > 8)
      continue;
    uint64_t v = 0;
    size_t written = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(&a, at.id, &v, size, &written) != CUBLAS_STATUS_SUCCESS) continue;
    char buf[48];
    std::snprintf(buf, sizeof buf, "%s%s %llu", s.empty() ? "" : " ", at.name, static_cast<unsigned long long>(v));
    s += buf;
  }
  return s;
}

// The baseline's GEMM algorithm, as the project's GEMM tuning chooses: each
// candidate one call that must succeed, 2 warm-ups, then the best of 3 rounds
// of 10 back-to-back calls; the top-1 stays unless another is at least 1%
// faster. *us: each candidate's time (-1: did not run); false if the top-1
// did not run.
template <class G>
static bool choose_algo(const std::vector<cublasLtMatmulHeuristicResult_t>& cands, size_t ws_bytes, G&& gemm_with,
                        cudaStream_t stream, cudaEvent_t e0, cudaEvent_t e1, std::vector<double>* us,
                        int* choice_out, int* timed_out) {
  std::vector<double>& cand_us = *us;
  cand_us.assign(cands.size(), -1.0);
  for (size_t i = 0; i < cands.size(); ++i) {
    if (cands[i].state != CUBLAS_STATUS_SUCCESS || cands[i].workspaceSize > ws_bytes) continue;
    if (gemm_with(cands[i].algo, stream) != CUBLAS_STATUS_SUCCESS || cudaStreamSynchronize(stream) != cudaSuccess) {
      (void)cudaGetLastError();  // this candidate does not run here; a sticky error fails the next CUDA call
      continue;
    }
    LT_CHECK(gemm_with(cands[i].algo, stream));
    LT_CHECK(gemm_with(cands[i].algo, stream));
    double best = 1e30;
    for (int round = 0; round < 3; ++round) {
      CUDA_CHECK(cudaEventRecord(e0, stream));
      for (int r = 0; r < 10; ++r) LT_CHECK(gemm_with(cands[i].algo, stream));
      CUDA_CHECK(cudaEventRecord(e1, stream));
      CUDA_CHECK(cudaEventSynchronize(e1));
      float ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
      best = std::min(best, 1000.0 * ms / 10);
    }
    cand_us[i] = best;
  }
  if (cand_us[0] < 0) return false;
  int& choice = *choice_out;
  int& timed = *timed_out;
  choice = 0;
  timed = 0;
  for (size_t i = 0; i < cand_us.size(); ++i) {
    if (cand_us[i] < 0) continue;
    ++timed;
    if (cand_us[i] < cand_us[choice]) choice = static_cast<int>(i);
  }
  if (cand_us[choice] > 0.99 * cand_us[0]) choice = 0;  // less than 1% faster: the top-1 stays
  return true;
}
