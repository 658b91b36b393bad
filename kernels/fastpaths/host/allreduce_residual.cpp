// allreduce_residual, host: the block's last all-reduce with the residual
// add after it, r + all_reduce(p), where no norm reads the sum (the block's
// output). The exchange is allreduce_sum's: every rank copies its partial
// into its own buffer and publishes the call's epoch; once every rank has
// published it, each reads all partials and sums them in rank order (f32,
// rounded once to bf16, as the all-reduce's result), then adds the residual
// (f32, rounded once to bf16, as the generic add), so every rank computes
// the same bits when the residual is the same on every rank. Two buffers
// alternate by epoch: a rank writes epoch e+1 only after every rank
// published e, that is, after all finished reading e-1. Repeated here, not
// shared with allreduce_sum.cpp: a proof hashes one file.
//   p:  partial bf16 [n], residual bf16 [n], out bf16 [n], then `world`
//       region pointers (rank order; a region: epoch at byte 0, then two
//       buffers of n bf16 from byte 64)
//   iv: n, world, rank, epoch
#include <sched.h>

static inline uint64_t* fg_res_epoch_of(void* region) { return static_cast<uint64_t*>(region); }
static inline uint16_t* fg_res_buffer_of(void* region, int64_t n, int64_t epoch) {
  return reinterpret_cast<uint16_t*>(static_cast<char*>(region) + 64) + (epoch & 1) * n;
}

extern "C" void fastpath_allreduce_residual(void** p, const int64_t* iv, const double*) {
  const uint16_t* partial = static_cast<const uint16_t*>(p[0]);
  const uint16_t* res = static_cast<const uint16_t*>(p[1]);
  uint16_t* out = static_cast<uint16_t*>(p[2]);
  void** regions = p + 3;
  const int64_t n = iv[0], world = iv[1], rank = iv[2], epoch = iv[3];
  if (world == 1) {
    // the sum of one partial is the partial as it is (-0.0 stays -0.0, as
    // the generic path's): only the add
    for (int64_t i = 0; i < n; ++i) out[i] = fg_float_to_bf16(fg_bf16_to_float(res[i]) + fg_bf16_to_float(partial[i]));
    return;
  }
  const uint16_t* parts[256];
  std::memcpy(fg_res_buffer_of(regions[rank], n, epoch), partial, static_cast<size_t>(n) * 2);
  __atomic_store_n(fg_res_epoch_of(regions[rank]), static_cast<uint64_t>(epoch), __ATOMIC_RELEASE);
  for (int64_t r = 0; r < world; ++r) {
    while (__atomic_load_n(fg_res_epoch_of(regions[r]), __ATOMIC_ACQUIRE) < static_cast<uint64_t>(epoch)) sched_yield();
    parts[r] = fg_res_buffer_of(regions[r], n, epoch);
  }
  for (int64_t i = 0; i < n; ++i) {
    float s = 0;
    for (int64_t r = 0; r < world; ++r) s += fg_bf16_to_float(parts[r][i]);
    out[i] = fg_float_to_bf16(fg_bf16_to_float(res[i]) + fg_round_bf16(s));
  }
}
