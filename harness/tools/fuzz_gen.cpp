// The fuzzer's graph generator (harness/tools/fuzz_gen.h). Each step picks an op
// kind, operands among the values made so far (the recent ones more often)
// and attributes; the op table's type rule (Graph::add) refuses what does
// not type, and the step is tried again with other choices. Values that
// must be positive (log, sqrt, rsqrt, a divisor, pow's base) are made so by
// sigmoid(v) + 0.5 in front, so that no NaN or inf hides a miscompile.
#include "harness/tools/fuzz_gen.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "fusion/errors.h"

namespace fg {

namespace {

// odd sizes, 1, and sizes on either side of the widths kernels chunk and
// block by (vector widths, chunk lengths, CUDA blocks)
const int64_t kSizes[] = {1,  2,  3,  4,  5,   7,   8,   9,   15,  16,  17,  31,  32,  33, 63,
                          64, 65, 96, 127, 128, 129, 255, 256, 257, 511, 512, 513, 1023, 1024, 1025};
constexpr int64_t kMaxNumel = 1 << 15;

const Op kUnary[] = {Op::Neg, Op::Relu, Op::Gelu, Op::Silu, Op::Sigmoid, Op::Tanh, Op::Sin, Op::Cos, Op::Erf, Op::Abs};
const Op kPositiveUnary[] = {Op::Log, Op::Sqrt, Op::Rsqrt};
const Op kBinary[] = {Op::Add, Op::Sub, Op::Mul, Op::Maximum, Op::Minimum};
const Op kCompare[] = {Op::Eq, Op::Ne, Op::Lt, Op::Le, Op::Gt, Op::Ge};
const Op kReduce[] = {Op::Sum, Op::Mean, Op::Amax, Op::Amin, Op::Var};
// the ops of real blocks beyond those (case 12 of one_step)
const Op kBlockOps[] = {Op::Clamp, Op::LogSoftmax, Op::Cumsum,  Op::Flip,       Op::Pad,     Op::Gather,
                        Op::IndexSelect, Op::Argmax, Op::Arange, Op::Contiguous, Op::OneHot, Op::Topk,
                        Op::Sort,  Op::Argsort,    Op::Scatter, Op::ScatterAdd, Op::IndexAdd};
const DType kFloat[] = {DType::BF16, DType::F16, DType::F32};

class Gen {
 public:
  Gen(uint64_t seed, const FuzzGenOptions& o) : rng_(seed), o_(o) {}

  FuzzGraph run() {
    dt_ = dtype();
    const int rank = 1 + pick(4);
    Shape base = shape(rank);
    input(base);
    if (chance(0.5)) input(base);
    if (chance(0.5)) {
      // a broadcasting operand: some dims 1, or only the trailing dims
      Shape b = base;
      if (chance(0.5)) {
        for (auto& d : b)
          if (chance(0.5)) d = 1;
      } else {
        b.erase(b.begin(), b.begin() + pick(static_cast<int>(b.size())));
      }
      input(b);
    }
    const int n = 2 + pick(std::max(1, o_.max_ops - 1));
    for (int step = 0, tries = 0; step < n && tries < 20 * n; ++tries)
      if (one_step()) ++step;
    // outputs: the last value, and now and then another one
    int last = static_cast<int>(g_.nodes.size()) - 1;
    std::vector<int> outs{floating(last)};
    if (chance(0.3)) {
      int other = value();
      if (std::find(outs.begin(), outs.end(), other) == outs.end() && g_.node(other).op != Op::Input)
        outs.push_back(floating(other));
    }
    g_.outputs = outs;
    g_.name = "fuzz";
    verify(g_, true);
    FuzzGraph out;
    out.graph = g_;
    out.ops = ops_;
    return out;
  }

 private:
  DType dtype() {
    std::vector<DType> ok;
    for (DType t : kFloat)
      if (o_.half || t != DType::F16) ok.push_back(t);
    return ok[static_cast<size_t>(pick(static_cast<int>(ok.size())))];
  }
  int pick(int n) { return n <= 1 ? 0 : static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }

  int64_t size(int64_t at_most) {
    std::vector<int64_t> ok;
    for (int64_t s : kSizes)
      if (s <= at_most) ok.push_back(s);
    return ok.empty() ? 1 : ok[static_cast<size_t>(pick(static_cast<int>(ok.size())))];
  }
  Shape shape(int rank) {
    Shape s;
    int64_t left = kMaxNumel;
    for (int i = 0; i < rank; ++i) {
      int64_t d = size(std::max<int64_t>(1, left / (1 << (rank - i - 1))));
      s.push_back(d);
      left = std::max<int64_t>(1, left / d);
    }
    std::shuffle(s.begin(), s.end(), rng_);
    return s;
  }

  int input(const Shape& s, DType t, const std::string& stem = "x") {
    TensorType ty{t, s};
    return g_.add_input(stem + std::to_string(inputs_++), ty);
  }
  int input(const Shape& s) { return input(s, dt_); }
  // An i64 index input whose values are below `n` (uniform in [0, n)).
  int index_input(const Shape& s, int64_t n) {
    TensorType ty{DType::I64, s};
    return g_.add(Op::Input, {}, {{"high", static_cast<double>(n)}}, &ty, "i" + std::to_string(inputs_++));
  }

  // A new input of v's type, or of its last dim only (a broadcast).
  int input_like(int v) {
    const TensorType t = g_.node(v).type;
    if (chance(0.5) && !t.shape.empty()) return input(Shape{t.shape.back()}, t.dtype);
    return input(t.shape, t.dtype);
  }
  // A value made so far: the recent ones more often; floating only.
  int value() {
    std::vector<int> ok;
    for (const Node& n : g_.nodes)
      if (is_floating(n.type.dtype)) ok.push_back(n.id);
    const int k = static_cast<int>(ok.size());
    int i = std::max(pick(k), pick(k));  // bias toward the end
    return ok[static_cast<size_t>(i)];
  }

  int add(Op op, std::vector<int> in, Attrs a = {}) {
    // a choice the op table lists and the case left open: absent (its
    // default) or any of the table's values, so a value added there is tried
    for (const AttrSpec& spec : op_spec(op).attrs)
      if (spec.kind == AttrKind::Choice && !a.count(spec.name) && !spec.choices.empty() && chance(0.5))
        a[spec.name] = spec.choices[static_cast<size_t>(pick(static_cast<int>(spec.choices.size())))];
    try {
      int id = g_.add(op, std::move(in), std::move(a));
      ops_.insert(op_name(op));
      return id;
    } catch (const UserError&) {
      return -1;
    }
  }
  int constant(double v) {
    TensorType t{dt_, {}};
    ops_.insert("full");
    return g_.add(Op::Full, {}, {{"value", v}}, &t);
  }
  // sigmoid(v) + 0.5: in (0.5, 1.5)
  int positive(int v) {
    int s = add(Op::Sigmoid, {v});
    return add(Op::Add, {s, constant(0.5)});
  }
  // a bool value becomes floating through where
  int floating(int v) {
    if (is_floating(g_.node(v).type.dtype)) return v;
    return add(Op::Where, {v, constant(1.0), constant(-1.0)});
  }
  int64_t dim_of(int v) { return static_cast<int64_t>(g_.node(v).type.shape.size()); }

  bool one_step() {
    const int kinds = o_.world > 1 ? 14 : 13;
    const int v = value();
    const Shape s = g_.node(v).type.shape;  // a copy: adding a node moves the nodes
    const int64_t r = dim_of(v);
    switch (pick(kinds)) {
      case 0:
      case 1: {
        Op op = kUnary[pick(sizeof kUnary / sizeof *kUnary)];
        Attrs a;
        return add(op, {v}, a) >= 0;
      }
      case 2: {
        // exp of a bounded value: exp(30) in f32 turns a last-bit difference
        // of its argument into 1e7, which no tolerance tells from a miscompile
        if (chance(0.25)) return add(Op::Exp, {add(Op::Tanh, {v})}) >= 0;
        Op op = kPositiveUnary[pick(sizeof kPositiveUnary / sizeof *kPositiveUnary)];
        return add(op, {positive(v)}) >= 0;
      }
      case 3:
      case 4: {
        // a binary op with another value, a broadcast one or a constant
        int other = chance(0.2) ? constant(chance(0.5) ? 2.0 : -0.75) : value();
        if (chance(0.1)) return add(Op::Div, {v, positive(other)}) >= 0;
        // a positive base (no NaN) and a bounded exponent (as exp's)
        if (chance(0.1)) return add(Op::Pow, {positive(v), add(Op::Tanh, {other})}) >= 0;
        Op op = kBinary[pick(sizeof kBinary / sizeof *kBinary)];
        return add(op, chance(0.5) ? std::vector<int>{v, other} : std::vector<int>{other, v}) >= 0;
      }
      case 5: {
        // against a constant or an input, never another computed value: a
        // kernel keeps an inlined bf16 value unrounded where eager rounds it
        // (as Inductor does without emulate_precision_casts), so sin(x) >=
        // sin(x) recomputed in a kernel against its stored, rounded copy is
        // false for half the elements; such a tie is no miscompile
        int c = add(kCompare[pick(sizeof kCompare / sizeof *kCompare)],
                    {v, chance(0.5) ? constant(chance(0.5) ? 0.0 : 0.3) : input_like(v)});
        if (c < 0) return false;
        return add(Op::Where, {c, v, chance(0.5) ? constant(0.0) : value()}) >= 0;
      }
      case 6: {
        DType to = dtype();
        if (to == g_.node(v).type.dtype) to = DType::F32;
        return add(Op::Cast, {v}, {{"to", std::string(dtype_name(to))}}) >= 0;
      }
      case 7: {
        // reductions: one dim, several, or all; keepdim or not
        if (r == 0) return false;
        Op op = kReduce[pick(sizeof kReduce / sizeof *kReduce)];
        Attrs a;
        const int how = pick(3);
        if (how < 2) {
          std::vector<int64_t> dims(static_cast<size_t>(r));
          std::iota(dims.begin(), dims.end(), 0);
          std::shuffle(dims.begin(), dims.end(), rng_);
          dims.resize(how == 0 ? 1 : static_cast<size_t>(1 + pick(static_cast<int>(r))));
          if (chance(0.3)) dims[0] -= r;  // a negative dim
          a["dims"] = dims;
        }
        if (chance(0.5)) a["keepdim"] = int64_t{1};
        if (op == Op::Var) a["correction"] = int64_t{pick(2)};
        int red = add(op, {v}, a);
        if (red < 0) return false;
        // often the reduced value meets its input again (a norm's shape)
        if (chance(0.5) && attr_int_or(a, "keepdim", 0)) return add(chance(0.5) ? Op::Sub : Op::Mul, {v, red}) >= 0;
        return true;
      }
      case 8: {
        if (r == 0) return false;
        const int which = pick(3);
        if (which == 0) return add(Op::Softmax, {v}, {{"dim", int64_t{pick(static_cast<int>(r)) - (chance(0.5) ? r : 0)}}}) >= 0;
        Shape w{s.back()};
        int weight = g_.add_input("w" + std::to_string(inputs_++) + "_norm", TensorType{g_.node(v).type.dtype, w});
        Attrs a{{"eps", 1e-6}};
        if (which == 1) return add(Op::RmsNorm, {v, weight}, a) >= 0;
        int bias = input(w, g_.node(v).type.dtype, "b");
        return add(Op::LayerNorm, {v, weight, bias}, {{"eps", 1e-5}}) >= 0;
      }
      case 9: {
        // views
        if (r == 0) return false;
        const int which = pick(5);
        if (which == 0) {
          std::vector<int64_t> p(static_cast<size_t>(r));
          std::iota(p.begin(), p.end(), 0);
          std::shuffle(p.begin(), p.end(), rng_);
          return add(Op::Permute, {v}, {{"dims", p}}) >= 0;
        }
        if (which == 1) return add(Op::Transpose, {v}, {{"dim0", int64_t{pick(static_cast<int>(r))}}, {"dim1", int64_t{-1}}}) >= 0;
        if (which == 2) {
          // merge two neighbouring dims, or split one
          Shape t = s;
          if (r >= 2 && chance(0.5)) {
            size_t i = static_cast<size_t>(pick(static_cast<int>(r) - 1));
            t[i] *= t[i + 1];
            t.erase(t.begin() + static_cast<long>(i) + 1);
          } else {
            size_t i = static_cast<size_t>(pick(static_cast<int>(r)));
            int64_t f = t[i] % 2 == 0 ? 2 : t[i] % 3 == 0 ? 3 : 1;
            t[i] /= f;
            t.insert(t.begin() + static_cast<long>(i), f);
          }
          if (chance(0.3)) t[0] = -1;
          return add(Op::Reshape, {v}, {{"shape", std::vector<int64_t>(t.begin(), t.end())}}) >= 0;
        }
        if (which == 3) {
          // expand a size-1 dim, or a new leading one
          std::vector<int64_t> t(s.begin(), s.end());
          bool grew = false;
          for (auto& d : t)
            if (d == 1 && chance(0.7)) { d = size(64); grew = true; }
          if (!grew) t.insert(t.begin(), 1 + pick(3));
          return add(Op::Expand, {v}, {{"shape", t}}) >= 0;
        }
        int64_t d = pick(static_cast<int>(r));
        int64_t n = s[static_cast<size_t>(d)];
        if (n < 2) return false;
        Attrs a{{"dim", d}, {"start", int64_t{pick(static_cast<int>(n / 2))}}};
        if (chance(0.5)) a["end"] = int64_t{n - pick(static_cast<int>(n / 2))};
        if (chance(0.3)) a["step"] = int64_t{2 + pick(2)};
        return add(Op::Slice, {v}, a) >= 0;
      }
      case 10: {
        // cat of two values of one shape, along a dim
        if (r == 0) return false;
        int other = add(kUnary[pick(sizeof kUnary / sizeof *kUnary)], {v});
        if (other < 0) return false;
        return add(Op::Cat, chance(0.5) ? std::vector<int>{v, other} : std::vector<int>{other, v, v},
                   {{"dim", int64_t{pick(static_cast<int>(r))}}}) >= 0;
      }
      case 11: {
        // GEMMs: a linear layer, a matmul, attention
        if (r == 0) return false;
        const int which = pick(4);
        const DType t = g_.node(v).type.dtype;
        if (which <= 1) {
          Shape w{size(256), s.back()};
          int wid = g_.add_input("w" + std::to_string(inputs_++), TensorType{t, w});
          std::vector<int> in{v, wid};
          if (chance(0.4)) in.push_back(input(Shape{w[0]}, t, "b"));
          return add(Op::Linear, in) >= 0;
        }
        if (which == 2) {
          if (r < 2) return false;
          int other = input(Shape{s.back(), size(128)}, t);
          return add(Op::Matmul, {v, other}) >= 0;
        }
        const int64_t B = 1 + pick(2), H = 1 + pick(3), S = size(64), L = size(64), D = size(64);
        int q = input({B, H, S, D}, t, "q"), k = input({B, H, L, D}, t, "k"), vv = input({B, H, L, D}, t, "v");
        Attrs a;
        if (S == L && chance(0.5)) a["causal"] = int64_t{1};
        int at = add(Op::Sdpa, {q, k, vv}, a);
        if (at < 0) return false;
        // and it meets the value it came from, when the shapes allow
        int mix = add(Op::Add, {at, v});
        return mix >= 0 || at >= 0;
      }
      case 12: {
        // the ops of real blocks
        if (r == 0) return false;
        const int64_t d = pick(static_cast<int>(r));
        const int64_t n = s[static_cast<size_t>(d)];
        switch (pick(16)) {
          case 0: {
            Attrs a;
            if (chance(0.7)) a["min"] = -0.5;
            if (!a.count("min") || chance(0.5)) a["max"] = 0.75;
            return add(Op::Clamp, {v}, a) >= 0;
          }
          case 1: return add(Op::LogSoftmax, {v}, {{"dim", d - (chance(0.5) ? r : 0)}}) >= 0;
          case 2: return add(Op::Cumsum, {v}, {{"dim", d}}) >= 0;
          case 3: {
            std::vector<int64_t> dims{d};
            if (r > 1 && chance(0.3)) dims.push_back((d + 1) % r);
            return add(Op::Flip, {v}, {{"dims", dims}}) >= 0;
          }
          case 4: {
            std::vector<int64_t> pad{pick(3), pick(3)};
            if (r > 1 && chance(0.4)) { pad.push_back(pick(2)); pad.push_back(pick(3)); }
            return add(Op::Pad, {v}, {{"pad", pad}, {"value", chance(0.5) ? 0.0 : -0.25}}) >= 0;
          }
          case 5: {
            // a row gather: an index shaped like v but with m entries along d
            Shape is = s;
            is[static_cast<size_t>(d)] = 1 + pick(static_cast<int>(std::min<int64_t>(n, 64)));
            return add(Op::Gather, {v, index_input(is, n)}, {{"dim", d}}) >= 0;
          }
          case 6: return add(Op::IndexSelect, {v, index_input({1 + pick(48)}, n)}, {{"dim", d}}) >= 0;
          case 7: {
            // of an input only: a computed value rounds differently in a
            // kernel than in eager, and ties would pick other indices
            int at = add(Op::Argmax, {input_like(v)}, chance(0.8) ? Attrs{{"dim", d}} : Attrs{});
            return at >= 0 && add(Op::Cast, {at}, {{"to", std::string(dtype_name(dt_))}}) >= 0;
          }
          case 8: {
            // positions along the last dim, added as a row
            int pos = add(Op::Arange, {}, {{"end", static_cast<double>(s.back())}, {"dtype", std::string(dtype_name(g_.node(v).type.dtype))}});
            return pos >= 0 && add(Op::Add, {v, pos}) >= 0;
          }
          case 10: {
            // a routing mask: one_hot of an index, as a factor
            const Shape is(s.begin(), s.end() - 1);
            int oh = add(Op::OneHot, {index_input(is, s.back())}, {{"num_classes", s.back()}});
            int f = oh >= 0 ? add(Op::Cast, {oh}, {{"to", std::string(dtype_name(g_.node(v).type.dtype))}}) : -1;
            return f >= 0 && add(Op::Mul, {v, f}) >= 0;
          }
          case 11: case 12: {
            // v at the positions of an input's k largest (topk) or in an
            // input's sorted order (argsort): of an input, as argmax, so that
            // eager and compiled pick the same positions; tied positions
            // hold equal values, so what the gather takes does not depend on
            // how ties break
            int src = input(s, g_.node(v).type.dtype);
            Attrs a{{"dim", d}};
            const bool topk = chance(0.5);
            if (topk) a["k"] = 1 + pick(static_cast<int>(std::min<int64_t>(n, 8)));
            if (chance(0.5)) a[topk ? "largest" : "descending"] = int64_t{topk ? 0 : 1};
            int at = add(topk ? Op::Topk : Op::Argsort, {src}, a);
            return at >= 0 && add(Op::Gather, {v, at}, {{"dim", d}}) >= 0;
          }
          case 13: {
            Attrs a{{"dim", d - (chance(0.5) ? r : 0)}};
            if (chance(0.5)) a["descending"] = int64_t{1};
            return add(Op::Sort, {v}, a) >= 0;
          }
          case 14: {
            // added at an index's positions along d (repeats add up, in order)
            const int64_t m = 1 + pick(static_cast<int>(std::min<int64_t>(2 * n, 64)));
            Shape is = s;
            is[static_cast<size_t>(d)] = m;
            const DType t = g_.node(v).type.dtype;
            if (chance(0.5)) return add(Op::IndexAdd, {v, index_input({m}, n), input(is, t)}, {{"dim", d}}) >= 0;
            return add(Op::ScatterAdd, {v, index_input(is, n), input(is, t)}, {{"dim", d}}) >= 0;
          }
          case 15: {
            // written at distinct positions along d: the first m of an
            // input's argsort (a repeated position would keep whichever
            // write came last, which LibTorch's cuda kernel leaves open)
            const int64_t m = 1 + pick(static_cast<int>(n));
            int order = add(Op::Argsort, {input(s, DType::F32)}, {{"dim", d}});
            int first = order >= 0 ? add(Op::Slice, {order}, {{"dim", d}, {"start", int64_t{0}}, {"end", m}}) : -1;
            Shape is = s;
            is[static_cast<size_t>(d)] = m;
            return first >= 0 && add(Op::Scatter, {v, first, input(is, g_.node(v).type.dtype)}, {{"dim", d}}) >= 0;
          }
          default: {
            if (r < 2) return false;
            int t = add(Op::Transpose, {v}, {{"dim0", int64_t{0}}, {"dim1", int64_t{-1}}});
            return t >= 0 && add(Op::Contiguous, {t}) >= 0;
          }
        }
      }
      default: {
        // collectives (world > 1): the inputs are the same on every rank
        const int which = pick(3);
        if (which == 0) return add(Op::AllReduce, {v}) >= 0;
        if (r == 0) return false;
        Attrs a{{"world", int64_t{o_.world}}};
        return add(which == 1 ? Op::AllGather : Op::ReduceScatter, {v}, a) >= 0;
      }
    }
  }

  std::mt19937_64 rng_;
  FuzzGenOptions o_;
  Graph g_;
  std::set<std::string> ops_;
  DType dt_ = DType::F32;
  int inputs_ = 0;
};

}  // namespace

FuzzGraph generate_graph(uint64_t seed, const FuzzGenOptions& opts) { return Gen(seed, opts).run(); }

std::set<std::string> fuzz_op_universe(int world) {
  std::set<std::string> u;
  for (Op op : kUnary) u.insert(op_name(op));
  for (Op op : kPositiveUnary) u.insert(op_name(op));
  for (Op op : kBinary) u.insert(op_name(op));
  for (Op op : kCompare) u.insert(op_name(op));
  for (Op op : kReduce) u.insert(op_name(op));
  for (Op op : {Op::Full, Op::Exp, Op::Div, Op::Pow, Op::Where, Op::Cast, Op::Softmax, Op::RmsNorm, Op::LayerNorm,
                Op::Permute, Op::Transpose, Op::Reshape, Op::Expand, Op::Slice, Op::Cat, Op::Linear, Op::Matmul,
                Op::Sdpa})
    u.insert(op_name(op));
  for (Op op : kBlockOps) u.insert(op_name(op));
  if (world > 1)
    for (Op op : {Op::AllReduce, Op::AllGather, Op::ReduceScatter}) u.insert(op_name(op));
  return u;
}

}  // namespace fg
