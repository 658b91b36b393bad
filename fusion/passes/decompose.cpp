#include "fusion/passes/decompose.h"

#include <optional>

#include "fusion/errors.h"
#include "fusion/fault.h"
#include "fusion/passes/dead_code.h"
#include "fusion/passes/vector_gemm.h"

namespace fg {

namespace {

// Emits the replacement of one node into `out`, tagging every new node with
// the original's location and an origin name.
class Decomposer {
 public:
  Decomposer(const Graph& in, Graph& out, bool gpu) : in_(in), out_(out), gpu_(gpu) {}

  int run(const Node& n, const std::vector<int>& a) {
    loc_ = n.loc;
    switch (n.op) {
      // in f32 for bf16 and f16, rounded once at the end, as ATen computes
      // them: unfused, each step would round its buffer to bf16 (fusegate
      // fuzz found var over 11904 bf16 values 2.4x farther from fp64 than
      // eager under --fusion none)
      // (Inductor lowers mean and var itself, its casts inside the lowering;
      // softmax and log-softmax are decompositions, their casts graph nodes)
      case Op::Mean: return in_f32(a[0], [&](int x) { return mean(x, n.attrs); }, true);
      case Op::Var: return in_f32(a[0], [&](int x) { return var(x, n.attrs); }, true);
      case Op::Softmax: return in_f32(a[0], [&](int x) { return softmax(x, n.attrs); });
      case Op::LogSoftmax: return in_f32(a[0], [&](int x) { return log_softmax(x, n.attrs); });
      case Op::RmsNorm: return rms_norm(a[0], a[1], attr_float_or(n.attrs, "eps", 1e-6));
      case Op::LayerNorm: return layer_norm(a[0], a[1], a[2], attr_float_or(n.attrs, "eps", 1e-5));
      default: {
        int id = out_.add(n.op, a, n.attrs, &n.type, n.name, n.loc);
        out_.nodes[id].origin = n.origin;
        return id;
      }
    }
  }

 private:
  int emit(Op op, std::vector<int> in, Attrs attrs = {}, const char* origin = nullptr) {
    int id = out_.add(op, std::move(in), std::move(attrs), nullptr, {}, loc_);
    if (origin) out_.nodes[id].origin = origin;
    return id;
  }
  int scalar(double v, DType t) {
    TensorType ty{t, {}};
    return out_.add(Op::Full, {}, {{"value", v}}, &ty, {}, loc_);
  }
  const TensorType& type(int id) const { return out_.node(id).type; }
  int64_t reduced_numel(int x, const Attrs& attrs) const {
    const Shape& s = type(x).shape;
    std::vector<int64_t> dims = attrs.count("dims") ? attr_ints(attrs, "dims", Op::Sum) : std::vector<int64_t>{};
    if (dims.empty()) return numel(s);
    int64_t n = 1;
    for (auto d : dims) n *= s[norm_dim(d, s.size(), Op::Sum)];
    return n;
  }

  // exp(x - max) that an online softmax's sum reads is no value of the
  // graph in Inductor (its reduction computes it from x): never stored for
  // its own sake (@inline), only read inside the sum
  void online(int exp) {
    out_.nodes[static_cast<size_t>(exp)].attrs["@inline"] = int64_t{1};
    out_.nodes[static_cast<size_t>(out_.node(exp).inputs[0])].attrs["@inline"] = int64_t{1};
  }

  // A variance over fewer than 8 elements is two unrolled sums in Inductor
  // (use_two_step_variance) unless it is one row (nothing but the reduced
  // elements): then its Welford reduction, which Inductor never unrolls; on
  // the GPU, where other short reductions of one row unroll. The mean's sum
  // (`mean`, the div of it) and the squared deviations' (`sq_sum`) stay
  // reductions then.
  void welford_row(int x, int64_t r, int mean, int sq_sum) {
    if (!gpu_ || r >= 8 || numel(type(x).shape) != r) return;
    out_.nodes[static_cast<size_t>(out_.node(mean).inputs[0])].attrs["@welford_row"] = int64_t{1};
    out_.nodes[static_cast<size_t>(sq_sum)].attrs["@welford_row"] = int64_t{1};
  }

  // f(x) with a bf16 or f16 x computed in f32 and cast back; casts an
  // Inductor lowering makes inside itself (no graph node of its own, so no
  // joint-graph pattern sees them) say so (@lowering_cast)
  template <typename F>
  int in_f32(int x, F f, bool in_lowering = false) {
    const DType t = type(x).dtype;
    if (t != DType::BF16 && t != DType::F16) return f(x);
    Attrs up{{"to", std::string("f32")}}, down{{"to", std::string(dtype_name(t))}};
    if (in_lowering) up["@lowering_cast"] = down["@lowering_cast"] = int64_t{1};
    int y = f(emit(Op::Cast, {x}, up));
    return emit(Op::Cast, {y}, down);
  }
  int mean(int x, const Attrs& attrs) {
    int s = emit(Op::Sum, {x}, attrs, "mean");
    return emit(Op::Div, {s, scalar(static_cast<double>(reduced_numel(x, attrs)), type(x).dtype)}, {}, "mean");
  }
  int var(int x, const Attrs& attrs) {
    Attrs red = attrs;  // a sum's attributes: var's less its correction
    red.erase("correction");
    Attrs keep = red;
    keep["keepdim"] = int64_t{1};
    int m = mean(x, keep);
    int d = emit(Op::Sub, {x, m}, {}, "var");
    int sq = emit(Op::Mul, {d, d}, {}, "var");
    int s = emit(Op::Sum, {sq}, red, "var");
    out_.nodes[static_cast<size_t>(s)].attrs["@welford"] = int64_t{1};
    welford_row(x, reduced_numel(x, attrs), m, s);
    double n = static_cast<double>(reduced_numel(x, attrs)) - static_cast<double>(attr_int_or(attrs, "correction", 1));
    return emit(Op::Div, {s, scalar(n, type(x).dtype)}, {}, "var");
  }
  // Inductor's joint-graph softmax patterns (mul_softmax_pattern,
  // div_softmax_pattern, torch 2.11): where the rows a softmax or
  // log-softmax reads are inp * other, other * inp or inp / other (a cast of
  // that too) with `other` constant along the reduced dim, the shifted
  // rows are computed as (inp * sign - amax(inp * sign)) op (sign * other),
  // sign = where(other >= 0, 1, -1). The shift is then no longer exp's
  // direct input, so on the GPU no online softmax either (post_grad's
  // prepare_softmax pattern does not match): one exp read by the sum and
  // the division, stored where reuse would repeat too many loads
  // (fuzz_579, fuzz_347). On the CPU the decomposition stays as it was.
  struct Scaled {
    int inp, other;
    bool div;
  };
  std::optional<Scaled> scaled_rows(int x, int64_t dim) const {
    if (!gpu_) return std::nullopt;
    const Node* n = &out_.node(x);
    if (n->op == Op::Cast) n = &out_.node(n->inputs[0]);
    if ((n->op != Op::Mul && n->op != Op::Div) || n->inputs.size() != 2) return std::nullopt;
    auto fits = [&](int inp, int other) {
      const Shape& is = type(inp).shape;
      const Shape& os = type(other).shape;
      if (is.size() < os.size()) return false;
      const int64_t rank = static_cast<int64_t>(is.size());
      const int64_t d = dim < 0 ? dim + rank : dim;
      if (d < 0 || d >= rank) return false;
      const int64_t pad = rank - static_cast<int64_t>(os.size());
      return d < pad || os[static_cast<size_t>(d - pad)] == 1;
    };
    const int a = n->inputs[0], b = n->inputs[1];
    if (fits(a, b)) return Scaled{a, b, n->op == Op::Div};
    if (n->op == Op::Mul && fits(b, a)) return Scaled{b, a, false};
    return std::nullopt;
  }
  // the shifted rows of the patterns above, in x's dtype
  int scaled_shift(int x, const Scaled& sc, const Attrs& red) {
    const DType t = type(x).dtype;
    int inp = sc.inp;
    if (type(inp).dtype != t) inp = emit(Op::Cast, {inp}, {{"to", std::string(dtype_name(t))}}, "_to_copy");
    const int other = sc.other;
    const int one = scalar(1.0, t);
    const int pos = emit(Op::Ge, {other, scalar(0.0, type(other).dtype)}, {}, "ge");
    int sign = emit(Op::Where, {pos, one, emit(Op::Neg, {one}, {}, "neg")}, {}, "where");
    const int scaled = emit(Op::Mul, {inp, sign}, {}, "mul");
    const int m = emit(Op::Amax, {scaled}, red, "amax");
    const int d = emit(Op::Sub, {scaled, m}, {}, "sub");
    int o = other;
    if (type(o).dtype != t) o = emit(Op::Cast, {o}, {{"to", std::string(dtype_name(t))}}, "mul");
    const int den = emit(Op::Mul, {sign, o}, {}, "mul");
    return emit(sc.div ? Op::Div : Op::Mul, {d, den}, {}, sc.div ? "div" : "mul");
  }
  int softmax(int x, const Attrs& attrs) {
    Attrs red{{"dims", std::vector<int64_t>{attr_int(attrs, "dim", Op::Softmax)}}, {"keepdim", int64_t{1}}};
    if (std::optional<Scaled> sc = scaled_rows(x, attr_int(attrs, "dim", Op::Softmax))) {
      const int e = emit(Op::Exp, {scaled_shift(x, *sc, red)}, {}, "exp");
      return emit(Op::Div, {e, emit(Op::Sum, {e}, red, "sum")}, {}, "div");
    }
    int m = emit(Op::Amax, {x}, red, "amax");
    int e = emit(Op::Exp, {emit(Op::Sub, {x, m}, {}, "sub")}, {}, "exp");
    int s = emit(Op::Sum, {e}, red, "sum");
    if (gpu_) {
      online(e);
      e = emit(Op::Exp, {emit(Op::Sub, {x, m}, {}, "sub")}, {}, "exp");
    }
    return emit(Op::Div, {e, s}, {}, "div");
  }
  // x - m - log(sum(exp(x - m))), m the row's max: every piece named
  // _log_softmax, as Inductor names the kernel after the op it decomposed
  int log_softmax(int x, const Attrs& attrs) {
    Attrs red{{"dims", std::vector<int64_t>{attr_int(attrs, "dim", Op::LogSoftmax)}}, {"keepdim", int64_t{1}}};
    const char* o = "_log_softmax";
    if (std::optional<Scaled> sc = scaled_rows(x, attr_int(attrs, "dim", Op::LogSoftmax))) {
      const int d = scaled_shift(x, *sc, red);
      const int s = emit(Op::Sum, {emit(Op::Exp, {d}, {}, o)}, red, o);
      return emit(Op::Sub, {d, emit(Op::Log, {s}, {}, o)}, {}, o);
    }
    int m = emit(Op::Amax, {x}, red, o);
    int d = emit(Op::Sub, {x, m}, {}, o);
    const int e = emit(Op::Exp, {d}, {}, o);
    int s = emit(Op::Sum, {e}, red, o);
    if (gpu_) {
      online(e);
      d = emit(Op::Sub, {x, m}, {}, o);
    }
    return emit(Op::Sub, {d, emit(Op::Log, {s}, {}, o)}, {}, o);
  }
  // y = cast(xf * rsqrt(mean(xf^2) + eps), x.dtype) * w, computed in f32
  // as the model codebases' RMSNorm modules do.
  int rms_norm(int x, int w, double eps) {
    DType t = type(x).dtype;
    int xf = (t == DType::F64 || t == DType::F32) ? x : emit(Op::Cast, {x}, {{"to", std::string("f32")}});
    DType ct = type(xf).dtype;
    int sq = emit(Op::Pow, {xf, scalar(2.0, ct)});
    int64_t last = static_cast<int64_t>(type(x).shape.size()) - 1;
    int ms = mean(sq, {{"dims", std::vector<int64_t>{last}}, {"keepdim", int64_t{1}}});
    int r = emit(Op::Rsqrt, {emit(Op::Add, {ms, scalar(eps, ct)})});
    int y = emit(Op::Mul, {xf, r});
    if (type(y).dtype != t) y = emit(Op::Cast, {y}, {{"to", std::string(dtype_name(t))}});
    return emit(Op::Mul, {y, w});
  }
  int layer_norm(int x, int w, int b, double eps) {
    DType t = type(x).dtype;
    int xf = (t == DType::F64 || t == DType::F32) ? x : emit(Op::Cast, {x}, {{"to", std::string("f32")}});
    DType ct = type(xf).dtype;
    int64_t last = static_cast<int64_t>(type(x).shape.size()) - 1;
    Attrs red{{"dims", std::vector<int64_t>{last}}, {"keepdim", int64_t{1}}};
    // As Inductor lowers var_mean: the variance takes deviations of its own
    // (the normalization's are another node); a row shorter than 8 is two
    // unrolled sums, and then the mean is stored for the normalization
    // (realized) unless the whole tensor is one row.
    const int64_t r = type(x).shape.empty() ? 1 : type(x).shape.back();
    int mu = mean(xf, red);
    if (r < 8 && numel(type(x).shape) != r) out_.nodes[static_cast<size_t>(mu)].attrs["@realize"] = int64_t{1};
    int dv = emit(Op::Sub, {xf, mu});
    int v = mean(emit(Op::Mul, {dv, dv}), red);
    const int vs = out_.nodes[static_cast<size_t>(v)].inputs[0];
    out_.nodes[static_cast<size_t>(vs)].attrs["@welford"] = int64_t{1};
    welford_row(x, r, mu, vs);
    int d = emit(Op::Sub, {xf, mu});
    int y = emit(Op::Mul, {d, emit(Op::Rsqrt, {emit(Op::Add, {v, scalar(eps, ct)})})});
    if (type(y).dtype != t) y = emit(Op::Cast, {y}, {{"to", std::string(dtype_name(t))}});
    return emit(Op::Add, {emit(Op::Mul, {y, w}), b});
  }

  const Graph& in_;
  Graph& out_;
  bool gpu_;
  SourceLoc loc_;
};

}  // namespace

bool decomposes(Op op) {
  switch (op) {
    case Op::Mean: case Op::Var: case Op::Softmax: case Op::LogSoftmax: case Op::RmsNorm: case Op::LayerNorm:
      return true;
    default:
      return false;
  }
}

Graph decompose(const Graph& g, std::vector<StageApplication>* applied, bool gpu, bool vector_gemms) {
  const int64_t limit = bisect_limits().decompositions;
  // which GEMMs Inductor decomposes depends on ATen's strides and on who
  // reads them (dead readers are not readers: Inductor's graph is clean)
  std::vector<Shape> strides;
  std::vector<std::vector<int>> live_users;
  std::vector<bool> is_output(g.nodes.size(), false);
  if (vector_gemms) {
    strides = aten_strides(g);
    const std::vector<bool> live = live_nodes(g);
    live_users.resize(g.nodes.size());
    for (const Node& n : g.nodes)
      if (live[static_cast<size_t>(n.id)])
        for (int i : n.inputs) live_users[static_cast<size_t>(i)].push_back(n.id);
    for (int o : g.outputs) is_output[static_cast<size_t>(o)] = true;
  }
  // FUSEGATE_FAULT=broken_decomposition:OP: OP's rewrite gives 1.5x its
  // value (a miscompile `bisect` must name at this stage and rule)
  const std::string broken = fault_argument("broken_decomposition");
  int64_t made = 0;
  bool held = false;
  return rebuild(g, [&](const Node& n, const std::vector<int>& in, const std::vector<int>&, Graph& out) {
    FG_CHECK(fusion_kind(n.op) != FusionKind::Host, "host op reached the compiler");
    const VectorGemm vg =
        vector_gemms ? vector_gemm(g, n, strides, live_users, is_output) : VectorGemm::None;
    const bool rewritten = decomposes(n.op) || vg != VectorGemm::None;
    if (rewritten && limit >= 0 && made >= limit && !held && applied) {
      held = true;
      StageApplication a{"decompositions", op_name(n.op), g.ref(n.id), {}, true};
      if (n.loc.known()) a.lines.push_back(n.loc.str());
      applied->push_back(std::move(a));
    }
    if (!rewritten || (limit >= 0 && made >= limit)) {
      const int id = out.add(n.op, in, n.attrs, &n.type, n.name, n.loc);
      out.nodes[static_cast<size_t>(id)].origin = n.origin;
      return id;
    }
    ++made;
    if (applied) {
      StageApplication a{"decompositions", op_name(n.op), g.ref(n.id), {}};
      if (n.loc.known()) a.lines.push_back(n.loc.str());
      applied->push_back(std::move(a));
    }
    int id = vg != VectorGemm::None ? emit_vector_gemm(n, vg, in, out) : Decomposer(g, out, gpu).run(n, in);
    if (broken == op_name(n.op)) {
      TensorType t{out.node(id).type.dtype, {}};
      const int k = out.add(Op::Full, {}, {{"value", 1.5}}, &t, {}, n.loc);
      id = out.add(Op::Mul, {id, k}, {}, nullptr, {}, n.loc);
      out.nodes[static_cast<size_t>(id)].origin = op_info(n.op).aten;
    }
    return id;
  });
}

}  // namespace fg
