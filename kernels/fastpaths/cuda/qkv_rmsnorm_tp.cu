// qkv_rmsnorm_tp, CUDA: the distributed q/k RMSNorm. sumsq writes each row's
// partial sums of squares of the q and k columns this rank holds; the graph
// all-reduces them (one small NCCL call for both); apply normalizes by the
// full dimension. One block a row; the first half of its threads hold q,
// the second k, each up to 4 chunks of 8 elements (the prelude's 16-byte
// chunk loads and stores).
//   sumsq: qkv bf16 [rows, C] -> partial f32 [rows, 2]
//   apply: qkv, total f32 [rows, 2], q_weight, k_weight bf16 [L] -> out bf16 [rows, 2L]
//   L a multiple of 8. Threads: 2 x (whole warps covering L/8/4 chunks).
#define FG_CHUNKS 4

extern "C" __global__ void fastpath_qkv_rmsnorm_tp_sumsq(const uint16_t* __restrict__ qkv, float* __restrict__ partial,
                                                         int64_t C, int64_t q_start, int64_t k_start, int64_t L) {
  const int64_t row = blockIdx.x, chunks = L / 8;
  const int half = blockDim.x / 2, part = threadIdx.x >= half, lane = threadIdx.x - part * half;
  const uint16_t* x = qkv + row * C + (part == 0 ? q_start : k_start);
  float acc = 0.f;
#pragma unroll
  for (int k = 0; k < FG_CHUNKS; ++k) {
    const int64_t c = lane + k * static_cast<int64_t>(half);
    if (c >= chunks) break;
    const FgChunk<uint16_t> t = fg_load_chunk(x + 8 * c);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const float f = fg_bf16_to_float(t[j]);
      acc += f * f;
    }
  }
  const float q_sum = fg_block_sum(part == 0 ? acc : 0.f);
  const float k_sum = fg_block_sum(part == 1 ? acc : 0.f);
  if (threadIdx.x == 0) {
    partial[row * 2] = q_sum;
    partial[row * 2 + 1] = k_sum;
  }
}

extern "C" __global__ void fastpath_qkv_rmsnorm_tp_apply(const uint16_t* __restrict__ qkv,
                                                         const float* __restrict__ total,
                                                         const uint16_t* __restrict__ q_weight,
                                                         const uint16_t* __restrict__ k_weight,
                                                         uint16_t* __restrict__ out, int64_t C, int64_t q_start,
                                                         int64_t k_start, int64_t L, float eps, float divisor) {
  const int64_t row = blockIdx.x, chunks = L / 8;
  const int half = blockDim.x / 2, part = threadIdx.x >= half, lane = threadIdx.x - part * half;
  const uint16_t* x = qkv + row * C + (part == 0 ? q_start : k_start);
  const uint16_t* w = part == 0 ? q_weight : k_weight;
  const float inv = 1.f / sqrtf(total[row * 2 + part] / divisor + eps);
  uint16_t* o = out + row * 2 * L + part * L;
#pragma unroll
  for (int k = 0; k < FG_CHUNKS; ++k) {
    const int64_t c = lane + k * static_cast<int64_t>(half);
    if (c >= chunks) break;
    const FgChunk<uint16_t> t = fg_load_chunk(x + 8 * c);
    const FgChunk<uint16_t> wc = fg_load_chunk(w + 8 * c);
    FgOutChunk h;
#pragma unroll
    for (int j = 0; j < 8; ++j) h.s[j] = fg_round_bf16(fg_bf16_to_float(t[j]) * inv) * fg_bf16_to_float(wc[j]);
    fg_store_chunk_bf16(o + 8 * c, h);
  }
}
