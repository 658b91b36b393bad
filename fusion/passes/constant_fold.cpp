#include "fusion/passes/constant_fold.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "fusion/ir/text.h"

namespace fg {

namespace {

// f32 to bf16, nearest even (NaN stays NaN)
double to_bf16(float f) {
  if (std::isnan(f)) return f;
  uint32_t b;
  std::memcpy(&b, &f, 4);
  b += 0x7FFFu + ((b >> 16) & 1u);
  b &= 0xFFFF0000u;
  std::memcpy(&f, &b, 4);
  return f;
}

// f32 to f16, nearest even, subnormals and overflow to inf included
double to_f16(float f) {
  if (!std::isfinite(f) || f == 0.0f) return f;
  const double a = std::fabs(static_cast<double>(f));
  int e = 0;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1): the leading bit is 2^(e-1)
  const double ulp = std::ldexp(1.0, std::max(e - 1, -14) - 10);
  double r = std::nearbyint(a / ulp) * ulp;
  if (r >= 65520.0) r = std::numeric_limits<double>::infinity();
  return std::copysign(r, static_cast<double>(f));
}

// A number as a tensor of dtype t holds it (eager computes a 16-bit result
// in f32 and rounds it); none where an integer cannot hold it.
std::optional<double> round_to(double v, DType t) {
  switch (t) {
    case DType::F64: return v;
    case DType::F32: return static_cast<double>(static_cast<float>(v));
    case DType::BF16: return to_bf16(static_cast<float>(v));
    case DType::F16: return to_f16(static_cast<float>(v));
    case DType::Bool: return v != 0.0 ? 1.0 : 0.0;  // NaN is true, as in torch
    case DType::I64: case DType::I32: case DType::U8: {
      if (!std::isfinite(v)) return std::nullopt;
      const double r = std::trunc(v);
      const double lo = t == DType::U8 ? 0.0 : t == DType::I32 ? -2147483648.0 : -9223372036854775808.0;
      const double hi = t == DType::U8 ? 255.0 : t == DType::I32 ? 2147483647.0 : 9223372036854774784.0;
      if (r < lo || r > hi) return std::nullopt;
      return r;
    }
  }
  return std::nullopt;
}

// ATen's pointwise-tagged ops fusegate has, on one element of each input;
// none for any other op
std::optional<double> apply_op(const Node& n, const std::vector<double>& a) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto isnan = [](double x) { return std::isnan(x); };
  double r = 0;
  switch (n.op) {
    case Op::Add: r = a[0] + a[1]; break;
    case Op::Sub: r = a[0] - a[1]; break;
    case Op::Mul: r = a[0] * a[1]; break;
    case Op::Div: r = a[0] / a[1]; break;
    case Op::Pow: r = std::pow(a[0], a[1]); break;
    case Op::Maximum: r = isnan(a[0]) || isnan(a[1]) ? nan : std::max(a[0], a[1]); break;
    case Op::Minimum: r = isnan(a[0]) || isnan(a[1]) ? nan : std::min(a[0], a[1]); break;
    case Op::Neg: r = -a[0]; break;
    case Op::Exp: r = std::exp(a[0]); break;
    case Op::Log: r = std::log(a[0]); break;
    case Op::Sqrt: r = std::sqrt(a[0]); break;
    case Op::Rsqrt: r = 1.0 / std::sqrt(a[0]); break;
    case Op::Relu: r = isnan(a[0]) ? a[0] : std::max(a[0], 0.0); break;
    case Op::Sigmoid: r = 1.0 / (1.0 + std::exp(-a[0])); break;
    case Op::Silu: r = a[0] / (1.0 + std::exp(-a[0])); break;
    case Op::Tanh: r = std::tanh(a[0]); break;
    case Op::Sin: r = std::sin(a[0]); break;
    case Op::Cos: r = std::cos(a[0]); break;
    case Op::Erf: r = std::erf(a[0]); break;
    case Op::Abs: r = std::fabs(a[0]); break;
    case Op::Gelu:
      if (attr_str_or(n.attrs, "approximate", "none") == "tanh")
        r = 0.5 * a[0] * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (a[0] + 0.044715 * a[0] * a[0] * a[0])));
      else
        r = 0.5 * a[0] * (1.0 + std::erf(a[0] / std::sqrt(2.0)));
      break;
    case Op::Clamp:
      r = a[0];
      if (!isnan(r) && n.attrs.count("min")) r = std::max(r, attr_float(n.attrs, "min", n.op));
      if (!isnan(r) && n.attrs.count("max")) r = std::min(r, attr_float(n.attrs, "max", n.op));
      break;
    case Op::Where: r = a[0] != 0.0 ? a[1] : a[2]; break;
    case Op::Eq: r = a[0] == a[1]; break;
    case Op::Ne: r = a[0] != a[1]; break;
    case Op::Lt: r = a[0] < a[1]; break;
    case Op::Le: r = a[0] <= a[1]; break;
    case Op::Gt: r = a[0] > a[1]; break;
    case Op::Ge: r = a[0] >= a[1]; break;
    case Op::Cast: case Op::Contiguous: r = a[0]; break;
    default: return std::nullopt;
  }
  return round_to(r, n.type.dtype);
}

// A uniform value: its number, the strides eager gives it, and the node
// whose storage it is (itself, or the value a view of it looks at).
struct Uniform {
  double value = 0;
  Shape strides;
  int storage = -1;
};

// The uniform value of `n` from its inputs' (all uniform), or none.
std::optional<Uniform> fold(const Node& n, const Graph& g, const std::vector<std::optional<Uniform>>& u) {
  const Shape& out = n.type.shape;
  if (n.op == Op::Full) {
    auto v = round_to(attr_float(n.attrs, "value", n.op), n.type.dtype);
    if (!v) return std::nullopt;
    return Uniform{*v, contiguous_strides(out), n.id};
  }
  if (n.inputs.empty()) return std::nullopt;
  std::vector<double> a;
  for (int i : n.inputs) {
    if (!u[static_cast<size_t>(i)]) return std::nullopt;
    a.push_back(u[static_cast<size_t>(i)]->value);
  }
  const Uniform& x = *u[static_cast<size_t>(n.inputs[0])];
  const Shape& xs = g.node(n.inputs[0]).type.shape;
  Uniform r{x.value, {}, x.storage};
  switch (n.op) {
    case Op::Reshape:
      // a view of a contiguous value; any other is a clone first, which
      // this pass leaves alone
      if (!is_contiguous(xs, x.strides)) return std::nullopt;
      r.strides = contiguous_strides(out);
      return r;
    case Op::Permute: {
      for (int64_t d : attr_ints(n.attrs, "dims", n.op)) r.strides.push_back(x.strides[static_cast<size_t>(norm_dim(d, xs.size(), n.op))]);
      return r;
    }
    case Op::Transpose: {
      r.strides = x.strides;
      std::swap(r.strides[static_cast<size_t>(norm_dim(attr_int(n.attrs, "dim0", n.op), xs.size(), n.op))],
                r.strides[static_cast<size_t>(norm_dim(attr_int(n.attrs, "dim1", n.op), xs.size(), n.op))]);
      return r;
    }
    case Op::Slice: {
      const SliceBounds b = slice_bounds(n.attrs, xs, n.op);
      r.strides = x.strides;
      r.strides[static_cast<size_t>(b.dim)] *= b.step;
      return r;
    }
    case Op::Expand: {
      const size_t off = out.size() - xs.size();
      for (size_t k = 0; k < out.size(); ++k)
        r.strides.push_back(k < off || (xs[k - off] == 1 && out[k] != 1) ? 0 : x.strides[k - off]);
      return r;
    }
    case Op::Contiguous:
      // .contiguous() of a contiguous value is that value
      if (is_contiguous(xs, x.strides)) {
        r.strides = x.strides;
        return r;
      }
      break;
    default: break;
  }
  if (fusion_kind(n.op) != FusionKind::Pointwise) return std::nullopt;
  std::optional<double> v = apply_op(n, a);
  if (!v) return std::nullopt;
  return Uniform{*v, contiguous_strides(out), n.id};
}

LedgerEntry entry(const Graph& g, const Node& n, const std::string& first, const std::string& what, Reject why) {
  LedgerEntry e;
  e.first = first;
  e.second = g.ref(n.id) + " (" + what + ")";
  e.add_source(n.loc);
  e.fused = true;
  e.reason = why;
  return e;
}

}  // namespace

Graph fold_uniform_constants(const Graph& g, std::vector<LedgerEntry>* ledger) {
  const size_t N = g.nodes.size();
  const auto users = g.users();
  std::vector<int> user_count(N, 0);  // distinct users, the output one of them
  for (size_t i = 0; i < N; ++i) user_count[i] = static_cast<int>(std::set<int>(users[i].begin(), users[i].end()).size());
  for (int o : std::set<int>(g.outputs.begin(), g.outputs.end())) ++user_count[static_cast<size_t>(o)];
  // each node's inputs whose last user (the output aside) it is
  std::vector<std::vector<int>> last_use(N);
  {
    std::set<int> seen;
    for (size_t i = N; i-- > 0;)
      for (int in : g.nodes[i].inputs)
        if (seen.insert(in).second) last_use[i].push_back(in);
  }

  // the folding walk: a value stays a replacement until each of its users
  // folds too (Inductor's ConstantFolder: replaced uses against users)
  std::vector<std::optional<Uniform>> u(N);
  std::vector<int> replaced(N, 0);
  std::vector<bool> kept(N, false);
  for (const Node& n : g.nodes) {
    if (n.op == Op::Input) continue;
    u[static_cast<size_t>(n.id)] = fold(n, g, u);
    if (!u[static_cast<size_t>(n.id)]) continue;
    kept[static_cast<size_t>(n.id)] = true;
    for (int in : n.inputs) ++replaced[static_cast<size_t>(in)];
    for (int in : last_use[static_cast<size_t>(n.id)])
      if (replaced[static_cast<size_t>(in)] == user_count[static_cast<size_t>(in)]) kept[static_cast<size_t>(in)] = false;
  }
  std::map<int, int> per_storage;
  for (size_t i = 0; i < N; ++i)
    if (kept[i]) ++per_storage[u[i]->storage];
  std::vector<bool> becomes_full(N, false);
  bool any = false;
  for (size_t i = 0; i < N; ++i) {
    const Node& n = g.nodes[i];
    if (!kept[i] || n.type.dtype == DType::U8 || per_storage[u[i]->storage] > 1 ||
        !is_contiguous(n.type.shape, u[i]->strides))
      continue;
    becomes_full[i] = true;
    // a full stays as it is (the same node, the same number)
    if (n.op == Op::Full) continue;
    any = true;
    if (ledger)
      ledger->push_back(entry(g, n, "constant folded",
                              op_name(n.op) + std::string(" of constants = full ") + format_double(u[i]->value),
                              Reject::ConstantFolded));
  }

  // x + 0, x - 0, x * 1, x / 1 with a 0 or 1 just made: x
  auto value_of = [&](int id, double v) { return becomes_full[static_cast<size_t>(id)] && u[static_cast<size_t>(id)]->value == v; };
  std::vector<int> noop_keep(N, -1);  // the input a no-op is
  for (const Node& n : g.nodes) {
    if (n.inputs.size() != 2 || becomes_full[static_cast<size_t>(n.id)]) continue;
    int keep = -1;
    const int a = n.inputs[0], b = n.inputs[1];
    if (n.op == Op::Add && (value_of(a, 0) || value_of(b, 0))) keep = value_of(a, 0) ? b : a;
    if (n.op == Op::Sub && value_of(b, 0)) keep = a;
    if (n.op == Op::Mul && (value_of(a, 1) || value_of(b, 1))) keep = value_of(a, 1) ? b : a;
    if (n.op == Op::Div && value_of(b, 1)) keep = a;
    if (keep < 0 || g.node(keep).type.shape != n.type.shape) continue;
    noop_keep[static_cast<size_t>(n.id)] = keep;
    any = true;
    if (ledger)
      ledger->push_back(entry(g, n, "no-op arithmetic", std::string(op_name(n.op)) + " of " +
                                                            (n.op == Op::Add || n.op == Op::Sub ? "0" : "1"),
                              Reject::NoOpArithmeticRemoved));
  }
  if (!any) return g;
  return rebuild(g, [&](const Node& n, const std::vector<int>& in, const std::vector<int>& map, Graph& out) {
    const size_t i = static_cast<size_t>(n.id);
    if (becomes_full[i] && n.op != Op::Full) {
      Attrs a{{"value", Attr(u[i]->value)}};
      const int id = out.add(Op::Full, {}, a, &n.type, n.name, n.loc);
      out.nodes[static_cast<size_t>(id)].origin = n.origin.empty() ? op_info(n.op).aten : n.origin;
      return id;
    }
    if (noop_keep[i] >= 0) {
      const int x = map[static_cast<size_t>(noop_keep[i])];
      if (out.node(x).type.dtype == n.type.dtype) return x;
      Attrs a{{"to", Attr(std::string(dtype_name(n.type.dtype)))}};
      return out.add(Op::Cast, {x}, a, nullptr, n.name, n.loc);
    }
    return copy_node(out, n, in);
  });
}

Graph collapse_cast_chains(const Graph& g, std::vector<LedgerEntry>* ledger) {
  auto floating = [](DType t) { return t == DType::F16 || t == DType::BF16 || t == DType::F32 || t == DType::F64; };
  const auto users = g.users();
  std::vector<bool> is_output(g.nodes.size(), false);
  for (int o : g.outputs) is_output[static_cast<size_t>(o)] = true;
  // the value each collapsed cast reads instead of its inner cast (chains
  // of more than two collapse whole: the inner one has collapsed first)
  std::vector<int> from(g.nodes.size(), -1);
  std::vector<bool> dropped(g.nodes.size(), false);  // an inner cast nothing else reads
  bool any = false;
  for (const Node& n : g.nodes) {
    if (n.op != Op::Cast || !floating(n.type.dtype) || n.attrs.count("@lowering_cast")) continue;
    const Node& m = g.node(n.inputs[0]);
    if (m.op != Op::Cast || !floating(m.type.dtype) || m.attrs.count("@lowering_cast") ||
        is_output[static_cast<size_t>(m.id)] ||
        users[static_cast<size_t>(m.id)].size() != 1)
      continue;
    const int src = from[static_cast<size_t>(m.id)] >= 0 ? from[static_cast<size_t>(m.id)] : m.inputs[0];
    from[static_cast<size_t>(n.id)] = src;
    dropped[static_cast<size_t>(m.id)] = true;
    any = true;
    if (ledger)
      ledger->push_back(entry(g, n, "cast chain",
                              std::string("cast to ") + dtype_name(n.type.dtype) + " of " + g.ref(m.id) + ", a cast to " +
                                  dtype_name(m.type.dtype),
                              Reject::CastChainCollapsed));
  }
  if (!any) return g;
  return rebuild(g, [&](const Node& n, const std::vector<int>& in, const std::vector<int>& map, Graph& out) {
    if (dropped[static_cast<size_t>(n.id)]) return -1;
    const int f = from[static_cast<size_t>(n.id)];
    if (f < 0) return copy_node(out, n, in);
    const int x = map[static_cast<size_t>(f)];
    if (out.node(x).type.dtype == n.type.dtype) return x;
    Attrs a{{"to", Attr(std::string(dtype_name(n.type.dtype)))}};
    return out.add(Op::Cast, {x}, a, nullptr, n.name, n.loc);
  });
}

}  // namespace fg
