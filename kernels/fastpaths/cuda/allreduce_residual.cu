// allreduce_residual, CUDA: the block's last all-reduce with the residual
// add after it, r + all_reduce(p), where no norm reads the sum (the block's
// output): allreduce_sum's one-shot exchange, with the residual added as
// each chunk's sum is stored, so that the GEMM before it need not take the
// residual as its C operand on one rank (a slower GEMM that every rank's
// exchange waits for). Each rank pushes its partial sums into every other
// rank's region (posted NVLink stores of 16 bytes, CUDA IPC) and reads only
// local memory; a buffer holds the sentinel 0x8000 (bf16 -0.0) wherever no
// value has arrived, a writer sends -0.0 as +0.0, and a reader waits chunk
// by chunk until no element of the chunk is the sentinel, then puts the
// sentinel back (a Lamport-style exchange, as in allreduce_sum.cu and
// allreduce_residual_rmsnorm.cu, repeated here because a proof hashes one
// file: an edit of one cannot pass for the other).
//
// The region (rank order in `regions`): per block a launch counter at byte
// 0; at byte 4096 (FG_DATA_AT) two epochs of one buffer per sending rank,
// slot[e&1][src] of n bf16. Block b owns one contiguous range of chunks of
// 8 elements on every rank (the same grid everywhere, every block resident
// at once). Per launch, block b counts the launch (epoch e, on the device, so
// a CUDA graph replay counts too), stores its chunks of the partial into
// slot[e&1][rank] of every other rank, then for each chunk loads its
// residual, waits for the other ranks' values in its own slot[e&1][src],
// resets them to the sentinel, sums the ranks' partials in rank order (its
// own as sent: -0.0 as +0.0; f32, rounded once to bf16, the all-reduce's
// result) and adds the residual (f32, rounded once to bf16, the generic
// add's result): every rank computes the same bits from the same residual.
// Slot reuse at epoch e+2 is safe as in allreduce_sum.cu.
//   partial bf16 [n], residual bf16 [n], out bf16 [n]; n a multiple of 8.
struct FgRegions { void* p[8]; };

#define FG_DATA_AT 4096  // after 1024 blocks' counters
#define FG_EMPTY 0x80008000u
#define FG_BATCH 4       // chunks a thread loads before it stores them

__device__ __forceinline__ unsigned fg_res_no_neg_zero(unsigned x) {
  if ((x & 0xffffu) == 0x8000u) x &= 0xffff0000u;
  if ((x >> 16) == 0x8000u) x &= 0x0000ffffu;
  return x;
}
__device__ __forceinline__ uint4 fg_res_no_neg_zero(uint4 v) {
  return make_uint4(fg_res_no_neg_zero(v.x), fg_res_no_neg_zero(v.y), fg_res_no_neg_zero(v.z),
                    fg_res_no_neg_zero(v.w));
}
__device__ __forceinline__ bool fg_res_has_empty(unsigned x) {
  return (x & 0xffffu) == 0x8000u || (x >> 16) == 0x8000u;
}
// wait until every element of a chunk has arrived, take it, empty it
__device__ __forceinline__ uint4 fg_res_take(uint16_t* p) {
  uint4 v;
  do {
    asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p)
                 : "memory");
  } while (fg_res_has_empty(v.x) || fg_res_has_empty(v.y) || fg_res_has_empty(v.z) || fg_res_has_empty(v.w));
  *reinterpret_cast<uint4*>(p) = make_uint4(FG_EMPTY, FG_EMPTY, FG_EMPTY, FG_EMPTY);
  return v;
}

extern "C" __global__ void fastpath_allreduce_residual(const uint16_t* __restrict__ partial,
                                                       const uint16_t* __restrict__ res, uint16_t* __restrict__ out,
                                                       FgRegions regions, int64_t n, int world, int rank) {
  const int64_t chunks = n / 8;
  const int64_t per = (chunks + gridDim.x - 1) / gridDim.x;
  const int64_t lo = min(chunks, static_cast<int64_t>(blockIdx.x) * per), hi = min(chunks, lo + per);
  if (world == 1) {
    // the sum of one partial is the partial: only the add
    for (int64_t c = lo + threadIdx.x; c < hi; c += blockDim.x) {
      const FgChunk<uint16_t> t = fg_load_chunk(partial + 8 * c), r = fg_load_chunk(res + 8 * c);
      FgOutChunk o;
#pragma unroll
      for (int j = 0; j < 8; ++j) o.s[j] = fg_bf16_to_float(r[j]) + fg_bf16_to_float(t[j]);
      fg_store_chunk_bf16(out + 8 * c, o);
    }
    return;
  }
  __shared__ unsigned epoch;
  char* mine = static_cast<char*>(regions.p[rank]);
  if (threadIdx.x == 0) {
    unsigned* counter = reinterpret_cast<unsigned*>(mine) + blockIdx.x;
    epoch = *counter + 1;
    *counter = epoch;
  }
  __syncthreads();
  const int64_t first = static_cast<int64_t>(epoch & 1) * world * n;
  // per batch of FG_BATCH chunks a thread: the partial's chunks loaded
  // (and kept), stored to every other rank, then the others' taken and
  // summed in rank order, the residual added, and stored. Its own chunks are
  // never read twice, and a batch's loads are all in flight at once.
  uint16_t* slots = reinterpret_cast<uint16_t*>(mine + FG_DATA_AT) + first;
  for (int64_t c0 = lo + threadIdx.x; c0 < hi; c0 += FG_BATCH * static_cast<int64_t>(blockDim.x)) {
    uint4 v[FG_BATCH];
    uint4 rc[FG_BATCH];  // the residual's chunks, loaded with the partial's
#pragma unroll
    for (int k = 0; k < FG_BATCH; ++k) {
      const int64_t c = c0 + k * static_cast<int64_t>(blockDim.x);
      if (c < hi) v[k] = fg_res_no_neg_zero(fg_load_chunk(partial + 8 * c).w);
      if (c < hi) rc[k] = fg_load_chunk(res + 8 * c).w;
    }
    for (int r = 0; r < world; ++r) {
      if (r == rank) continue;
      uint16_t* to = reinterpret_cast<uint16_t*>(static_cast<char*>(regions.p[r]) + FG_DATA_AT) + first + rank * n;
#pragma unroll
      for (int k = 0; k < FG_BATCH; ++k) {
        const int64_t c = c0 + k * static_cast<int64_t>(blockDim.x);
        if (c < hi) *reinterpret_cast<uint4*>(to + 8 * c) = v[k];
      }
    }
#pragma unroll
    for (int k = 0; k < FG_BATCH; ++k) {
      const int64_t c = c0 + k * static_cast<int64_t>(blockDim.x);
      if (c >= hi) break;
      float s[8];
      for (int r = 0; r < world; ++r) {
        FgChunk<uint16_t> t;
        t.w = r == rank ? v[k] : fg_res_take(slots + r * n + 8 * c);
#pragma unroll
        for (int j = 0; j < 8; ++j) s[j] = r == 0 ? fg_bf16_to_float(t[j]) : s[j] + fg_bf16_to_float(t[j]);
      }
      FgChunk<uint16_t> r0;
      r0.w = rc[k];
      FgOutChunk o;
#pragma unroll
      for (int j = 0; j < 8; ++j) o.s[j] = fg_bf16_to_float(r0[j]) + fg_round_bf16(s[j]);
      fg_store_chunk_bf16(out + 8 * c, o);
    }
  }
}
