// tp_block_llama: a Llama-style decoder block under Megatron tensor
// parallelism. RMSNorm -> QKV (column-parallel, heads sharded) -> causal
// attention -> O (row-parallel) -> all-reduce -> residual -> RMSNorm ->
// SwiGLU MLP (gate/up column-parallel, down row-parallel) -> all-reduce ->
// residual. CPU size: hidden 256, 8 heads x 32, MLP 1024, batch 2 x seq 64.
#include <cmath>

#include "repros/registry.h"

namespace fg {

namespace {
constexpr int64_t kB = 2, kS = 64, kHidden = 256, kHeads = 8, kHeadDim = 32, kMlp = 1024;

Tensor attention(Session& s, const Tensor& x, Inputs& w) {
  const int64_t heads = kHeads / s.world_size();
  const int64_t local = heads * kHeadDim;
  Tensor o;
  {
    Tensor h = rms_norm(x, w["ln1"], 1e-6);
    Tensor qkv = linear(h, w["w_qkv"]);
    auto split = [&](int64_t i) {
      return transpose(reshape(slice(qkv, -1, i * local, (i + 1) * local), {kB, kS, heads, kHeadDim}), 1, 2);
    };
    Tensor a = sdpa_causal(split(0), split(1), split(2));
    o = linear(reshape(transpose(a, 1, 2), {kB, kS, local}), w["w_o"]);
  }
  s.all_reduce_(o);
  return o;
}

Tensor mlp(Session& s, const Tensor& x, Inputs& w) {
  Tensor d;
  {
    Tensor h = rms_norm(x, w["ln2"], 1e-6);
    d = linear(silu(linear(h, w["w_gate"])) * linear(h, w["w_up"]), w["w_down"]);
  }
  s.all_reduce_(d);
  return d;
}
}  // namespace

Repro tp_block_llama() {
  Repro r;
  r.name = "tp_block_llama";
  r.description = "Llama decoder block: RMSNorm, QKV, causal SDPA, O, all-reduce, RMSNorm, SwiGLU MLP, all-reduce";
  r.file = "repros/tp_block_llama.cpp";
  r.inputs = [](int world) {
    (void)world;
    double sh = 1.0 / std::sqrt(static_cast<double>(kHidden));
    return std::vector<InputSpec>{
        {"x", {kB, kS, kHidden}, DType::BF16, 0.0, 1.0},
        {"ln1", {kHidden}, DType::BF16, 1.0, 0.1},
        {"w_qkv", {3 * kHeads * kHeadDim, kHidden}, DType::BF16, 0.0, sh, 0, 3},
        {"w_o", {kHidden, kHeads * kHeadDim}, DType::BF16, 0.0, 1.0 / std::sqrt(double(kHeads * kHeadDim)), 1},
        {"ln2", {kHidden}, DType::BF16, 1.0, 0.1},
        {"w_gate", {kMlp, kHidden}, DType::BF16, 0.0, sh, 0},
        {"w_up", {kMlp, kHidden}, DType::BF16, 0.0, sh, 0},
        {"w_down", {kHidden, kMlp}, DType::BF16, 0.0, 1.0 / std::sqrt(double(kMlp)), 1},
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
