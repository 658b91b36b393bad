// gate_up_swiglu and rmsnorm_gate_up_swiglu, host: the references of the
// cuda kernels (loops, not tuned GEMMs: the cost model refuses them on the
// cpu backend, where `ab` and `prove` still run them). Each output is one
// f32 dot product of h's row with the gate row and one with the up row, in k
// order, then silu(g) * u in f32 and one rounding to bf16, as the cuda
// kernel rounds (its sums run in another order, and its SiLU uses the
// approximate ex2 and rcp).
//   fastpath_gate_up_swiglu:
//     p:  h bf16 [M, K], w_gate bf16 [N, K], w_up bf16 [N, K], out bf16 [M, N]
//     iv: M, N, K
//   fastpath_rmsnorm_gate_up_swiglu: h = rms_norm(x) * gamma folded as the
//   cuda kernel folds it: the weights times gamma rounded to bf16 once, the
//   dot products over x, each scaled by the row's r = 1 / sqrt(sum_k x^2 *
//   (1 / divisor) + eps) (f32, k order) before the SiLU and the product.
//     p:  x bf16 [M, K], gamma bf16 [K], w_gate, w_up bf16 [N, K], out bf16 [M, N]
//     iv: M, N, K;  dv: eps, divisor
#include <vector>

namespace {

// out[m, n] = bf16(silu(r_m g) * (r_m u)), g and u the f32 dot products of
// h's row m with the gate and up rows n in k order; r null: r_m = 1
void fg_swiglu_rows(const uint16_t* h, const uint16_t* wg, const uint16_t* wu, const float* r, uint16_t* out,
                    int64_t M, int64_t N, int64_t K) {
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
      if (r) {
        g *= r[m];
        u *= r[m];
      }
      const float silu = g / (1.0f + std::exp(-g));
      out[m * N + n] = fg_float_to_bf16(silu * u);
    }
  }
}

}  // namespace

extern "C" void fastpath_gate_up_swiglu(void** p, const int64_t* iv, const double*) {
  fg_swiglu_rows(static_cast<const uint16_t*>(p[0]), static_cast<const uint16_t*>(p[1]),
                 static_cast<const uint16_t*>(p[2]), nullptr, static_cast<uint16_t*>(p[3]), iv[0], iv[1], iv[2]);
}

extern "C" void fastpath_rmsnorm_gate_up_swiglu(void** p, const int64_t* iv, const double* dv) {
  const uint16_t* x = static_cast<const uint16_t*>(p[0]);
  const uint16_t* gamma = static_cast<const uint16_t*>(p[1]);
  const int64_t M = iv[0], N = iv[1], K = iv[2];
  const float eps = static_cast<float>(dv[0]), inv_div = static_cast<float>(1.0 / dv[1]);
  // gamma folded into the weights, one rounding each
  std::vector<uint16_t> w(static_cast<size_t>(2 * N * K));
  for (int64_t i = 0; i < 2; ++i) {
    const uint16_t* src = static_cast<const uint16_t*>(p[2 + i]);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k)
        w[static_cast<size_t>((i * N + n) * K + k)] =
            fg_float_to_bf16(fg_bf16_to_float(src[n * K + k]) * fg_bf16_to_float(gamma[k]));
  }
  std::vector<float> r(static_cast<size_t>(M));
  for (int64_t m = 0; m < M; ++m) {
    float ss = 0;
    for (int64_t k = 0; k < K; ++k) {
      const float v = fg_bf16_to_float(x[m * K + k]);
      ss += v * v;
    }
    r[static_cast<size_t>(m)] = 1.0f / std::sqrt(ss * inv_div + eps);
  }
  fg_swiglu_rows(x, w.data(), w.data() + N * K, r.data(), static_cast<uint16_t*>(p[4]), M, N, K);
}
