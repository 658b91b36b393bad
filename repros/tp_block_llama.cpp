// tp_block_llama: a Llama-style decoder block under Megatron tensor
// parallelism. RMSNorm -> QKV (column-parallel, heads sharded) -> causal
// attention -> O (row-parallel) -> all-reduce -> residual -> RMSNorm ->
// SwiGLU MLP (gate/up column-parallel, down row-parallel) -> all-reduce ->
// residual. CPU size: hidden 256, 8 heads x 32, MLP 1024, batch 2 x seq 64.
#include <cmath>

#include "repros/registry.h"

namespace fg {

namespace {
// sizes come from BlockDims (registry.h): the CPU size and the GPU anchor

Tensor attention(Session& s, const BlockDims& d, const Tensor& x, Inputs& w) {
  const int64_t heads = d.heads / s.world_size();
  const int64_t local = heads * d.head_dim, batch = x.shape()[0], seq = x.shape()[1];  // two lengths: _seq
  Tensor o;
  {
    Tensor h = rms_norm(x, w["ln1"], 1e-6);
    Tensor qkv = linear(h, w["w_qkv"]);
    auto split = [&](int64_t i) {
      return transpose(reshape(slice(qkv, -1, i * local, (i + 1) * local), {batch, seq, heads, d.head_dim}), 1, 2);
    };
    Tensor a = sdpa_causal(split(0), split(1), split(2));
    o = linear(reshape(transpose(a, 1, 2), {batch, seq, local}), w["w_o"]);
  }
  s.all_reduce_(o);
  return o;
}

Tensor mlp(Session& s, const BlockDims& d, const Tensor& x, Inputs& w) {
  Tensor down;
  {
    Tensor h = rms_norm(x, w["ln2"], 1e-6);
    down = linear(silu(linear(h, w["w_gate"])) * linear(h, w["w_up"]), w["w_down"]);
  }
  s.all_reduce_(down);
  return down;
}
}  // namespace

Repro tp_block_llama(const BlockDims& d) {
  const double sh = 1.0 / std::sqrt(static_cast<double>(d.hidden));
  std::vector<InputSpec> own = {
      {"w_gate", {d.mlp, d.hidden}, DType::BF16, normal(0.0, sh), {0}},
      {"w_up", {d.mlp, d.hidden}, DType::BF16, normal(0.0, sh), {0}},
      {"w_down", {d.hidden, d.mlp}, DType::BF16, normal(0.0, 1.0 / std::sqrt(static_cast<double>(d.mlp))), {1}},
  };
  return residual_block(
      d, "tp_block_llama",
      "Llama decoder block: RMSNorm, QKV, causal SDPA, O, all-reduce, RMSNorm, SwiGLU MLP, all-reduce",
      "repros/tp_block_llama.cpp", own, attention, mlp);
}

Repro tp_block_llama_seq() {
  Repro r = tp_block_llama();
  r.name = "tp_block_llama_seq";
  r.description = "tp_block_llama called again with the same shapes (no recompile) and at half the sequence "
                  "length (exactly one recompile)";
  BlockDims half = cpu_block();
  half.seq /= 2;
  r.reshaped_inputs = tp_block_llama(half).inputs;
  return r;
}

}  // namespace fg
