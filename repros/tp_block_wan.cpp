// tp_block_wan: a Wan-style block. Like tp_block_llama, but q and k get an
// RMSNorm over the full projected dimension (all heads). Heads are sharded,
// so each rank holds part of that dimension: the norm all-reduces the
// partial sums of squares first (a distributed RMSNorm). GELU-tanh MLP with a
// column-parallel bias.
#include <cmath>

#include "repros/registry.h"

namespace fg {

namespace {
// sizes come from BlockDims (registry.h): the CPU size and the GPU anchor

// RMSNorm over the full feature dim of a head-sharded activation.
Tensor distributed_rms_norm(Session& s, const BlockDims& d, const Tensor& t, const Tensor& w, double eps) {
  Tensor tf = cast(t, DType::F32);
  Tensor ss = sum(tf * tf, {-1}, true);
  s.all_reduce_(ss);
  Tensor r = rsqrt(ss / static_cast<double>(d.heads * d.head_dim) + eps);
  return cast(tf * r, t.dtype()) * w;
}

Tensor attention(Session& s, const BlockDims& d, const Tensor& x, Inputs& w) {
  const int64_t heads = d.heads / s.world_size();
  const int64_t local = heads * d.head_dim;
  Tensor o;
  {
    Tensor qkv = linear(rms_norm(x, w["ln1"], 1e-6), w["w_qkv"]);
    Tensor q = distributed_rms_norm(s, d, slice(qkv, -1, 0, local), w["q_norm"], 1e-6);
    Tensor k = distributed_rms_norm(s, d, slice(qkv, -1, local, 2 * local), w["k_norm"], 1e-6);
    auto heads_of = [&](const Tensor& t) { return transpose(reshape(t, {d.batch, d.seq, heads, d.head_dim}), 1, 2); };
    Tensor a = sdpa_causal(heads_of(q), heads_of(k), heads_of(slice(qkv, -1, 2 * local, 3 * local)));
    o = linear(reshape(transpose(a, 1, 2), {d.batch, d.seq, local}), w["w_o"]);
  }
  s.all_reduce_(o);
  return o;
}

Tensor mlp(Session& s, const BlockDims& d, const Tensor& x, Inputs& w) {
  Tensor down;
  {
    Tensor h = rms_norm(x, w["ln2"], 1e-6);
    down = linear(gelu(linear(h, w["w_fc1"], w["b_fc1"]), /*tanh_approx=*/true), w["w_fc2"]);
  }
  s.all_reduce_(down);
  return down;
}
}  // namespace

Repro tp_block_wan(const BlockDims& d) {
  const double sh = 1.0 / std::sqrt(static_cast<double>(d.hidden));
  std::vector<InputSpec> own = {
      {"q_norm", {d.heads * d.head_dim}, DType::BF16, normal(1.0, 0.1), {0}},
      {"k_norm", {d.heads * d.head_dim}, DType::BF16, normal(1.0, 0.1), {0}},
      {"w_fc1", {d.mlp, d.hidden}, DType::BF16, normal(0.0, sh), {0}},
      {"b_fc1", {d.mlp}, DType::BF16, normal(0.0, 0.1), {0}},
      {"w_fc2", {d.hidden, d.mlp}, DType::BF16, normal(0.0, 1.0 / std::sqrt(static_cast<double>(d.mlp))), {1}},
  };
  return residual_block(
      d, "tp_block_wan",
      "Wan block: RMSNorm, QKV, distributed q/k RMSNorm (all-reduce of sums of squares), causal SDPA, O, "
      "all-reduce, RMSNorm, GELU-tanh MLP, all-reduce",
      "repros/tp_block_wan.cpp", own, attention, mlp);
}

}  // namespace fg
