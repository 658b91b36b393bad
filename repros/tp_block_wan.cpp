// tp_block_wan: a Wan-style block. Like tp_block_llama, but q and k get an
// RMSNorm over the full projected dimension (all heads). Heads are sharded,
// so each rank holds part of that dimension: the norm all-reduces the
// partial sums of squares first (a distributed RMSNorm). GELU-tanh MLP with a
// column-parallel bias.
#include <cmath>

#include "repros/registry.h"

namespace fg {

namespace {
constexpr int64_t kB = 2, kS = 64, kHidden = 256, kHeads = 8, kHeadDim = 32, kMlp = 1024;

// RMSNorm over the full feature dim of a head-sharded activation.
Tensor distributed_rms_norm(Session& s, const Tensor& t, const Tensor& w, double eps) {
  Tensor tf = cast(t, DType::F32);
  Tensor ss = sum(tf * tf, {-1}, true);
  s.all_reduce_(ss);
  Tensor r = rsqrt(ss / static_cast<double>(kHeads * kHeadDim) + eps);
  return cast(tf * r, t.dtype()) * w;
}

Tensor attention(Session& s, const Tensor& x, Inputs& w) {
  const int64_t heads = kHeads / s.world_size();
  const int64_t local = heads * kHeadDim;
  Tensor o;
  {
    Tensor qkv = linear(rms_norm(x, w["ln1"], 1e-6), w["w_qkv"]);
    Tensor q = distributed_rms_norm(s, slice(qkv, -1, 0, local), w["q_norm"], 1e-6);
    Tensor k = distributed_rms_norm(s, slice(qkv, -1, local, 2 * local), w["k_norm"], 1e-6);
    auto heads_of = [&](const Tensor& t) { return transpose(reshape(t, {kB, kS, heads, kHeadDim}), 1, 2); };
    Tensor a = sdpa_causal(heads_of(q), heads_of(k), heads_of(slice(qkv, -1, 2 * local, 3 * local)));
    o = linear(reshape(transpose(a, 1, 2), {kB, kS, local}), w["w_o"]);
  }
  s.all_reduce_(o);
  return o;
}

Tensor mlp(Session& s, const Tensor& x, Inputs& w) {
  Tensor d;
  {
    Tensor h = rms_norm(x, w["ln2"], 1e-6);
    d = linear(gelu(linear(h, w["w_fc1"], w["b_fc1"]), /*tanh_approx=*/true), w["w_fc2"]);
  }
  s.all_reduce_(d);
  return d;
}
}  // namespace

Repro tp_block_wan() {
  Repro r;
  r.name = "tp_block_wan";
  r.description = "Wan block: RMSNorm, QKV, distributed q/k RMSNorm (all-reduce of sums of squares), causal SDPA, O, "
                  "all-reduce, RMSNorm, GELU-tanh MLP, all-reduce";
  r.file = "repros/tp_block_wan.cpp";
  r.inputs = [](int world) {
    (void)world;
    double sh = 1.0 / std::sqrt(static_cast<double>(kHidden));
    return std::vector<InputSpec>{
        {"x", {kB, kS, kHidden}, DType::BF16, 0.0, 1.0},
        {"ln1", {kHidden}, DType::BF16, 1.0, 0.1},
        {"w_qkv", {3 * kHeads * kHeadDim, kHidden}, DType::BF16, 0.0, sh, 0, 3},
        {"q_norm", {kHeads * kHeadDim}, DType::BF16, 1.0, 0.1, 0},
        {"k_norm", {kHeads * kHeadDim}, DType::BF16, 1.0, 0.1, 0},
        {"w_o", {kHidden, kHeads * kHeadDim}, DType::BF16, 0.0, 1.0 / std::sqrt(double(kHeads * kHeadDim)), 1},
        {"ln2", {kHidden}, DType::BF16, 1.0, 0.1},
        {"w_fc1", {kMlp, kHidden}, DType::BF16, 0.0, sh, 0},
        {"b_fc1", {kMlp}, DType::BF16, 0.0, 0.1, 0},
        {"w_fc2", {kHidden, kMlp}, DType::BF16, 0.0, 1.0 / std::sqrt(double(kMlp)), 1},
    };
  };
  r.forward = [](Session& s, Inputs& w) {
    Tensor x = w["x"];
    Tensor x2 = x + attention(s, x, w);
    return std::vector<Tensor>{x2 + mlp(s, x2, w)};
  };
  r.outputs = {"out"};
  r.max_world = kHeads;
  return r;
}

}  // namespace fg
