// The kernels of bench/swiglu_gemm.cu: its checking macros, the tile
// configuration, the gate_up_swiglu fast path's own kernel file, and the
// set-up, baseline and checking kernels. Included once, by that file.
#pragma once
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cublasLt.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

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
#include "../../kernels/fastpaths/cuda/gate_up_swiglu.cu"
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
