#include "fusion/passes/attention.h"

#include <cmath>
#include <limits>

namespace fg {

const char* attention_kernel_name(AttentionKernel k) {
  switch (k) {
    case AttentionKernel::CuDnn: return "cudnn";
    case AttentionKernel::Flash: return "flash";
    case AttentionKernel::MemEfficient: return "memory-efficient";
    case AttentionKernel::Math: return "math";
  }
  return "?";
}

AttentionKernel choose_attention_kernel(const Graph& g, const Node& n) {
  const TensorType& q = g.node(n.inputs[0]).type;
  const Shape& k = g.node(n.inputs[1]).type.shape;
  const Shape& v = g.node(n.inputs[2]).type.shape;
  const bool half = q.dtype == DType::BF16 || q.dtype == DType::F16;
  const int64_t d = q.shape[3], dv = v[3], queries = q.shape[2], keys = k[2];
  const bool causal = attr_int_or(n.attrs, "causal", 1) != 0;
  const bool empty = numel(q.shape) == 0 || keys == 0;
  if (empty) return AttentionKernel::Math;
  if (half && d % 8 == 0 && dv % 8 == 0 && d <= 256 && dv <= 256 && keys != 1 && q.shape[0] <= 65535 &&
      q.shape[1] <= 65535)
    return AttentionKernel::CuDnn;
  if (half && d == dv && d <= 256 && (!causal || queries == keys)) return AttentionKernel::Flash;
  const int64_t align = half ? 8 : 4;
  if ((half || q.dtype == DType::F32) && d % align == 0 && dv % align == 0) return AttentionKernel::MemEfficient;
  return AttentionKernel::Math;
}

namespace {

// Emits the replacement of one sdpa node, each new node at its location.
class AttentionWriter {
 public:
  AttentionWriter(Graph& out, const Node& n) : out_(out), loc_(n.loc) {}

  int emit(Op op, std::vector<int> in, Attrs attrs = {}, const char* origin = nullptr) {
    const int id = out_.add(op, std::move(in), std::move(attrs), nullptr, {}, loc_);
    if (origin) out_.nodes[static_cast<size_t>(id)].origin = origin;
    return id;
  }
  int scalar(double v, DType t) {
    TensorType ty{t, {}};
    return out_.add(Op::Full, {}, {{"value", v}}, &ty, {}, loc_);
  }
  const TensorType& type(int id) const { return out_.node(id).type; }
  int to(int x, DType t) { return type(x).dtype == t ? x : emit(Op::Cast, {x}, {{"to", std::string(dtype_name(t))}}); }

  // [B, Hkv, S, D] -> [B, Hkv * group, S, D], each head `group` times in a
  // row (repeat_interleave over the heads)
  int repeat_heads(int x, int64_t group) {
    if (group == 1) return x;
    const Shape s = type(x).shape;
    int y = emit(Op::Reshape, {x}, {{"shape", std::vector<int64_t>{s[0], s[1], 1, s[2], s[3]}}}, "repeat_interleave");
    y = emit(Op::Expand, {y}, {{"shape", std::vector<int64_t>{s[0], s[1], group, s[2], s[3]}}}, "repeat_interleave");
    return emit(Op::Reshape, {y}, {{"shape", std::vector<int64_t>{s[0], s[1] * group, s[2], s[3]}}},
                "repeat_interleave");
  }

  // ATen's math form, as torch 2.x composes it: q and k^T scaled by
  // sqrt(scale) each before the product, in f32 for bf16/f16
  int math(int q, int k, int v, bool causal) {
    const DType t = type(q).dtype;
    const DType acc = t == DType::F64 ? DType::F64 : DType::F32;
    const Shape qs = type(q).shape;
    const int64_t group = qs[1] / type(k).shape[1], queries = qs[2], keys = type(k).shape[2];
    const double root = std::sqrt(1.0 / std::sqrt(static_cast<double>(qs[3])));
    const int qf = emit(Op::Mul, {to(q, acc), scalar(root, acc)});
    int kt = emit(Op::Transpose, {repeat_heads(to(k, acc), group)}, {{"dim0", int64_t{-2}}, {"dim1", int64_t{-1}}});
    kt = emit(Op::Mul, {kt, scalar(root, acc)});
    int s = emit(Op::Matmul, {qf, kt}, {}, "bmm");
    if (causal) {
      // ones(L, S).tril() as a mask of 0 and -inf: key j - query i <= 0
      int i = emit(Op::Reshape, {emit(Op::Arange, {}, {{"end", static_cast<double>(queries)}}, "tril")},
                   {{"shape", std::vector<int64_t>{queries, 1}}}, "tril");
      int j = emit(Op::Reshape, {emit(Op::Arange, {}, {{"end", static_cast<double>(keys)}}, "tril")},
                   {{"shape", std::vector<int64_t>{1, keys}}}, "tril");
      int keep = emit(Op::Le, {emit(Op::Sub, {j, i}, {}, "tril"), scalar(0.0, DType::I64)}, {}, "tril");
      int mask = emit(Op::Where, {keep, scalar(0.0, acc), scalar(-std::numeric_limits<double>::infinity(), acc)});
      s = emit(Op::Add, {s, mask});
    }
    // _safe_softmax: a row of -inf only is zeros, not NaN
    int p = emit(Op::Softmax, {s}, {{"dim", int64_t{-1}}}, "_safe_softmax");
    int live = emit(Op::Ne, {s, scalar(-std::numeric_limits<double>::infinity(), acc)}, {}, "_safe_softmax");
    live = emit(Op::Amax, {to(live, acc)}, {{"dims", std::vector<int64_t>{-1}}, {"keepdim", int64_t{1}}},
                "_safe_softmax");
    int dead = emit(Op::Eq, {live, scalar(0.0, acc)}, {}, "_safe_softmax");
    p = emit(Op::Where, {dead, scalar(0.0, acc), p}, {}, "_safe_softmax");
    int o = emit(Op::Matmul, {p, repeat_heads(to(v, acc), group)}, {}, "bmm");
    return to(o, t);
  }

  // flash over a head dim padded to a multiple of 8, the scale of the
  // head dim given, the result sliced back to it
  int padded_flash(const Node& n, int q, int k, int v) {
    const int64_t d = type(q).shape[3];
    const int64_t pad = (8 - d % 8) % 8;
    auto padded = [&](int x) { return emit(Op::Pad, {x}, {{"pad", std::vector<int64_t>{0, pad}}}, "constant_pad_nd"); };
    Attrs a = n.attrs;
    a["scale"] = 1.0 / std::sqrt(static_cast<double>(d));
    int o = emit(Op::Sdpa, {padded(q), padded(k), padded(v)}, a);
    return emit(Op::Slice, {o}, {{"dim", int64_t{-1}}, {"start", int64_t{0}}, {"end", d}});
  }

 private:
  Graph& out_;
  SourceLoc loc_;
};

}  // namespace

Graph lower_attention_choices(const Graph& g, std::vector<LedgerEntry>* ledger) {
  bool any = false;
  for (const Node& n : g.nodes) any = any || n.op == Op::Sdpa;
  if (!any) return g;
  return rebuild(g, [&](const Node& n, const std::vector<int>& in, const std::vector<int>&, Graph& out) {
    if (n.op != Op::Sdpa || n.attrs.count("scale")) return copy_node(out, n, in);
    const AttentionKernel kernel = choose_attention_kernel(g, n);
    const bool pad = kernel == AttentionKernel::Flash && g.node(n.inputs[0]).type.shape[3] % 8 != 0;
    if (kernel != AttentionKernel::Math && !pad) return copy_node(out, n, in);
    LedgerEntry e;
    e.first = "attention";
    e.second = g.ref(n.id) + " (sdpa, " + attention_kernel_name(kernel) + ")";
    e.add_source(n.loc);
    e.fused = true;  // a rewrite made, as dead_code's and no-op casts' entries
    e.reason = pad ? Reject::AttentionHeadDimPadded : Reject::AttentionMathForm;
    if (ledger) ledger->push_back(e);
    AttentionWriter w(out, n);
    return pad ? w.padded_flash(n, in[0], in[1], in[2])
               : w.math(in[0], in[1], in[2], attr_int_or(n.attrs, "causal", 1) != 0);
  });
}

}  // namespace fg
