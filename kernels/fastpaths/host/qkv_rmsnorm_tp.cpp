// qkv_rmsnorm_tp, host: the q/k RMSNorm of a head-sharded QKV projection as a
// distributed norm. Stage sumsq writes each row's partial sums of squares of
// the q and k columns this rank holds; the graph all-reduces them (one small
// collective for both); stage apply normalizes by the full dimension.
//   sumsq: p = qkv bf16 [rows, C], partial f32 [rows, 2]
//   apply: p = qkv bf16 [rows, C], total f32 [rows, 2], q_weight, k_weight bf16 [L],
//          out bf16 [rows, 2L]
//   iv: rows, C, q_start, k_start, L        dv: eps, divisor (the full dimension)
extern "C" void fastpath_qkv_rmsnorm_tp_sumsq(void** p, const int64_t* iv, const double*) {
  const uint16_t* qkv = static_cast<const uint16_t*>(p[0]);
  float* partial = static_cast<float*>(p[1]);
  const int64_t rows = iv[0], C = iv[1], L = iv[4];
  const int64_t start[2] = {iv[2], iv[3]};
  for (int64_t row = 0; row < rows; ++row)
    for (int part = 0; part < 2; ++part) {
      const uint16_t* x = qkv + row * C + start[part];
      float acc = 0;
      for (int64_t c = 0; c < L; ++c) {
        const float t = fg_bf16_to_float(x[c]);
        const float sq = t * t;
        acc += sq;
      }
      partial[row * 2 + part] = acc;
    }
}

extern "C" void fastpath_qkv_rmsnorm_tp_apply(void** p, const int64_t* iv, const double* dv) {
  const uint16_t* qkv = static_cast<const uint16_t*>(p[0]);
  const float* total = static_cast<const float*>(p[1]);
  const uint16_t* w[2] = {static_cast<const uint16_t*>(p[2]), static_cast<const uint16_t*>(p[3])};
  uint16_t* out = static_cast<uint16_t*>(p[4]);
  const int64_t rows = iv[0], C = iv[1], L = iv[4];
  const int64_t start[2] = {iv[2], iv[3]};
  const float eps = static_cast<float>(dv[0]), n = static_cast<float>(dv[1]);
  for (int64_t row = 0; row < rows; ++row)
    for (int part = 0; part < 2; ++part) {
      const uint16_t* x = qkv + row * C + start[part];
      const float inv = static_cast<float>(1) / std::sqrt(total[row * 2 + part] / n + eps);
      uint16_t* o = out + row * 2 * L + part * L;
      for (int64_t c = 0; c < L; ++c) {
        const float y = fg_round_bf16(fg_bf16_to_float(x[c]) * inv);
        o[c] = fg_float_to_bf16(y * fg_bf16_to_float(w[part][c]));
      }
    }
}
