// gate_up_swiglu, CUDA (Hopper, sm_90a only): the MLP's gate and up GEMMs
// with the SwiGLU product in their epilogue, one kernel in place of the
// gate/up GEMM(s) and the SiLU*mul pass:
//   out [M, N] bf16 = bf16( silu(g) * u ),  g = x Wg^T, u = x Wu^T (f32 sums),
//   silu(g) = g / (1 + exp(-g)) in f32 (MUFU ex2 and rcp, approximate).
// The generic path rounds g and u to bf16, then silu(g) to bf16, then the
// product: this kernel rounds once. Its own sum order too: `ab` compares
// distances to fp64.
//
// Inputs, through three TMA tensor maps the runtime encodes
// (kernels/fastpaths/cuda_runtime.cpp): x [M, K] bf16 row-major; W2 [2N, K]
// bf16 row-major, the gate and up weights interleaved in blocks of 128 rows
// (block b: rows 256b .. 256b + 127 are Wg rows 128b .., rows 256b + 128 ..
// 256b + 255 are Wu rows 128b ..; made once per weight version by the
// runtime), so one 256-row W2 tile and one wgmma m64n256k16 hold 128 gate
// columns and the same 128 up columns, and both land in the same thread's
// registers (d[i] and d[64 + i]); out [M, N] bf16. N a multiple of 128, K a
// multiple of 8 (16-byte rows for TMA); rows of x past M and columns past K
// are read as zeros by TMA, and rows of out past M are not written.
//
// Block tile 128 (M) x 256 (W2 rows = 128 output columns), BK = 64, a ring of
// 4 stages of 48 KiB (x box 128 x 64 = 16 KiB, W2 box 256 x 64 = 32 KiB),
// 128-byte swizzle, 1024-byte aligned stage buffers, plus 2 x 16 KiB to stage
// out for the TMA stores, 128 bytes of barriers and 1 KiB of row scales (the
// rmsnorm variant's): 231552 bytes of dynamic shared memory with the
// alignment slack, under the 227 KiB (232448) a block may have.
// Tiles of 112 output columns (the _n112 entry points; BNO below): the same
// kernel with W2 interleaved in blocks of 112 rows (block b: rows 224b ..
// 224b + 111 are Wg rows 112b .., then Wu's), one wgmma m64n224k16 (112 f32 a
// thread; up column i of d[56 + i]), W2 boxes of 224 x 64 (28 KiB a stage),
// and out staged without swizzle, 64 rows of 224 bytes a consumer, stored by
// one TMA box of 64 x 112. The runtime takes them where N is a multiple of
// 112 and they fill the GPU's rounds of tiles better than 128 columns do
// (kernels/fastpaths/catalog.cpp, swiglu_tile_n): a persistent kernel's time
// follows its rounds of tiles, and a last round that holds few tiles costs
// a whole round.
// 384 threads: warpgroup 0 is the producer (one thread issues the TMA loads;
// setmaxnreg 40), warpgroups 1 and 2 the consumers (setmaxnreg 232), each
// owning 64 rows of the tile with one m64n256k16 accumulator (128 f32 a
// thread), 4 wgmma (k = 16 each) a stage.
// Barriers per stage: full (count 1: the producer's arrive.expect_tx, then
// the 48 KiB of TMA transactions) and empty (count 8 per CTA of the cluster:
// lane 0 of each consumer warp, once wgmma.wait_group shows the wgmmas that
// read the stage are done).
// fastpath_gate_up_swiglu_pair runs clusters of 2 CTAs along M (the runtime
// takes it when M is a multiple of 256): the pair computes tiles (2i, n) and
// (2i+1, n), each CTA loads its own x tile and one half of the shared W2
// tile, multicast into both CTAs; a stage of either CTA is refilled only when
// the consumers of both have released it. fastpath_gate_up_swiglu runs
// single CTAs (any M).
// Persistent grid (the runtime launches one CTA an SM, or as many pairs as
// can be resident); cluster c takes tile groups c, c + clusters, ...; group
// t is (m block t % m_groups, n block t / m_groups), so the CTAs running at
// one time share W2 blocks (loaded evict-first) while x stays in L2
// (evict-last).
// Epilogue: silu(g) * u in f32 from the register pairs, rounded to bf16,
// stmatrix into a 128-byte swizzled staging buffer, two TMA stores of 64 x 64
// per consumer warpgroup.
//
// rmsnorm_gate_up_swiglu (fastpath_rmsnorm_gate_up_swiglu[_pair]): the same
// kernel with the RMSNorm that feeds h folded in, so that no normalized copy
// of x is written or read:
//   out = bf16( silu(r g') * (r u') ),  g' = x (Wg diag(gamma))^T,
//   u' = x (Wu diag(gamma))^T,  r = rsqrt(sum_k x[m,k]^2 * inv_div + eps)
// where x [M, K] is the norm's input, gamma is folded into the interleaved
// weights by the runtime (once per version of the three) and r, one f32 a
// row, is summed here from the x tiles already in shared memory: warps 2 and
// 3 of the producer warpgroup (otherwise idle) read each stage's x tile once
// the TMA lands it (thread t: rows t and t + 64, the 16-byte chunks in the
// swizzled order, so a quarter warp reads 8 distinct bank groups), release
// the stage with the consumers (2 more arrivals on each empty barrier of
// their own CTA: the peer never reads this CTA's x tile), and after a tile's
// last k step hand its 128 row scales to the consumers' epilogue through a
// double buffer (rs_full: 64 arrivals, rs_empty: 256).
struct __align__(64) FgTensorMap { unsigned long long opaque[16]; };  // CUtensorMap

#define FG_BM 128
#define FG_BK 64
#define FG_STAGES 4
#define FG_A_STAGE (FG_BM * FG_BK * 2)
#define FG_EMPTY_ARRIVALS 8
#define FG_NORM_THREADS 64  // producer warps 2 and 3: the row norms

// The sizes that follow from a tile of BNO output columns (128 or 112):
// 2 BNO rows of W2 a tile, a stage of W2 rows, a consumer's staged out.
template <int BNO>
struct FgTile {
  static_assert(BNO == 128 || BNO == 112, "tiles of 128 or 112 output columns");
  static constexpr int kW2Rows = 2 * BNO;
  static constexpr int kBStage = kW2Rows * FG_BK * 2;  // 32 KiB or 28 KiB
  static constexpr int kStageBytes = FG_A_STAGE + kBStage;
  static constexpr int kOutWg = 64 * BNO * 2;  // 16 KiB or 14 KiB
};

__device__ __forceinline__ unsigned fg_smem_u32(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void fg_mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void fg_mbar_arrive_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void fg_mbar_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
// Arrive on the barrier at offset bar of CTA cta of this cluster.
__device__ __forceinline__ void fg_mbar_arrive_cluster(unsigned bar, unsigned cta) {
  asm volatile(
      "{\n\t.reg .b32 ra;\n\t"
      "mapa.shared::cluster.u32 ra, %0, %1;\n\t"
      "mbarrier.arrive.shared::cluster.b64 _, [ra];\n\t}" ::"r"(bar),
      "r"(cta)
      : "memory");
}
// Until the phase of the given parity has completed.
__device__ __forceinline__ void fg_mbar_wait(unsigned bar, unsigned parity) {
  unsigned done;
  do {
    asm volatile(
        "{\n\t.reg .pred p;\n\t"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
        "selp.u32 %0, 1, 0, p;\n\t}"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}
// 2-D bulk tensor load global -> shared (c0 = k in elements, c1 = row),
// completing its bytes on bar.
__device__ __forceinline__ void fg_tma_load(unsigned dst, const FgTensorMap* map, unsigned bar, int c0, int c1,
                                            unsigned long long policy) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
      " [%0], [%1, {%3, %4}], [%2], %5;" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(bar), "r"(c0), "r"(c1), "l"(policy)
      : "memory");
}
// The same, multicast: the box lands at offset dst of every CTA in mask and
// completes its bytes on the barrier at offset bar of each.
__device__ __forceinline__ void fg_tma_load_multicast(unsigned dst, const FgTensorMap* map, unsigned bar, int c0,
                                                      int c1, unsigned mask, unsigned long long policy) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster.L2::cache_hint"
      " [%0], [%1, {%3, %4}], [%2], %5, %6;" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(bar), "r"(c0), "r"(c1),
      "h"(static_cast<unsigned short>(mask)), "l"(policy)
      : "memory");
}
__device__ __forceinline__ unsigned long long fg_policy_evict_last() {
  unsigned long long p;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p));
  return p;
}
__device__ __forceinline__ unsigned long long fg_policy_evict_first() {
  unsigned long long p;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  return p;
}
// 2-D bulk tensor store shared -> global (c0 = column, c1 = row); rows past
// the map's extent are not written
__device__ __forceinline__ void fg_tma_store(const FgTensorMap* map, unsigned src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];" ::"l"(
                   reinterpret_cast<unsigned long long>(map)),
               "r"(src), "r"(c0), "r"(c1)
               : "memory");
}
__device__ __forceinline__ void fg_named_bar_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
// wgmma shared-memory descriptor of a K-major tile written by TMA with the
// 128-byte swizzle: start address >> 4 (bits 0-13), leading byte offset 1
// (unused by swizzled K-major layouts), stride byte offset 1024 >> 4 (8-row
// groups), base offset 0 (1024-byte aligned stages), swizzle mode 1 (128 B).
// 16 elements along k inside the 128-byte row add 2 to the start address.
__device__ __forceinline__ unsigned long long fg_wgmma_desc(unsigned saddr) {
  unsigned long long d = 0;
  d |= static_cast<unsigned long long>((saddr & 0x3FFFF) >> 4);
  d |= 1ull << 16;
  d |= static_cast<unsigned long long>(1024 >> 4) << 32;
  d |= 1ull << 62;
  return d;
}
__device__ __forceinline__ void fg_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void fg_wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void fg_wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
// Ties the accumulators to this point of the program: no read or write of
// them moves across a wgmma fence or wait.
template <int R>
__device__ __forceinline__ void fg_acc_fence(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

#define FG_F8(i) \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
// D[64 x 256] (+)= A[64 x 16] * B[256 x 16]^T, both K-major in shared memory;
// scale_d == 0 overwrites D.
__device__ __forceinline__ void fg_wgmma_m64n256k16(float (&d)[128], unsigned long long da, unsigned long long db,
                                                    int scale_d) {
  asm volatile(
      "{\n\t.reg .pred p;\n\t"
      "setp.ne.b32 p, %130, 0;\n\t"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
      "}, %128, %129, p, 1, 1, 0, 0;\n\t}"
      : FG_F8(0), FG_F8(8), FG_F8(16), FG_F8(24), FG_F8(32), FG_F8(40), FG_F8(48), FG_F8(56), FG_F8(64), FG_F8(72),
        FG_F8(80), FG_F8(88), FG_F8(96), FG_F8(104), FG_F8(112), FG_F8(120)
      : "l"(da), "l"(db), "r"(scale_d)
      : "memory");
}
// D[64 x 224] (+)= A[64 x 16] * B[224 x 16]^T: the same for tiles of 112
// output columns
__device__ __forceinline__ void fg_wgmma_m64n224k16(float (&d)[112], unsigned long long da, unsigned long long db,
                                                    int scale_d) {
  asm volatile(
      "{\n\t.reg .pred p;\n\t"
      "setp.ne.b32 p, %114, 0;\n\t"
      "wgmma.mma_async.sync.aligned.m64n224k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111"
      "}, %112, %113, p, 1, 1, 0, 0;\n\t}"
      : FG_F8(0), FG_F8(8), FG_F8(16), FG_F8(24), FG_F8(32), FG_F8(40), FG_F8(48), FG_F8(56), FG_F8(64), FG_F8(72),
        FG_F8(80), FG_F8(88), FG_F8(96), FG_F8(104)
      : "l"(da), "l"(db), "r"(scale_d)
      : "memory");
}
#undef FG_F8

template <int BNO>
__device__ __forceinline__ void fg_wgmma_tile(float (&d)[BNO], unsigned long long da, unsigned long long db,
                                              int scale_d) {
  if constexpr (BNO == 128)
    fg_wgmma_m64n256k16(d, da, db, scale_d);
  else
    fg_wgmma_m64n224k16(d, da, db, scale_d);
}

// g / (1 + 2^(-g log2 e)) with the approximate ex2 and rcp (rcp(inf) = 0:
// a large negative g gives -0)
__device__ __forceinline__ float fg_silu_approx(float g) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(1.0f + __expf(-g)));
  return g * r;
}

// acc + the squares of the 8 bf16 at a shared address (16 bytes)
__device__ __forceinline__ float fg_add_sumsq_bf16x8(float acc, unsigned saddr) {
  unsigned v[4];
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3])
               : "r"(saddr)
               : "memory");
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float lo = __uint_as_float(v[i] << 16), hi = __uint_as_float(v[i] & 0xFFFF0000u);
    acc = fmaf(lo, lo, acc);
    acc = fmaf(hi, hi, acc);
  }
  return acc;
}

template <int CM, bool NORM, int BNO>
__device__ __forceinline__ void fg_gate_up_swiglu(const FgTensorMap* tm_x, const FgTensorMap* tm_w,
                                                  const FgTensorMap* tm_out, int M, int N, int K, float eps,
                                                  float inv_div) {
  extern __shared__ __align__(1024) unsigned char fg_smem[];
  const unsigned base = (fg_smem_u32(fg_smem) + 1023u) & ~1023u;
  using T = FgTile<BNO>;
  const unsigned sA = base;                             // FG_STAGES x 16 KiB
  const unsigned sB = sA + FG_STAGES * FG_A_STAGE;      // FG_STAGES x 32 (28) KiB
  const unsigned sO = sB + FG_STAGES * T::kBStage;      // 2 x 16 (14) KiB: out staging, one a consumer
  const unsigned bars = sO + 2 * T::kOutWg;             // full[FG_STAGES], empty[FG_STAGES]
  const unsigned rs_bars = bars + 16u * FG_STAGES;      // rs_full[2], rs_empty[2] (NORM)
  const unsigned sRS = bars + 128;                      // 2 x 128 f32 row scales (NORM)
  const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
  unsigned rank = 0;  // this CTA's rank in its cluster
  if (CM > 1) asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  const int cluster_id = blockIdx.x / CM, clusters = gridDim.x / CM;
  const int m_groups = (M + FG_BM * CM - 1) / (FG_BM * CM);
  const int groups = m_groups * (N / BNO);
  const int k_iters = (K + FG_BK - 1) / FG_BK;

  if (threadIdx.x == 0) {
    for (int s = 0; s < FG_STAGES; ++s) {
      fg_mbar_init(bars + 8u * s, 1);
      fg_mbar_init(bars + 8u * (FG_STAGES + s), FG_EMPTY_ARRIVALS * CM + (NORM ? FG_NORM_THREADS / 32 : 0));
    }
    if (NORM) {
      for (int b = 0; b < 2; ++b) {
        fg_mbar_init(rs_bars + 8u * b, FG_NORM_THREADS);
        fg_mbar_init(rs_bars + 16u + 8u * b, 256);
      }
    }
    // the barriers visible to the async proxy (TMA) and the cluster's peer
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<unsigned long long>(tm_x)) : "memory");
    asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<unsigned long long>(tm_w)) : "memory");
    asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<unsigned long long>(tm_out)) : "memory");
  }
  if (CM > 1) {
    // no CTA multicasts into, or arrives on, a peer before its barriers exist
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
  } else {
    __syncthreads();
  }

  if (wg == 0) {
    // ---- producer
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
    if (tid == 0) {
      const unsigned long long pol_x = fg_policy_evict_last(), pol_w = fg_policy_evict_first();
      int stage = 0;
      unsigned phase = 0;
      for (int grp = cluster_id; grp < groups; grp += clusters) {
        const int m0 = ((grp % m_groups) * CM + static_cast<int>(rank)) * FG_BM;
        const int w0 = (grp / m_groups) * T::kW2Rows;
        for (int kb = 0; kb < k_iters; ++kb) {
          fg_mbar_wait(bars + 8u * (FG_STAGES + stage), phase ^ 1u);  // a fresh barrier passes parity 1
          fg_mbar_arrive_expect_tx(bars + 8u * stage, T::kStageBytes);
          fg_tma_load(sA + stage * FG_A_STAGE, tm_x, bars + 8u * stage, kb * FG_BK, m0, pol_x);
          if (CM == 1)
            fg_tma_load(sB + stage * T::kBStage, tm_w, bars + 8u * stage, kb * FG_BK, w0, pol_w);
          else
            fg_tma_load_multicast(sB + stage * T::kBStage + rank * (T::kBStage / 2), tm_w, bars + 8u * stage,
                                  kb * FG_BK, w0 + static_cast<int>(rank) * BNO, (1u << CM) - 1u, pol_w);
          if (++stage == FG_STAGES) { stage = 0; phase ^= 1u; }
        }
      }
      // not before every stage is released by the consumers of every CTA of
      // the cluster: no load may still land here, no peer still arrive here
      for (int i = 0; i < FG_STAGES; ++i) {
        fg_mbar_wait(bars + 8u * (FG_STAGES + stage), phase ^ 1u);
        if (++stage == FG_STAGES) { stage = 0; phase ^= 1u; }
      }
    } else if (NORM && tid >= 128 - FG_NORM_THREADS) {
      // ---- row norms: rows t and t + 64 of each x tile, summed from the
      // stages the consumers read (TMA fills rows past M and columns past K
      // with zeros: they add nothing)
      const int t = tid - (128 - FG_NORM_THREADS);
      int stage = 0, it = 0;
      unsigned phase = 0;
      for (int grp = cluster_id; grp < groups; grp += clusters, ++it) {
        float s0 = 0.f, s1 = 0.f;
        for (int kb = 0; kb < k_iters; ++kb) {
          fg_mbar_wait(bars + 8u * stage, phase);
          const unsigned a0 = sA + stage * FG_A_STAGE + t * 128, a1 = a0 + 64 * 128;
#pragma unroll
          for (int j = 0; j < 8; ++j) {
            const unsigned c = static_cast<unsigned>(j ^ (t & 7)) << 4;  // row t's chunk j, swizzled
            s0 = fg_add_sumsq_bf16x8(s0, a0 + c);
            s1 = fg_add_sumsq_bf16x8(s1, a1 + c);
          }
          __syncwarp();
          if (tid % 32 == 0) fg_mbar_arrive(bars + 8u * (FG_STAGES + stage));
          if (++stage == FG_STAGES) { stage = 0; phase ^= 1u; }
        }
        // this tile's row scales into buffer it % 2, once the epilogue two
        // tiles back has read it
        const unsigned b = static_cast<unsigned>(it & 1);
        fg_mbar_wait(rs_bars + 16u + 8u * b, ((static_cast<unsigned>(it) >> 1) & 1u) ^ 1u);
        const float r0 = rsqrtf(fmaf(s0, inv_div, eps)), r1 = rsqrtf(fmaf(s1, inv_div, eps));
        asm volatile("st.shared.f32 [%0], %1;" ::"r"(sRS + b * 512u + 4u * t), "f"(r0) : "memory");
        asm volatile("st.shared.f32 [%0], %1;" ::"r"(sRS + b * 512u + 4u * (t + 64)), "f"(r1) : "memory");
        fg_mbar_arrive(rs_bars + 8u * b);
      }
    }
  } else {
    // ---- consumers
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    const int cw = wg - 1;  // rows cw*64 .. cw*64 + 63 of the tile
    const int warp = tid / 32, lane = tid % 32;
    float d[BNO];
#pragma unroll
    for (int i = 0; i < BNO; ++i) d[i] = 0.f;
    int stage = 0, it = 0;
    unsigned phase = 0;
    for (int grp = cluster_id; grp < groups; grp += clusters, ++it) {
      const int m0 = ((grp % m_groups) * CM + static_cast<int>(rank)) * FG_BM;
      const int n0 = (grp / m_groups) * BNO;
      int prev = 0;
      for (int kb = 0; kb < k_iters; ++kb) {
        fg_mbar_wait(bars + 8u * stage, phase);
        const unsigned long long da = fg_wgmma_desc(sA + stage * FG_A_STAGE + cw * (64 * 128));
        const unsigned long long db = fg_wgmma_desc(sB + stage * T::kBStage);
        fg_wgmma_fence();
        fg_acc_fence(d);
#pragma unroll
        for (int k = 0; k < FG_BK / 16; ++k) fg_wgmma_tile<BNO>(d, da + 2 * k, db + 2 * k, (kb | k) != 0);
        fg_wgmma_commit();
        fg_acc_fence(d);
        if (kb > 0) {
          fg_wgmma_wait<1>();  // step kb-1's group is done: its stage can be refilled
          if (lane == 0) {
            fg_mbar_arrive(bars + 8u * (FG_STAGES + prev));
            if (CM > 1) fg_mbar_arrive_cluster(bars + 8u * (FG_STAGES + prev), rank ^ 1u);
          }
        }
        prev = stage;
        if (++stage == FG_STAGES) { stage = 0; phase ^= 1u; }
      }
      fg_wgmma_wait<0>();
      fg_acc_fence(d);
      if (lane == 0) {
        fg_mbar_arrive(bars + 8u * (FG_STAGES + prev));
        if (CM > 1) fg_mbar_arrive_cluster(bars + 8u * (FG_STAGES + prev), rank ^ 1u);
      }

      // ---- epilogue: out = silu(g) * u from the paired accumulators.
      // m64nNk16 f32 fragment: warp w, lane l holds for 8-column group j
      //   d[4j+0..1] = (row 16w + l/4,     cols 8j + 2(l%4) + {0,1})
      //   d[4j+2..3] = (row 16w + l/4 + 8, cols 8j + 2(l%4) + {0,1})
      // groups 0..BNO/8-1 are gate columns, the next BNO/8 the matching up
      // columns (d[i] pairs with d[BNO/2 + i]). Each 8x8 block of out is in
      // stmatrix's m8n8 layout. 128 columns: the 64 x 128 result goes to
      // this warpgroup's staging buffer as two 64 x 64 boxes in the TMA
      // 128-byte swizzle (row r at r*128, 16-byte chunk c at (c ^ r%8)*16),
      // then out with two TMA stores. 112 columns: rows of 224 bytes without
      // swizzle (8 rows of one stmatrix matrix fall on 4 bank groups, 2 rows
      // each), then one TMA store.
      // NORM: the row scales of this thread's two rows (16w + l/4, + 8)
      float rs[2] = {1.f, 1.f};
      if (NORM) {
        const unsigned b = static_cast<unsigned>(it & 1);
        fg_mbar_wait(rs_bars + 8u * b, (static_cast<unsigned>(it) >> 1) & 1u);
        const unsigned row = static_cast<unsigned>(cw * 64 + warp * 16 + lane / 4);
        asm volatile("ld.shared.f32 %0, [%1];" : "=f"(rs[0]) : "r"(sRS + b * 512u + 4u * row) : "memory");
        asm volatile("ld.shared.f32 %0, [%1];" : "=f"(rs[1]) : "r"(sRS + b * 512u + 4u * (row + 8)) : "memory");
        fg_mbar_arrive(rs_bars + 16u + 8u * b);
      }
      const unsigned s_out = sO + cw * T::kOutWg;
      // the staging buffer is free once the previous tile's stores read it
      if (tid == 0) asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
      fg_named_bar_sync(1 + cw, 128);
      const int mi = lane / 8;  // the matrix this lane addresses
      const int srow = warp * 16 + (mi & 1) * 8 + (lane & 7);
      constexpr int up = BNO / 2;
#pragma unroll
      for (int jj = 0; jj < BNO / 16; ++jj) {
        unsigned r[4];
#pragma unroll
        for (int q = 0; q < 4; ++q) {  // matrix q: j = 2jj + q/2, row half q%2
          const int i = 4 * (2 * jj + q / 2) + 2 * (q % 2);
          if (NORM) {
            const float s = rs[q % 2];
            r[q] = fg_pack_bf16x2(fg_silu_approx(d[i] * s) * (d[up + i] * s),
                                  fg_silu_approx(d[i + 1] * s) * (d[up + i + 1] * s));
          } else {
            r[q] = fg_pack_bf16x2(fg_silu_approx(d[i]) * d[up + i], fg_silu_approx(d[i + 1]) * d[up + i + 1]);
          }
        }
        const int jm = 2 * jj + mi / 2;
        const unsigned addr = BNO == 128
                                  ? s_out + (jm / 8) * (64 * 128) + srow * 128 + (((jm % 8) ^ (srow % 8)) << 4)
                                  : s_out + srow * (BNO * 2) + (jm << 4);
        asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(r[0]),
                     "r"(r[1]), "r"(r[2]), "r"(r[3])
                     : "memory");
      }
      // the generic-proxy writes visible to TMA, then one thread stores
      asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
      fg_named_bar_sync(1 + cw, 128);
      if (tid == 0) {
        fg_tma_store(tm_out, s_out, n0, m0 + cw * 64);
        if (BNO == 128) fg_tma_store(tm_out, s_out + 64 * 128, n0 + 64, m0 + cw * 64);
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
      }
    }
    if (tid == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
  }
}

// The entry points: fastpath_[rmsnorm_]gate_up_swiglu[_n112][_pair], tiles of
// 128 output columns (or of 112: _n112), single CTAs or CTA pairs (_pair).
// tm_x maps h (the norm's input x for the rmsnorm variant); tm_w the
// interleaved weights (with gamma folded in for the rmsnorm variant); tm_out
// boxes of 64 x 64 with the 128-byte swizzle (128 columns) or of 64 x 112
// without swizzle (112); r = rsqrt(sum of squares * inv_div + eps).
#define FG_ENTRY(NAME, CM, BNO)                                                                                  \
  extern "C" __global__ void __launch_bounds__(384, 1)                                                          \
      NAME(const __grid_constant__ FgTensorMap tm_x, const __grid_constant__ FgTensorMap tm_w,                  \
           const __grid_constant__ FgTensorMap tm_out, int M, int N, int K) {                                    \
    fg_gate_up_swiglu<CM, false, BNO>(&tm_x, &tm_w, &tm_out, M, N, K, 0.f, 0.f);                                \
  }
#define FG_NORM_ENTRY(NAME, CM, BNO)                                                                             \
  extern "C" __global__ void __launch_bounds__(384, 1)                                                          \
      NAME(const __grid_constant__ FgTensorMap tm_x, const __grid_constant__ FgTensorMap tm_w,                  \
           const __grid_constant__ FgTensorMap tm_out, int M, int N, int K, float eps, float inv_div) {          \
    fg_gate_up_swiglu<CM, true, BNO>(&tm_x, &tm_w, &tm_out, M, N, K, eps, inv_div);                             \
  }
FG_ENTRY(fastpath_gate_up_swiglu, 1, 128)
FG_ENTRY(fastpath_gate_up_swiglu_pair, 2, 128)
FG_ENTRY(fastpath_gate_up_swiglu_n112, 1, 112)
FG_ENTRY(fastpath_gate_up_swiglu_n112_pair, 2, 112)
FG_NORM_ENTRY(fastpath_rmsnorm_gate_up_swiglu, 1, 128)
FG_NORM_ENTRY(fastpath_rmsnorm_gate_up_swiglu_pair, 2, 128)
FG_NORM_ENTRY(fastpath_rmsnorm_gate_up_swiglu_n112, 1, 112)
FG_NORM_ENTRY(fastpath_rmsnorm_gate_up_swiglu_n112_pair, 2, 112)
#undef FG_ENTRY
#undef FG_NORM_ENTRY
