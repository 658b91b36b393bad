// allreduce_residual_rmsnorm, host: a one-shot all-reduce over the ranks'
// shared-memory buffers fused with the residual add and the RMSNorm.
// Every rank copies its partial into its own buffer and publishes the call's
// epoch; once every rank has published it, each reads all partials and sums
// them in rank order (f32, rounded once to bf16), so every rank computes the
// same bits. Two buffers alternate by epoch: a rank writes epoch e+1 only
// after every rank published e, that is, after all finished reading e-1.
//   p:  partial bf16 [rows, H], residual bf16 [rows, H], weight bf16 [H],
//       out bf16 [2, rows, H] (residual sum, normalized), then `world`
//       region pointers (rank order; a region: epoch at byte 0, then two
//       buffers of rows*H bf16 from byte 64)
//   iv: rows, H, world, rank, epoch        dv: eps
#include <sched.h>

#include <vector>

static inline uint64_t* fg_epoch_of(void* region) { return static_cast<uint64_t*>(region); }
static inline uint16_t* fg_buffer_of(void* region, int64_t n, int64_t epoch) {
  return reinterpret_cast<uint16_t*>(static_cast<char*>(region) + 64) + (epoch & 1) * n;
}

extern "C" void fastpath_allreduce_residual_rmsnorm(void** p, const int64_t* iv, const double* dv) {
  const uint16_t* partial = static_cast<const uint16_t*>(p[0]);
  const uint16_t* res = static_cast<const uint16_t*>(p[1]);
  const uint16_t* w = static_cast<const uint16_t*>(p[2]);
  uint16_t* out = static_cast<uint16_t*>(p[3]);
  void** regions = p + 4;
  const int64_t rows = iv[0], H = iv[1], world = iv[2], rank = iv[3], epoch = iv[4];
  const int64_t n = rows * H;
  const float eps = static_cast<float>(dv[0]);
  const uint16_t* parts[256];
  if (world == 1) {
    parts[0] = partial;
  } else {
    std::memcpy(fg_buffer_of(regions[rank], n, epoch), partial, static_cast<size_t>(n) * 2);
    __atomic_store_n(fg_epoch_of(regions[rank]), static_cast<uint64_t>(epoch), __ATOMIC_RELEASE);
    for (int64_t r = 0; r < world; ++r) {
      while (__atomic_load_n(fg_epoch_of(regions[r]), __ATOMIC_ACQUIRE) < static_cast<uint64_t>(epoch)) sched_yield();
      parts[r] = fg_buffer_of(regions[r], n, epoch);
    }
  }
  // the sum stays f32 within the row, as in the generic kernel; it is rounded
  // to bf16 only where it is stored
  std::vector<float> x2(static_cast<size_t>(H));
  for (int64_t row = 0; row < rows; ++row) {
    float acc = 0;
    for (int64_t c = 0; c < H; ++c) {
      const int64_t i = row * H + c;
      float s = 0;
      for (int64_t r = 0; r < world; ++r) s += fg_bf16_to_float(parts[r][i]);
      const float v = fg_bf16_to_float(res[i]) + fg_round_bf16(s);
      x2[static_cast<size_t>(c)] = v;
      out[i] = fg_float_to_bf16(v);
      const float sq = v * v;
      acc += sq;
    }
    const float inv = static_cast<float>(1) / std::sqrt(acc / static_cast<float>(H) + eps);
    for (int64_t c = 0; c < H; ++c) {
      const float y = fg_round_bf16(x2[static_cast<size_t>(c)] * inv);
      out[n + row * H + c] = fg_float_to_bf16(y * fg_bf16_to_float(w[c]));
    }
  }
}
