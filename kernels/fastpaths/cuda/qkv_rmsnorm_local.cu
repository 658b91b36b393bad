// qkv_rmsnorm_local, CUDA: one block a row of the QKV projection; q and k
// each normalized by the RMS over the columns this rank holds. The first
// half of the block's threads hold q, the second k; each thread keeps up to
// 4 chunks of 8 elements in registers (the prelude's 16-byte chunk loads),
// and the two sums of squares are reduced across the block together. Its
// own reduction order (not the generic kernel's): `ab` compares distances
// to fp64 on cuda.
//   qkv bf16 [rows, C]; q_weight, k_weight bf16 [L]; out bf16 [rows, 2L];
//   L a multiple of 8. Threads: 2 x (whole warps covering L/8/4 chunks).
#define FG_CHUNKS 4

extern "C" __global__ void fastpath_qkv_rmsnorm_local(const uint16_t* __restrict__ qkv,
                                                      const uint16_t* __restrict__ q_weight,
                                                      const uint16_t* __restrict__ k_weight,
                                                      uint16_t* __restrict__ out, int64_t C, int64_t q_start,
                                                      int64_t k_start, int64_t L, float eps, float divisor) {
  const int64_t row = blockIdx.x, chunks = L / 8;
  const int half = blockDim.x / 2, part = threadIdx.x >= half, lane = threadIdx.x - part * half;
  const uint16_t* x = qkv + row * C + (part == 0 ? q_start : k_start);
  const uint16_t* w = part == 0 ? q_weight : k_weight;
  FgOutChunk v[FG_CHUNKS];
  float acc = 0.f;
#pragma unroll
  for (int k = 0; k < FG_CHUNKS; ++k) {
    const int64_t c = lane + k * static_cast<int64_t>(half);
    if (c >= chunks) break;
    const FgChunk<uint16_t> t = fg_load_chunk(x + 8 * c);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      v[k].s[j] = fg_bf16_to_float(t[j]);
      acc += v[k].s[j] * v[k].s[j];
    }
  }
  const float q_sum = fg_block_sum(part == 0 ? acc : 0.f);
  const float k_sum = fg_block_sum(part == 1 ? acc : 0.f);
  const float inv = 1.f / sqrtf((part == 0 ? q_sum : k_sum) / divisor + eps);
  uint16_t* o = out + row * 2 * L + part * L;
#pragma unroll
  for (int k = 0; k < FG_CHUNKS; ++k) {
    const int64_t c = lane + k * static_cast<int64_t>(half);
    if (c >= chunks) break;
    const FgChunk<uint16_t> wc = fg_load_chunk(w + 8 * c);
    FgOutChunk h;
#pragma unroll
    for (int j = 0; j < 8; ++j) h.s[j] = fg_round_bf16(v[k].s[j] * inv) * fg_bf16_to_float(wc[j]);
    fg_store_chunk_bf16(o + 8 * c, h);
  }
}
