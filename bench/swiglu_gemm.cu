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
// kernels/fastpaths/cuda/gate_up_swiglu.cu, included below (the compiler runs
// the same file through NVRTC), so this bench times what the compiler
// launches; its layout, tiles and pipeline are described there. The weights
// are interleaved once, before timing, by interleave_weights (the layout the
// fast path's runtime makes).
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

// ---------------------------------------------------------------- checking
#define CUDA_CHECK(x)                                                                         \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::printf("CUDA call failed: %s -> %s (%s:%d)\n", #x, cudaGetErrorString(e_), __FILE__, \
                  __LINE__);                                                                  \
      std::exit(2);                                                                           \
    }                                                                                         \
  } while (0)
#define LT_CHECK(x)                                                                            \
  do {                                                                                         \
    cublasStatus_t s_ = (x);                                                                   \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                         \
      std::printf("cuBLASLt call failed: %s -> status %d (%s:%d)\n", #x, int(s_), __FILE__, \
                  __LINE__);                                                                   \
      std::exit(2);                                                                            \
    }                                                                                          \
  } while (0)
#define LAUNCH_CHECK() CUDA_CHECK(cudaGetLastError())

// ---------------------------------------------------------------- tile configuration
constexpr int BM = 128;          // rows of x per tile
constexpr int BN_OUT = 128;      // output columns per tile (the widest; SWIGLU_TILE_N)
constexpr int BN = 2 * BN_OUT;   // W2 rows per tile (gate + up)
static int g_tile_n = BN_OUT;    // SWIGLU_TILE_N: 128 or 112 output columns a tile
constexpr int BK = 64;           // k per stage: 64 bf16 = 128 bytes = the swizzle width
constexpr int STAGES = 4;
constexpr int A_STAGE_BYTES = BM * BK * 2;   // 16 KiB
constexpr int B_STAGE_BYTES = BN * BK * 2;   // 32 KiB
constexpr int STAGE_BYTES = A_STAGE_BYTES + B_STAGE_BYTES;
constexpr int OUT_WG_BYTES = 64 * BN_OUT * 2;  // 16 KiB: one consumer's 64 x 128 bf16 of h
constexpr int SMEM_BYTES = 1024 /* alignment slack */ + STAGES * STAGE_BYTES + 2 * OUT_WG_BYTES + 2 * STAGES * 8;
constexpr int THREADS = 384;
static_assert(SMEM_BYTES <= 227 * 1024, "dynamic shared memory over the 227 KiB limit");

// ---------------------------------------------------------------- fused kernel
// The one function of the NVRTC prelude (fusion/codegen/cuda_printer.cpp)
// that the fast path's file uses, then the file itself.
__device__ __forceinline__ unsigned fg_pack_bf16x2(float lo, float hi) {
  unsigned r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
#include "../kernels/fastpaths/cuda/gate_up_swiglu.cu"
// CUDA 13 aligns CUtensorMap to 128 bytes, the kernel's FgTensorMap to 64
// (what TMA needs of a __grid_constant__ map): a CUtensorMap is one
static_assert(sizeof(FgTensorMap) == sizeof(CUtensorMap) && alignof(CUtensorMap) % alignof(FgTensorMap) == 0,
              "the kernel's tensor-map parameter is a CUtensorMap");
static_assert(FG_BM == BM && FgTile<BN_OUT>::kBStage == B_STAGE_BYTES && FG_BK == BK && FG_STAGES == STAGES,
              "the bench's sizes are the kernel's");

template <int CM>
static void (*fused_kernel())(FgTensorMap, FgTensorMap, FgTensorMap, int, int, int) {
  if (g_tile_n == 112) return CM == 2 ? fastpath_gate_up_swiglu_n112_pair : fastpath_gate_up_swiglu_n112;
  return CM == 2 ? fastpath_gate_up_swiglu_pair : fastpath_gate_up_swiglu;
}
static const FgTensorMap& as_map(const CUtensorMap& m) { return *reinterpret_cast<const FgTensorMap*>(&m); }

// ---------------------------------------------------------------- other kernels
__device__ __forceinline__ uint32_t hash_u32(uint32_t x) {
  x ^= x >> 16; x *= 0x7feb352du;
  x ^= x >> 15; x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}
// p[i] = U(-1, 1) * scale, from a hash of (i, seed)
__global__ void fill_uniform(__nv_bfloat16* p, size_t n, uint32_t seed, float scale) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const uint32_t r = hash_u32(static_cast<uint32_t>(i) * 0x9E3779B1u ^ hash_u32(seed + static_cast<uint32_t>(i >> 32)));
    p[i] = __float2bfloat16(((r >> 8) * (1.0f / 8388608.0f) - 1.0f) * scale);
  }
}

// W2 [2N, K] from Wg = wgu[0], Wu = wgu[1] (see the layout at the top)
__global__ void interleave_weights(const __nv_bfloat16* __restrict__ wgu, __nv_bfloat16* __restrict__ w2,
                                   int N, int K, int bn_out) {
  const size_t vec_per_row = K / 8;
  const size_t total = static_cast<size_t>(2) * N * vec_per_row;
  for (size_t v = blockIdx.x * (size_t)blockDim.x + threadIdx.x; v < total; v += (size_t)gridDim.x * blockDim.x) {
    const size_t r = v / vec_per_row, kv = v % vec_per_row;
    const size_t bn = 2 * static_cast<size_t>(bn_out), b = r / bn, w = r % bn;
    const size_t src_row = (w < static_cast<size_t>(bn_out)) ? (b * bn_out + w)
                                                              : (static_cast<size_t>(N) + b * bn_out + (w - bn_out));
    reinterpret_cast<uint4*>(w2)[r * vec_per_row + kv] = reinterpret_cast<const uint4*>(wgu)[src_row * vec_per_row + kv];
  }
}

// baseline epilogue: h = silu(g) * u, g = gu[0], u = gu[1], 8 bf16 per 16-byte access
__global__ void silu_mul(const __nv_bfloat16* __restrict__ gu, __nv_bfloat16* __restrict__ h, size_t mn) {
  const size_t nvec = mn / 8;
  const uint4* g4 = reinterpret_cast<const uint4*>(gu);
  const uint4* u4 = reinterpret_cast<const uint4*>(gu + mn);
  uint4* h4 = reinterpret_cast<uint4*>(h);
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < nvec; i += (size_t)gridDim.x * blockDim.x) {
    const uint4 gv = g4[i], uv = u4[i];
    const __nv_bfloat162* g2 = reinterpret_cast<const __nv_bfloat162*>(&gv);
    const __nv_bfloat162* u2 = reinterpret_cast<const __nv_bfloat162*>(&uv);
    uint4 hv;
    __nv_bfloat162* h2 = reinterpret_cast<__nv_bfloat162*>(&hv);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float2 g = __bfloat1622float2(g2[j]);
      const float2 u = __bfloat1622float2(u2[j]);
      h2[j] = __floats2bfloat162_rn(fg_silu_approx(g.x) * u.x, fg_silu_approx(g.y) * u.y);
    }
    h4[i] = hv;
  }
}

struct CompareStats {
  double sum_d2, sum_b2;
  unsigned int max_abs_bits, max_rel_bits;  // non-negative floats (NaN sorts above +inf)
};

// a = fused, b = baseline; rel = |a-b| / max(|b|, 1e-2)
__global__ void compare(const __nv_bfloat16* __restrict__ a, const __nv_bfloat16* __restrict__ b, size_t n,
                        CompareStats* st) {
  double d2 = 0, b2 = 0;
  float mabs = 0, mrel = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const float x = __bfloat162float(a[i]), y = __bfloat162float(b[i]);
    const float df = fabsf(x - y);
    d2 += static_cast<double>(x - y) * (x - y);
    b2 += static_cast<double>(y) * y;
    const float rel = df / fmaxf(fabsf(y), 1e-2f);
    mabs = (df > mabs || df != df) ? df : mabs;
    mrel = (rel > mrel || rel != rel) ? rel : mrel;
  }
  for (int o = 16; o > 0; o >>= 1) {
    d2 += __shfl_xor_sync(0xffffffffu, d2, o);
    b2 += __shfl_xor_sync(0xffffffffu, b2, o);
    const float ma = __shfl_xor_sync(0xffffffffu, mabs, o), mr = __shfl_xor_sync(0xffffffffu, mrel, o);
    mabs = (ma > mabs || ma != ma) ? ma : mabs;
    mrel = (mr > mrel || mr != mr) ? mr : mrel;
  }
  if ((threadIdx.x & 31) == 0) {
    atomicAdd(&st->sum_d2, d2);
    atomicAdd(&st->sum_b2, b2);
    atomicMax(&st->max_abs_bits, __float_as_uint(fabsf(mabs)));
    atomicMax(&st->max_rel_bits, __float_as_uint(fabsf(mrel)));
  }
}

// f32 reference at sampled points from the bf16 inputs (original Wg/Wu layout)
__global__ void sample_reference(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ wgu,
                                 const __nv_bfloat16* __restrict__ h, const int2* __restrict__ pts, int N, int K,
                                 float* __restrict__ ref, float* __restrict__ got) {
  const int2 p = pts[blockIdx.x];
  const __nv_bfloat16* xr = x + static_cast<size_t>(p.x) * K;
  const __nv_bfloat16* gr = wgu + static_cast<size_t>(p.y) * K;
  const __nv_bfloat16* ur = wgu + (static_cast<size_t>(N) + p.y) * K;
  float g = 0, u = 0;
  for (int k = threadIdx.x; k < K; k += blockDim.x) {
    const float xv = __bfloat162float(xr[k]);
    g = fmaf(xv, __bfloat162float(gr[k]), g);
    u = fmaf(xv, __bfloat162float(ur[k]), u);
  }
  __shared__ float sg[32], su[32];
  for (int o = 16; o > 0; o >>= 1) {
    g += __shfl_xor_sync(0xffffffffu, g, o);
    u += __shfl_xor_sync(0xffffffffu, u, o);
  }
  if ((threadIdx.x & 31) == 0) { sg[threadIdx.x / 32] = g; su[threadIdx.x / 32] = u; }
  __syncthreads();
  if (threadIdx.x == 0) {
    float G = 0, U = 0;
    for (int w = 0; w < (int)(blockDim.x / 32); ++w) { G += sg[w]; U += su[w]; }
    ref[blockIdx.x] = (G / (1.0f + expf(-G))) * U;
    got[blockIdx.x] = __bfloat162float(h[static_cast<size_t>(p.x) * N + p.y]);
  }
}

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

int main() {
  // the sizes first: bad input fails before the GPU is touched
  std::vector<std::array<long, 3>> sizes = {{1024, 8192, 2048}, {4096, 8192, 2048}, {1024, 14336, 4096}};
  if (const char* t = std::getenv("SWIGLU_TILE_N")) {
    if (std::strcmp(t, "128") != 0 && std::strcmp(t, "112") != 0) {
      std::printf("SWIGLU_TILE_N must be 128 or 112, not '%s'\n", t);
      return 2;
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
        return 2;
      }
      if (std::sscanf(item.c_str(), "%ld,%ld,%ld%c", &s[0], &s[1], &s[2], &tail) != 3) {
        std::printf("SWIGLU_SIZES must be M,N,K;M,N,K...: '%s' is not\n", item.c_str());
        return 2;
      }
      if (s[0] <= 0 || s[1] <= 0 || s[2] <= 0 || s[0] % BM || s[1] % BN_OUT || s[1] % g_tile_n || s[2] % BK) {
        std::printf("SWIGLU_SIZES: %ld,%ld,%ld is not supported: need M %% %d, N %% %d and %% %d, K %% %d == 0\n",
                    s[0], s[1], s[2], BM, BN_OUT, g_tile_n, BK);
        return 2;
      }
      sizes.push_back(s);
      at = end + 1;
    }
  }
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

  if (const char* w = std::getenv("SWIGLU_WARMUP_MS")) {
    char* end = nullptr;
    const long v = std::strtol(w, &end, 10);
    if (!*w || *end || v < 0 || v > 60000) {
      std::printf("SWIGLU_WARMUP_MS must be milliseconds from 0 to 60000, not '%s'\n", w);
      return 2;
    }
    g_warmup_ms = static_cast<int>(v);
  }
  const char* cluster_env = std::getenv("SWIGLU_CLUSTER");
  const int cluster_pref = cluster_env ? std::atoi(cluster_env) : 2;
  std::vector<Row> rows;
  bool all_pass = true;
  for (const auto& s : sizes) {
    const long M = s[0], N = s[1], K = s[2];
    if (M % BM || N % BN_OUT || N % g_tile_n || K % BK || M <= 0 || N <= 0 || K <= 0) {
      std::printf("unsupported size M=%ld N=%ld K=%ld: need M %% %d, N %% %d and %% %d, K %% %d == 0\n", M, N, K, BM,
                  BN_OUT, g_tile_n, BK);
      return 2;
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
      return 2;
    }
    cands.resize(static_cast<size_t>(found));
    const float alpha = 1.f, beta = 0.f;
    const size_t mn = static_cast<size_t>(M) * N;
    const int ew_blocks = prop.multiProcessorCount * 8;
    auto gemm_with = [&](const cublasLtMatmulAlgo_t& algo, cudaStream_t st) {
      return cublasLtMatmul(lt, op, &alpha, wgu, lw, x, lx, &beta, gu, ld, gu, ld, &algo, ws, ws_bytes, st);
    };

    // ---- baseline GEMM algorithm: per candidate one call that must succeed,
    // 2 warm-ups, then the best of 3 rounds of 10 back-to-back calls
    std::vector<double> cand_us(cands.size(), -1.0);
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
    if (cand_us[0] < 0) {
      std::printf("cuBLASLt's top-1 algorithm did not run for M=%ld N=%ld K=%ld\n", M, N, K);
      return 2;
    }
    int choice = 0, timed = 0;
    for (size_t i = 0; i < cand_us.size(); ++i) {
      if (cand_us[i] < 0) continue;
      ++timed;
      if (cand_us[i] < cand_us[choice]) choice = static_cast<int>(i);
    }
    if (cand_us[choice] > 0.99 * cand_us[0]) choice = 0;  // less than 1% faster: the top-1 stays
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
    all_pass = all_pass && pass;
    const double flops = 2.0 * M * (2.0 * N) * K;
    Row r{M, N, K, g_gemm, g_silu, g_base, g_fused, choice != 0 ? g_gemm_top1 : g_gemm, l_gemm, l_silu, l_base, l_fused,
          choice, timed, flops / g_base * 1e-6, flops / g_fused * 1e-6, max_err, rel_rms, pass};
    rows.push_back(r);
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
