// allreduce_residual_rmsnorm, CUDA: a one-shot all-reduce over the ranks'
// buffers, exchanged once with CUDA IPC, fused with the residual add and the
// RMSNorm: one kernel instead of an NCCL all-reduce and a norm kernel.
//
// Each rank's region (rank order in `regions`): per block a launch counter
// (read and written by that block of its own rank only) at byte 0, per block
// a flag (read by the other ranks) at byte 4096, then two buffers of
// rows*H bf16 at byte 8192. Block b handles rows b, b + gridDim.x, ... on
// every rank (the same grid everywhere, no more blocks than can be resident
// at once, so that no block waits on one that cannot start). Per launch,
// block b: counts the launch (epoch e, kept on the device, so a CUDA graph
// replay counts too), copies its rows of the partial into buffer e&1,
// publishes flag[b] = e (release, system scope), waits until every rank's
// flag[b] >= e (acquire), then for each of its rows sums the ranks' partials
// in rank order (f32, rounded once to bf16: every rank computes the same
// bits), adds the residual, and normalizes. A rank writes buffer e&1 again
// at epoch e+2 only, after every rank published e+1, that is, after every
// rank's block b finished reading epoch e.
//
// Each thread handles up to 4 chunks of 8 elements (the prelude's 16-byte
// chunk loads and stores), kept in registers between the sum and the
// normalization.
//   partial, residual bf16 [rows, H]; weight bf16 [H]; out bf16 [2, rows, H]
//   (residual sum, normalized); H a multiple of 8, at most 32768.
struct FgRegions { void* p[8]; };

__device__ __forceinline__ void fg_store_release(unsigned* p, unsigned v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ unsigned fg_load_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
#define FG_CHUNKS 4

extern "C" __global__ void fastpath_allreduce_residual_rmsnorm(const uint16_t* __restrict__ partial,
                                                               const uint16_t* __restrict__ residual,
                                                               const uint16_t* __restrict__ weight,
                                                               uint16_t* __restrict__ out, FgRegions regions,
                                                               int64_t rows, int64_t H, int world, int rank,
                                                               float eps) {
  __shared__ unsigned epoch;
  const int64_t n = rows * H, chunks = H / 8;
  const uint16_t* parts[8];
  if (world == 1) {
    parts[0] = partial;
  } else {
    char* mine = static_cast<char*>(regions.p[rank]);
    if (threadIdx.x == 0) {
      unsigned* counter = reinterpret_cast<unsigned*>(mine) + blockIdx.x;
      epoch = *counter + 1;
      *counter = epoch;
    }
    __syncthreads();
    const unsigned e = epoch;
    uint16_t* slot = reinterpret_cast<uint16_t*>(mine + 8192) + (e & 1) * n;
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x)
      for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x)
        *reinterpret_cast<uint4*>(slot + row * H + 8 * c) = fg_load_chunk(partial + row * H + 8 * c).w;
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence_system();
      fg_store_release(reinterpret_cast<unsigned*>(mine + 4096) + blockIdx.x, e);
    }
    if (threadIdx.x < world) {
      const unsigned* flag = reinterpret_cast<const unsigned*>(static_cast<char*>(regions.p[threadIdx.x]) + 4096) +
                             blockIdx.x;
      while (fg_load_acquire(flag) < e) {
      }
    }
    __syncthreads();
    for (int r = 0; r < world; ++r)
      parts[r] = reinterpret_cast<const uint16_t*>(static_cast<char*>(regions.p[r]) + 8192) + (e & 1) * n;
  }
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    FgOutChunk v[FG_CHUNKS];
    float acc = 0.f;
#pragma unroll
    for (int k = 0; k < FG_CHUNKS; ++k) {
      const int64_t c = threadIdx.x + k * static_cast<int64_t>(blockDim.x);
      if (c >= chunks) break;
      const int64_t i = row * H + 8 * c;
      float s[8];
      const FgChunk<uint16_t> t0 = fg_load_chunk(parts[0] + i);
#pragma unroll
      for (int j = 0; j < 8; ++j) s[j] = fg_bf16_to_float(t0[j]);
      for (int r = 1; r < world; ++r) {
        const FgChunk<uint16_t> t = fg_load_chunk(parts[r] + i);
#pragma unroll
        for (int j = 0; j < 8; ++j) s[j] += fg_bf16_to_float(t[j]);
      }
      const FgChunk<uint16_t> res = fg_load_chunk(residual + i);
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        v[k].s[j] = fg_bf16_to_float(res[j]) + fg_round_bf16(s[j]);
        acc += v[k].s[j] * v[k].s[j];
      }
      fg_store_chunk_bf16(out + i, v[k]);
    }
    acc = fg_block_sum(acc);
    const float inv = 1.f / sqrtf(acc / static_cast<float>(H) + eps);
#pragma unroll
    for (int k = 0; k < FG_CHUNKS; ++k) {
      const int64_t c = threadIdx.x + k * static_cast<int64_t>(blockDim.x);
      if (c >= chunks) break;
      const FgChunk<uint16_t> w = fg_load_chunk(weight + 8 * c);
      FgOutChunk h;
#pragma unroll
      for (int j = 0; j < 8; ++j) h.s[j] = fg_round_bf16(v[k].s[j] * inv) * fg_bf16_to_float(w[j]);
      fg_store_chunk_bf16(out + n + row * H + 8 * c, h);
    }
  }
}
