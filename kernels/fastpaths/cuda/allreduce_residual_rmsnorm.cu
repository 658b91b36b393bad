// allreduce_residual_rmsnorm, CUDA: a one-shot all-reduce over the ranks'
// buffers, exchanged once with CUDA IPC, fused with the residual add and the
// RMSNorm: one kernel instead of an NCCL all-reduce and a norm kernel.
//
// Push, and no barrier: each rank *writes* its partial sums into every
// other rank's region (posted NVLink stores of 16 bytes) and reads only
// local memory. A buffer holds the sentinel 0x8000 (bf16 -0.0) wherever no
// value has arrived; a writer sends -0.0 as +0.0, so a reader waits, chunk
// by chunk, until no element of the chunk is the sentinel, and puts the
// sentinel back once it has read it. No flag, no fence: the data is its own
// signal (a Lamport-style exchange). Two earlier versions took 31.5 us (the
// ranks pulled each other's buffers over NVLink behind per-block flags) and
// 30.4 us (pushed, behind per-block flags and a system fence) a call at
// 4 MiB on 2 x H200, against 47.4 us for NCCL + the norm kernel.
//
// Each rank's region (rank order in `regions`): per block a launch counter
// (read and written by that block of its own rank only) at byte 0; at byte
// 4096 (FG_DATA_AT) two epochs of one buffer per sending rank,
// slot[e&1][src] of rows*H bf16, filled with the sentinel when made. Block b
// handles rows b, b + gridDim.x, ... on every rank (the same grid
// everywhere, no more blocks than can be resident at once, so that no block
// waits on one that cannot start). Per launch, block b: counts the launch
// (epoch e, kept on the device, so a CUDA graph replay counts too), stores
// its rows of the partial into slot[e&1][rank] of every other rank, then for
// each of its rows waits for and reads the other ranks' rows from its own
// slot[e&1][src], resets them to the sentinel, sums the ranks' partials in
// rank order (its own read from `partial`; -0.0 taken as +0.0 as sent; f32,
// rounded once to bf16: every rank computes the same bits), adds the
// residual, and normalizes. Rank src writes slot[e&1][src] of this rank
// again at epoch e+2 only: that needs src's epoch e+1 finished, which needs
// this rank's epoch-e+1 rows, which this rank sends only after its epoch-e
// kernel (resets included) finished, in stream order.
//
// Each thread handles up to 2 chunks of 8 elements (4 in the `_wide`
// entry; the prelude's 16-byte chunk loads and stores), the rounded sum kept
// in registers between the all-reduce and the normalization.
//   partial, residual bf16 [rows, H]; weight bf16 [H]; out bf16 [2, rows, H]
//   (residual sum, normalized); H a multiple of 8, at most 32768.
struct FgRegions { void* p[8]; };

#define FG_CHUNKS 4
// the region's layout; kernels/fastpaths/cuda_runtime.cpp allocates it
#define FG_DATA_AT 4096  // after 1024 blocks' counters
#define FG_EMPTY 0x80008000u

// -0.0 (the sentinel) as +0.0, in each half of a 32-bit word
__device__ __forceinline__ unsigned fg_no_neg_zero(unsigned x) {
  if ((x & 0xffffu) == 0x8000u) x &= 0xffff0000u;
  if ((x >> 16) == 0x8000u) x &= 0x0000ffffu;
  return x;
}
__device__ __forceinline__ uint4 fg_no_neg_zero(uint4 v) {
  return make_uint4(fg_no_neg_zero(v.x), fg_no_neg_zero(v.y), fg_no_neg_zero(v.z), fg_no_neg_zero(v.w));
}
__device__ __forceinline__ bool fg_has_empty(unsigned x) {
  return (x & 0xffffu) == 0x8000u || (x >> 16) == 0x8000u;
}
// wait until every element of a chunk has arrived, take it, empty it
__device__ __forceinline__ uint4 fg_take_chunk(uint16_t* p) {
  uint4 v;
  do {
    asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p)
                 : "memory");
  } while (fg_has_empty(v.x) || fg_has_empty(v.y) || fg_has_empty(v.z) || fg_has_empty(v.w));
  *reinterpret_cast<uint4*>(p) = make_uint4(FG_EMPTY, FG_EMPTY, FG_EMPTY, FG_EMPTY);
  return v;
}

// One row of `rows` a block at a time, C chunks a thread at most. Loads
// first: the thread's chunks of the partial and the residual are all in
// flight before it waits on any peer's, so that the row waits on memory
// once. Held across the block-wide sum: the rounded sum of the partials as
// bf16 (4 registers a chunk); the residual is read again with the weight
// after it (from L2), and res + sum is recomputed there to the same f32
// bits. Holding the f32 row instead (8 registers a chunk, 4 chunks by a
// runtime bound) took 87 registers: two blocks of 256 threads an SM, so that
// on an H100 a block ran about four of the 1024 rows of a 4096-wide norm
// one after another.
template <int C>
__device__ __forceinline__ void fg_allreduce_residual_rmsnorm(const uint16_t* __restrict__ partial,
                                                              const uint16_t* __restrict__ residual,
                                                              const uint16_t* __restrict__ weight,
                                                              uint16_t* __restrict__ out, const FgRegions& regions,
                                                              int64_t rows, int64_t H, int world, int rank,
                                                              float eps) {
  __shared__ unsigned epoch;
  const int64_t n = rows * H, chunks = H / 8;
  uint16_t* slots = nullptr;  // this rank's slot[e&1][0]
  if (world > 1) {
    char* mine = static_cast<char*>(regions.p[rank]);
    if (threadIdx.x == 0) {
      unsigned* counter = reinterpret_cast<unsigned*>(mine) + blockIdx.x;
      epoch = *counter + 1;
      *counter = epoch;
    }
    __syncthreads();
    const int64_t first = static_cast<int64_t>(epoch & 1) * world * n;
    // push every row of this block first: the others' waits on this rank
    // never wait on this block's own waits
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
      uint4 v[C];
#pragma unroll
      for (int k = 0; k < C; ++k) {
        const int64_t c = threadIdx.x + k * static_cast<int64_t>(blockDim.x);
        if (c < chunks) v[k] = fg_no_neg_zero(fg_load_chunk(partial + row * H + 8 * c).w);
      }
      for (int r = 0; r < world; ++r) {
        if (r == rank) continue;
        uint16_t* to = reinterpret_cast<uint16_t*>(static_cast<char*>(regions.p[r]) + FG_DATA_AT) + first + rank * n;
#pragma unroll
        for (int k = 0; k < C; ++k) {
          const int64_t c = threadIdx.x + k * static_cast<int64_t>(blockDim.x);
          if (c < chunks) *reinterpret_cast<uint4*>(to + row * H + 8 * c) = v[k];
        }
      }
    }
    slots = reinterpret_cast<uint16_t*>(mine + FG_DATA_AT) + first;
  }
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    uint4 own[C], res[C];
#pragma unroll
    for (int k = 0; k < C; ++k) {
      const int64_t c = threadIdx.x + k * static_cast<int64_t>(blockDim.x);
      if (c >= chunks) break;
      own[k] = fg_load_chunk(partial + row * H + 8 * c).w;
      res[k] = fg_load_chunk(residual + row * H + 8 * c).w;
    }
    uint4 sum[C];  // the all-reduce's result, bf16
    float acc = 0.f;
#pragma unroll
    for (int k = 0; k < C; ++k) {
      const int64_t c = threadIdx.x + k * static_cast<int64_t>(blockDim.x);
      if (c >= chunks) break;
      const int64_t i = row * H + 8 * c;
      float s[8];
      for (int r = 0; r < world; ++r) {
        FgChunk<uint16_t> t;
        t.w = r == rank ? (world == 1 ? own[k] : fg_no_neg_zero(own[k])) : fg_take_chunk(slots + r * n + i);
#pragma unroll
        for (int j = 0; j < 8; ++j) s[j] = r == 0 ? fg_bf16_to_float(t[j]) : s[j] + fg_bf16_to_float(t[j]);
      }
      FgChunk<uint16_t> rc, sc;
      rc.w = res[k];
      FgOutChunk v;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        sc.set(j, fg_float_to_bf16(s[j]));
        v.s[j] = fg_bf16_to_float(rc[j]) + fg_bf16_to_float(sc[j]);
        acc += v.s[j] * v.s[j];
      }
      sum[k] = sc.w;
      fg_store_chunk_bf16(out + i, v);
    }
    acc = fg_block_sum(acc);
    const float inv = 1.f / sqrtf(acc / static_cast<float>(H) + eps);
#pragma unroll
    for (int k = 0; k < C; ++k) {
      const int64_t c = threadIdx.x + k * static_cast<int64_t>(blockDim.x);
      if (c >= chunks) break;
      const FgChunk<uint16_t> w = fg_load_chunk(weight + 8 * c), rc = fg_load_chunk(residual + row * H + 8 * c);
      FgChunk<uint16_t> sc;
      sc.w = sum[k];
      FgOutChunk h;
#pragma unroll
      for (int j = 0; j < 8; ++j)
        h.s[j] = fg_round_bf16((fg_bf16_to_float(rc[j]) + fg_bf16_to_float(sc[j])) * inv) * fg_bf16_to_float(w[j]);
      fg_store_chunk_bf16(out + n + row * H + 8 * c, h);
    }
  }
}

// Two entries: up to 2 chunks a thread (hidden sizes up to 16384 at 1024
// threads; the launcher's usual pick), and up to 4 (up to 32768). Both are
// bounded to 64 registers (blocks of up to 1024 threads must fit): the
// first then holds 4 blocks of 256 threads an SM (72 registers unbounded,
// no spill at 64, ptxas for sm_90), 528 of 4096-wide rows in flight on an
// H100; the second spills (200 bytes at 64), a width no repro has.
extern "C" __global__ void __launch_bounds__(1024) fastpath_allreduce_residual_rmsnorm(const uint16_t* __restrict__ partial,
                                                               const uint16_t* __restrict__ residual,
                                                               const uint16_t* __restrict__ weight,
                                                               uint16_t* __restrict__ out, FgRegions regions,
                                                               int64_t rows, int64_t H, int world, int rank,
                                                               float eps) {
  fg_allreduce_residual_rmsnorm<2>(partial, residual, weight, out, regions, rows, H, world, rank, eps);
}
extern "C" __global__ void __launch_bounds__(1024) fastpath_allreduce_residual_rmsnorm_wide(const uint16_t* __restrict__ partial,
                                                                    const uint16_t* __restrict__ residual,
                                                                    const uint16_t* __restrict__ weight,
                                                                    uint16_t* __restrict__ out, FgRegions regions,
                                                                    int64_t rows, int64_t H, int world, int rank,
                                                                    float eps) {
  fg_allreduce_residual_rmsnorm<4>(partial, residual, weight, out, regions, rows, H, world, rank, eps);
}
