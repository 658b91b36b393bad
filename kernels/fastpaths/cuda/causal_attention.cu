// causal_attention, CUDA (Hopper, sm_90a only): causal scaled dot-product
// attention of bf16 q, k, v with head dim 128, one kernel:
//   out[b, s, h, :] = bf16( sum_{t <= s} p[s, t] v[b, t, h / group, :] ),
//   p = softmax_t( q[b, s, h, :] . k[b, t, h / group, :] / sqrt(128) )
// in f32 with the online softmax (a running row max and sum, the partial
// output rescaled when the max moves; exp2 of pre-scaled scores, MUFU ex2),
// p rounded to bf16 before it multiplies v, as the fused attention kernels of
// the libraries round it. Its own sum order: `ab` compares distances to fp64.
//
// Inputs through three 4-D TMA tensor maps the runtime encodes
// (kernels/fastpaths/cuda_runtime.cpp), dims (d, s, head, batch) with any
// strides a multiple of 16 bytes (the q, k, v views of one qkv projection
// need no copy), boxes of 64 d x 128 s with the 128-byte swizzle: a 128-row
// tile of 128 columns is two 16 KiB boxes (d 0..63, d 64..127). Rows past the
// sequence are read as zeros, which the causal mask hides from every row that
// is written. The output is [B, S, H, 128] row-major (out_tok, out_head,
// out_batch strides in elements), so merging the heads after it is free.
//
// A CTA owns one 128-row q tile of one (batch, head); the grid is (B * H,
// q tiles) and q tile blockIdx.y counts from the last, so the tiles with the
// most key tiles start first. 384 threads: warpgroup 0 is the producer (one
// thread issues the TMA loads; setmaxnreg 24), warpgroups 1 and 2 the
// consumers (setmaxnreg 240), each owning 64 q rows. Per key tile j, from
// the diagonal tile down to tile 0 (so only the first is masked):
//   S = Q K_j^T   8 wgmma m64n128k16, Q and K_j K-major in shared memory;
//   softmax       the row max over a quad of lanes, exp2, the row sums kept
//                 per thread until the end, the output rescaled;
//   O += P V_j    8 wgmma m64n128k16, P from registers (the S accumulator's
//                 fragment is the A fragment of a k16 step, packed to bf16),
//                 V_j MN-major in shared memory (transposed B).
// The two consumer warpgroups take turns to issue their wgmmas (named
// barriers), so one's softmax overlaps the other's products.
// Shared memory: Q 32 KiB, two stages of K and V (32 KiB each), barriers:
// 160 KiB + 72 bytes, plus 1 KiB of alignment slack.
// Barriers: q_full (count 1 + Q's 32 KiB of transactions), k_full[2] and
// v_full[2] (count 1 + 32 KiB each), k_empty[2] (count 8: lane 0 of each
// consumer warp once the stage's Q K^T wgmmas are done) and v_empty[2]
// (count 8, once its P V wgmmas are done). K and V are released apart: the
// K of tile j + 2 loads while tile j + 1's products run, a whole step ahead
// of its use, instead of waiting for P V of tile j as one stage barrier
// would make it.
struct __align__(64) FaTensorMap { unsigned long long opaque[16]; };  // CUtensorMap

#define FA_ROWS 128               // q rows a CTA, key rows a step
#define FA_BOX (128 * 64 * 2)     // one box: 128 rows x 64 columns, 16 KiB
#define FA_TILE (2 * FA_BOX)      // 128 rows x 128 columns, 32 KiB
#define FA_EMPTY_ARRIVALS 8
#define FA_NEG_INF __int_as_float(0xff800000)

__device__ __forceinline__ unsigned fa_smem_u32(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void fa_mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void fa_mbar_arrive_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void fa_mbar_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
// Until the phase of the given parity has completed.
__device__ __forceinline__ void fa_mbar_wait(unsigned bar, unsigned parity) {
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
// 4-D bulk tensor load global -> shared: (d, s, head, batch), completing its
// bytes on bar
__device__ __forceinline__ void fa_tma_load(unsigned dst, const FaTensorMap* map, unsigned bar, int d, int s, int h,
                                            int b) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5, %6}], [%2];" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(bar), "r"(d), "r"(s), "r"(h), "r"(b)
      : "memory");
}
// wgmma shared-memory descriptors of tiles written by TMA with the 128-byte
// swizzle, 1024-byte aligned (base offset 0), swizzle mode 1 (bits 62-63):
//   K-major (Q, K as the B of Q K^T): start >> 4, leading byte offset 1
//   (unused by swizzled K-major layouts), stride byte offset 1024 (8-row
//   groups); 16 elements along k inside a 128-byte row add 2 to the start.
//   MN-major (V as the B of P V, whose k is the key row): the 128-byte rows
//   are 64 d (MN) contiguous, 8 key rows a 1024-byte swizzle atom (stride
//   byte offset), the next 64 d in the other box (leading byte offset
//   FA_BOX); a k16 step is 16 key rows, 2048 bytes on.
__device__ __forceinline__ unsigned long long fa_desc_k_major(unsigned saddr) {
  unsigned long long d = 0;
  d |= static_cast<unsigned long long>((saddr & 0x3FFFF) >> 4);
  d |= 1ull << 16;
  d |= static_cast<unsigned long long>(1024 >> 4) << 32;
  d |= 1ull << 62;
  return d;
}
__device__ __forceinline__ unsigned long long fa_desc_mn_major(unsigned saddr) {
  unsigned long long d = 0;
  d |= static_cast<unsigned long long>((saddr & 0x3FFFF) >> 4);
  d |= static_cast<unsigned long long>(FA_BOX >> 4) << 16;
  d |= static_cast<unsigned long long>(1024 >> 4) << 32;
  d |= 1ull << 62;
  return d;
}
__device__ __forceinline__ void fa_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void fa_wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void fa_named_bar_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void fa_named_bar_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
template <int N>
__device__ __forceinline__ void fa_wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
// Ties the accumulators to this point of the program: no read or write of
// them moves across a wgmma fence or wait.
__device__ __forceinline__ void fa_acc_fence(float (&d)[64]) {
#pragma unroll
  for (int i = 0; i < 64; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// The same for P's packed A fragments, which the P V wgmmas read.
__device__ __forceinline__ void fa_pa_fence(unsigned (&pa)[32]) {
#pragma unroll
  for (int i = 0; i < 32; ++i) asm volatile("" : "+r"(pa[i])::"memory");
}

#define FA_F8(i) \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define FA_D64                                                                                                      \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, " \
  "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, "  \
  "%46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
// D[64 x 128] (+)= A[64 x 16] B[128 x 16]^T, both K-major in shared memory;
// scale_d == 0 overwrites D
__device__ __forceinline__ void fa_wgmma_ss(float (&d)[64], unsigned long long da, unsigned long long db,
                                            int scale_d) {
  asm volatile(
      "{\n\t.reg .pred p;\n\t"
      "setp.ne.b32 p, %66, 0;\n\t"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 " FA_D64 ", %64, %65, p, 1, 1, 0, 0;\n\t}"
      : FA_F8(0), FA_F8(8), FA_F8(16), FA_F8(24), FA_F8(32), FA_F8(40), FA_F8(48), FA_F8(56)
      : "l"(da), "l"(db), "r"(scale_d)
      : "memory");
}
// D[64 x 128] += A[64 x 16] B[16 x 128], A from registers (four bf16 pairs a
// thread), B MN-major in shared memory (transposed)
__device__ __forceinline__ void fa_wgmma_rs(float (&d)[64], unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                                            unsigned long long db) {
  asm volatile(
      "{\n\t.reg .pred p;\n\t"
      "setp.ne.b32 p, 1, 0;\n\t"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 " FA_D64 ", {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n\t}"
      : FA_F8(0), FA_F8(8), FA_F8(16), FA_F8(24), FA_F8(32), FA_F8(40), FA_F8(48), FA_F8(56)
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(db)
      : "memory");
}
#undef FA_F8
#undef FA_D64

__device__ __forceinline__ float fa_exp2(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}

// S[64 x 128] = this warpgroup's Q rows (qa: box 0; box 1 FA_BOX on) times
// the key tile at k^T: 8 k16 steps over the head dim
__device__ __forceinline__ void fa_qk(float (&s)[64], unsigned qa, unsigned k) {
#pragma unroll
  for (int kk = 0; kk < 8; ++kk) {
    const unsigned half = static_cast<unsigned>(kk / 4) * FA_BOX, k16 = static_cast<unsigned>(kk % 4);
    fa_wgmma_ss(s, fa_desc_k_major(qa + half) + 2 * k16, fa_desc_k_major(k + half) + 2 * k16, kk != 0);
  }
}

// P (the softmax's s, f32) as the bf16 A fragments of 8 k16 steps: step kk
// is S columns 16kk .. 16kk + 15, fragment groups 2kk and 2kk + 1
__device__ __forceinline__ void fa_pack_p(unsigned (&pa)[32], const float (&s)[64]) {
#pragma unroll
  for (int kk = 0; kk < 8; ++kk) {
    pa[4 * kk + 0] = fg_pack_bf16x2(s[8 * kk + 0], s[8 * kk + 1]);
    pa[4 * kk + 1] = fg_pack_bf16x2(s[8 * kk + 2], s[8 * kk + 3]);
    pa[4 * kk + 2] = fg_pack_bf16x2(s[8 * kk + 4], s[8 * kk + 5]);
    pa[4 * kk + 3] = fg_pack_bf16x2(s[8 * kk + 6], s[8 * kk + 7]);
  }
}
// O[64 x 128] += P[64 x 128] V, V the key tile at v (MN-major): 8 k16 steps
// over the keys, 16 key rows (2048 bytes) each
__device__ __forceinline__ void fa_pv(float (&o)[64], const unsigned (&pa)[32], unsigned v) {
#pragma unroll
  for (int kk = 0; kk < 8; ++kk)
    fa_wgmma_rs(o, pa[4 * kk], pa[4 * kk + 1], pa[4 * kk + 2], pa[4 * kk + 3],
                fa_desc_mn_major(v + static_cast<unsigned>(kk) * 2048u));
}

// The online softmax of one key tile, in place: each row's max over the
// quad of lanes that holds it (every row has a key in the first tile, the
// diagonal one, so the max is finite), s = 2^((s - max) * scale_log2), the
// row's partial sum (this thread's columns) rescaled and added, corr the
// factor the output must be rescaled by (0 on the first tile)
__device__ __forceinline__ void fa_softmax(float (&s)[64], float (&m)[2], float (&l)[2], float (&corr)[2],
                                           float scale_log2) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float mx = m[r];
#pragma unroll
    for (int g = 0; g < 16; ++g) mx = fmaxf(mx, fmaxf(s[4 * g + 2 * r], s[4 * g + 2 * r + 1]));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    corr[r] = fa_exp2((m[r] - mx) * scale_log2);  // m = -inf: 0
    const float ms = mx * scale_log2;
    m[r] = mx;
    float sum = 0.f;
#pragma unroll
    for (int g = 0; g < 16; ++g)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float p = fa_exp2(fmaf(s[4 * g + 2 * r + e], scale_log2, -ms));
        s[4 * g + 2 * r + e] = p;
        sum += p;
      }
    l[r] = fmaf(l[r], corr[r], sum);
  }
}

// q, k, v: the maps; out: [B, S, H, 128] with the given element strides;
// S the sequence length (q and keys), H the q heads, group the q heads a
// k/v head serves; scale_log2 = log2(e) / sqrt(128)
extern "C" __global__ void __launch_bounds__(384, 1)
    fastpath_causal_attention(const __grid_constant__ FaTensorMap tm_q, const __grid_constant__ FaTensorMap tm_k,
                              const __grid_constant__ FaTensorMap tm_v, uint16_t* out, long long out_tok,
                              long long out_head, long long out_batch, int S, int H, int group, float scale_log2) {
  extern __shared__ __align__(1024) unsigned char fa_smem[];
  const unsigned base = (fa_smem_u32(fa_smem) + 1023u) & ~1023u;
  const unsigned sQ = base;                  // 32 KiB
  const unsigned sK = sQ + FA_TILE;          // 2 x 32 KiB
  const unsigned sV = sK + 2 * FA_TILE;      // 2 x 32 KiB
  const unsigned bars = sV + 2 * FA_TILE;    // q_full, k_full[2], v_full[2], k_empty[2], v_empty[2]
  const unsigned q_full = bars, k_full = bars + 8, v_full = bars + 24, k_empty = bars + 40, v_empty = bars + 56;
  const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
  const int b = blockIdx.x / H, h = blockIdx.x % H;
  const int qt = gridDim.y - 1 - blockIdx.y;  // the longest rows first
  const int q0 = qt * FA_ROWS;
  const int n_kv = qt + 1;                    // key tiles 0 .. qt

  if (threadIdx.x == 0) {
    fa_mbar_init(q_full, 1);
    for (int s = 0; s < 2; ++s) {
      fa_mbar_init(k_full + 8u * s, 1);
      fa_mbar_init(v_full + 8u * s, 1);
      fa_mbar_init(k_empty + 8u * s, FA_EMPTY_ARRIVALS);
      fa_mbar_init(v_empty + 8u * s, FA_EMPTY_ARRIVALS);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<unsigned long long>(&tm_q)) : "memory");
    asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<unsigned long long>(&tm_k)) : "memory");
    asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<unsigned long long>(&tm_v)) : "memory");
  }
  __syncthreads();

  if (wg == 0) {
    // ---- producer
    asm volatile("setmaxnreg.dec.sync.aligned.u32 24;");
    if (tid == 0) {
      const int hk = h / group;
      fa_mbar_arrive_expect_tx(q_full, FA_TILE);
      fa_tma_load(sQ, &tm_q, q_full, 0, q0, h, b);
      fa_tma_load(sQ + FA_BOX, &tm_q, q_full, 64, q0, h, b);
      // K runs a tile ahead of V: K of tile 0, then per tile it the K of
      // tile it + 1 and the V of tile it. In order of issue, a K no longer
      // waits behind the V before it, whose stage frees only after P V.
      auto load_k = [&](int it) {
        const int j = n_kv - 1 - it;
        const unsigned st = static_cast<unsigned>(it & 1), ph = static_cast<unsigned>(it >> 1) & 1u;
        fa_mbar_wait(k_empty + 8u * st, ph ^ 1u);  // a fresh barrier passes parity 1
        fa_mbar_arrive_expect_tx(k_full + 8u * st, FA_TILE);
        fa_tma_load(sK + st * FA_TILE, &tm_k, k_full + 8u * st, 0, j * FA_ROWS, hk, b);
        fa_tma_load(sK + st * FA_TILE + FA_BOX, &tm_k, k_full + 8u * st, 64, j * FA_ROWS, hk, b);
      };
      load_k(0);
      for (int it = 0; it < n_kv; ++it) {
        if (it + 1 < n_kv) load_k(it + 1);
        const int j = n_kv - 1 - it;
        const unsigned st = static_cast<unsigned>(it & 1), ph = static_cast<unsigned>(it >> 1) & 1u;
        fa_mbar_wait(v_empty + 8u * st, ph ^ 1u);
        fa_mbar_arrive_expect_tx(v_full + 8u * st, FA_TILE);
        fa_tma_load(sV + st * FA_TILE, &tm_v, v_full + 8u * st, 0, j * FA_ROWS, hk, b);
        fa_tma_load(sV + st * FA_TILE + FA_BOX, &tm_v, v_full + 8u * st, 64, j * FA_ROWS, hk, b);
      }
    }
    return;
  }

  // ---- consumers: rows cw*64 .. cw*64 + 63 of the q tile
  asm volatile("setmaxnreg.inc.sync.aligned.u32 240;");
  const int cw = wg - 1;
  const int warp = tid / 32, lane = tid % 32;
  // m64nNk16 f32 fragment: warp w, lane l holds for 8-column group j
  //   d[4j+0..1] = (row 16w + l/4,     cols 8j + 2(l%4) + {0,1})
  //   d[4j+2..3] = (row 16w + l/4 + 8, cols 8j + 2(l%4) + {0,1})
  const int row0 = cw * 64 + warp * 16 + lane / 4;  // this thread's rows in the tile: row0, row0 + 8
  const int col0 = 2 * (lane % 4);
  float o[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) o[i] = 0.f;
  float m[2] = {FA_NEG_INF, FA_NEG_INF}, l[2] = {0.f, 0.f}, corr[2];
  const unsigned qa = sQ + cw * (64 * 128);  // this warpgroup's 64 rows of each box
  // The steps overlap: S of key tile it + 1 is issued before P V of tile
  // it, and its softmax runs while P V does; the output is rescaled once P
  // V is done. The first tile (the diagonal one) is masked.
  // The two warpgroups take turns to issue their wgmmas (named barriers 1
  // and 2, warpgroup 0 first): one's softmax runs while the other's
  // products do, instead of both contending for the same units at once.
  // Each issues n_kv + 1 times; the last turn is not handed back.
  const int my_turn = 1 + cw, other_turn = 2 - cw;
  if (cw == 1) fa_named_bar_arrive(1, 256);
  float s[64];
  fa_mbar_wait(q_full, 0);
  fa_mbar_wait(k_full, 0);
  fa_named_bar_sync(my_turn, 256);
  fa_acc_fence(s);
  fa_wgmma_fence();
  fa_qk(s, qa, sK);
  fa_wgmma_commit();
  fa_named_bar_arrive(other_turn, 256);
  fa_wgmma_wait<0>();
  fa_acc_fence(s);
  __syncwarp();
  if (lane == 0) fa_mbar_arrive(k_empty);  // the first (diagonal) key tile's K, stage 0
#pragma unroll
  for (int g = 0; g < 16; ++g)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      // key column c > q row r is masked (both from the tile's first row)
      const int r = row0 + 8 * (e / 2), c = 8 * g + col0 + (e % 2);
      if (c > r) s[4 * g + e] = FA_NEG_INF;
    }
  fa_softmax(s, m, l, corr, scale_log2);
  // key tiles 0 .. n_kv - 2 with the next tile's S issued; the last one
  // apart (the wgmma groups in flight are then the same on every path, so
  // the softmax may read S while P V runs)
  for (int it = 0; it + 1 < n_kv; ++it) {
    const unsigned st = static_cast<unsigned>(it & 1), ph = static_cast<unsigned>(it >> 1) & 1u;
    const unsigned st1 = st ^ 1u, ph1 = static_cast<unsigned>((it + 1) >> 1) & 1u;
    unsigned pa[32];
    fa_pack_p(pa, s);
    fa_mbar_wait(k_full + 8u * st1, ph1);
    fa_mbar_wait(v_full + 8u * st, ph);
    fa_named_bar_sync(my_turn, 256);
    fa_acc_fence(s);
    fa_acc_fence(o);
    fa_pa_fence(pa);
    fa_wgmma_fence();
    fa_qk(s, qa, sK + st1 * FA_TILE);
    fa_wgmma_commit();
    fa_pv(o, pa, sV + st * FA_TILE);
    fa_wgmma_commit();
    fa_named_bar_arrive(other_turn, 256);
    fa_wgmma_wait<1>();  // S of the next tile is done, P V may not be
    fa_acc_fence(s);
    __syncwarp();
    if (lane == 0) fa_mbar_arrive(k_empty + 8u * st1);
    fa_softmax(s, m, l, corr, scale_log2);
    fa_wgmma_wait<0>();
    fa_acc_fence(o);
    __syncwarp();
    if (lane == 0) fa_mbar_arrive(v_empty + 8u * st);
#pragma unroll
    for (int g = 0; g < 16; ++g) {
      o[4 * g + 0] *= corr[0];
      o[4 * g + 1] *= corr[0];
      o[4 * g + 2] *= corr[1];
      o[4 * g + 3] *= corr[1];
    }
  }
  {
    const int it = n_kv - 1;
    const unsigned st = static_cast<unsigned>(it & 1), ph = static_cast<unsigned>(it >> 1) & 1u;
    unsigned pa[32];
    fa_pack_p(pa, s);
    fa_mbar_wait(v_full + 8u * st, ph);
    fa_named_bar_sync(my_turn, 256);
    fa_acc_fence(o);
    fa_pa_fence(pa);
    fa_wgmma_fence();
    fa_pv(o, pa, sV + st * FA_TILE);
    fa_wgmma_commit();
    if (cw == 0) fa_named_bar_arrive(other_turn, 256);
    fa_wgmma_wait<0>();
    fa_acc_fence(o);
    __syncwarp();
    if (lane == 0) fa_mbar_arrive(v_empty + 8u * st);
  }

  // ---- epilogue: divide by the row sums (summed over the quad), round,
  // store the rows inside the sequence
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float lt = l[r];
    lt += __shfl_xor_sync(0xffffffffu, lt, 1);
    lt += __shfl_xor_sync(0xffffffffu, lt, 2);
    const float inv = 1.f / lt;
    const int q = q0 + row0 + 8 * r;
    if (q >= S) continue;
    uint16_t* row = out + static_cast<long long>(b) * out_batch + static_cast<long long>(q) * out_tok +
                    static_cast<long long>(h) * out_head + col0;
#pragma unroll
    for (int g = 0; g < 16; ++g)
      *reinterpret_cast<unsigned*>(row + 8 * g) = fg_pack_bf16x2(o[4 * g + 2 * r] * inv, o[4 * g + 2 * r + 1] * inv);
  }
}
