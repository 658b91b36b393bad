// causal_attention, host: the reference of the cuda kernel (loops, not a
// tuned kernel: the cost model refuses it on the cpu backend, where `ab` and
// `prove` still run it). Per query row, in f32: the scores against keys 0 ..
// s (dot products in d order), their max, p = 2^((score - max) * log2(e) /
// sqrt(D)), the row sum of p, then the output as the sum over keys of p
// rounded to bf16 times v, divided by the row sum and rounded to bf16 once:
// the cuda kernel's arithmetic without its tiles (it keeps a running max per
// 128 keys and sums in another order).
//   fastpath_causal_attention:
//     p:  q bf16 [B, H, S, D], k, v bf16 [B, Hk, S, D] (contiguous), out bf16 [B, S, H, D]
//     iv: B, H, Hk, S, D
#include <limits>
#include <vector>

extern "C" void fastpath_causal_attention(void** p, const int64_t* iv, const double*) {
  const uint16_t* q = static_cast<const uint16_t*>(p[0]);
  const uint16_t* k = static_cast<const uint16_t*>(p[1]);
  const uint16_t* v = static_cast<const uint16_t*>(p[2]);
  uint16_t* out = static_cast<uint16_t*>(p[3]);
  const int64_t B = iv[0], H = iv[1], Hk = iv[2], S = iv[3], D = iv[4];
  const int64_t group = H / Hk;
  const float scale_log2 = static_cast<float>(1.4426950408889634 / std::sqrt(static_cast<double>(D)));
  std::vector<float> qr(static_cast<size_t>(D)), sc(static_cast<size_t>(S)), acc(static_cast<size_t>(D));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      const uint16_t* kh = k + (b * Hk + h / group) * S * D;
      const uint16_t* vh = v + (b * Hk + h / group) * S * D;
      for (int64_t s = 0; s < S; ++s) {
        const uint16_t* qs = q + ((b * H + h) * S + s) * D;
        for (int64_t d = 0; d < D; ++d) qr[static_cast<size_t>(d)] = fg_bf16_to_float(qs[d]);
        float mx = -std::numeric_limits<float>::infinity();
        for (int64_t t = 0; t <= s; ++t) {
          float dot = 0;
          for (int64_t d = 0; d < D; ++d) dot += qr[static_cast<size_t>(d)] * fg_bf16_to_float(kh[t * D + d]);
          sc[static_cast<size_t>(t)] = dot;
          mx = std::max(mx, dot);
        }
        float sum = 0;
        for (int64_t d = 0; d < D; ++d) acc[static_cast<size_t>(d)] = 0;
        for (int64_t t = 0; t <= s; ++t) {
          const float e = std::exp2((sc[static_cast<size_t>(t)] - mx) * scale_log2);
          sum += e;
          const float pb = fg_bf16_to_float(fg_float_to_bf16(e));
          for (int64_t d = 0; d < D; ++d) acc[static_cast<size_t>(d)] += pb * fg_bf16_to_float(vh[t * D + d]);
        }
        uint16_t* os = out + ((b * S + s) * H + h) * D;
        for (int64_t d = 0; d < D; ++d) os[d] = fg_float_to_bf16(acc[static_cast<size_t>(d)] / sum);
      }
    }
}
