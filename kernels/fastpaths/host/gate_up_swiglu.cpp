// gate_up_swiglu, host: the reference of the cuda kernel (a loop, not a
// tuned GEMM: the cost model refuses it on the cpu backend, where `ab` and
// `prove` still run it). Each output is one f32 dot product of h's row with
// the gate row and one with the up row, in k order, then silu(g) * u in f32
// and one rounding to bf16, as the cuda kernel rounds (its sums run in
// another order, and its SiLU uses the approximate ex2 and rcp).
//   p:  h bf16 [M, K], w_gate bf16 [N, K], w_up bf16 [N, K], out bf16 [M, N]
//   iv: M, N, K
#include <vector>

extern "C" void fastpath_gate_up_swiglu(void** p, const int64_t* iv, const double*) {
  const uint16_t* h = static_cast<const uint16_t*>(p[0]);
  const uint16_t* wg = static_cast<const uint16_t*>(p[1]);
  const uint16_t* wu = static_cast<const uint16_t*>(p[2]);
  uint16_t* out = static_cast<uint16_t*>(p[3]);
  const int64_t M = iv[0], N = iv[1], K = iv[2];
  std::vector<float> x(static_cast<size_t>(K));
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t k = 0; k < K; ++k) x[static_cast<size_t>(k)] = fg_bf16_to_float(h[m * K + k]);
    for (int64_t n = 0; n < N; ++n) {
      const uint16_t* gr = wg + n * K;
      const uint16_t* ur = wu + n * K;
      float g = 0, u = 0;
      for (int64_t k = 0; k < K; ++k) {
        g += x[static_cast<size_t>(k)] * fg_bf16_to_float(gr[k]);
        u += x[static_cast<size_t>(k)] * fg_bf16_to_float(ur[k]);
      }
      const float silu = g / (1.0f + std::exp(-g));
      out[m * N + n] = fg_float_to_bf16(silu * u);
    }
  }
}
