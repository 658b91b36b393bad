// qkv_rmsnorm_local, host: q and k columns of one QKV projection row, each
// normalized by the RMS over the columns this rank holds, in one pass.
// Arithmetic and rounding follow the generic kernel term for term (f32 sum
// of squares in column order, 1/sqrt, rounding to bf16 before the weight).
//   p:  qkv bf16 [rows, C], q_weight bf16 [L], k_weight bf16 [L], out bf16 [rows, 2L]
//   iv: rows, C, q_start, k_start, L        dv: eps, divisor
extern "C" void fastpath_qkv_rmsnorm_local(void** p, const int64_t* iv, const double* dv) {
  const uint16_t* qkv = static_cast<const uint16_t*>(p[0]);
  const uint16_t* w[2] = {static_cast<const uint16_t*>(p[1]), static_cast<const uint16_t*>(p[2])};
  uint16_t* out = static_cast<uint16_t*>(p[3]);
  const int64_t rows = iv[0], C = iv[1], L = iv[4];
  const int64_t start[2] = {iv[2], iv[3]};
  const float eps = static_cast<float>(dv[0]), n = static_cast<float>(dv[1]);
  for (int64_t row = 0; row < rows; ++row) {
    for (int part = 0; part < 2; ++part) {
      const uint16_t* x = qkv + row * C + start[part];
      float acc = 0;
      for (int64_t c = 0; c < L; ++c) {
        const float t = fg_bf16_to_float(x[c]);
        const float sq = t * t;
        acc += sq;
      }
      const float inv = static_cast<float>(1) / std::sqrt(acc / n + eps);
      uint16_t* o = out + row * 2 * L + part * L;
      for (int64_t c = 0; c < L; ++c) {
        const float y = fg_round_bf16(fg_bf16_to_float(x[c]) * inv);
        o[c] = fg_float_to_bf16(y * fg_bf16_to_float(w[part][c]));
      }
    }
  }
}
