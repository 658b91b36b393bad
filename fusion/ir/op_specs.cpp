// The op reference (fusion/ir/ops.h: op_spec): per op, what it reads, what
// it gives and every attribute it takes with its kind, default and allowed
// values. infer_type checks every node's attributes against it, the parser
// does so first to place a mistake at its column, and `fusegate ops` prints
// it as docs/OPS.md. The shape and dtype rules themselves live in infer.cpp;
// the text here says them in words.
#include <algorithm>

#include "fusion/errors.h"
#include "fusion/ir/ops.h"
#include "fusion/ir/text.h"

namespace fg {

namespace {

using K = AttrKind;

AttrSpec req(const char* name, K kind, const char* doc) { return AttrSpec{name, kind, true, "", {}, doc}; }
AttrSpec opt(const char* name, K kind, const char* absent, const char* doc) {
  return AttrSpec{name, kind, false, absent, {}, doc};
}
AttrSpec choice(const char* name, std::vector<std::string> choices, const char* absent, const char* doc) {
  return AttrSpec{name, K::Choice, false, absent, std::move(choices), doc};
}

const char* kBroadcast =
    "the broadcast of the operands' shapes (numpy rules); dtype: the wider of the two (bf16 with f16 gives f32), "
    "where a rank-0 operand does not widen a tensor of its kind (int or float), as a Python scalar does not";
const char* kSame = "x's type";

std::vector<OpSpec> build() {
  std::vector<OpSpec> v;
  auto add = [&](Op op, std::string operands, std::string result, std::string doc, std::vector<AttrSpec> attrs = {}) {
    v.push_back(OpSpec{op, std::move(operands), std::move(result), std::move(doc), std::move(attrs), false, false});
    return &v.back();
  };
  // leaves
  add(Op::Input, "(none: declared in the graph header, `%x: f32[4,8] {...}`)", "its declared type",
      "A graph input. Its attributes say how a repro lays it out across ranks and fills it; parameters imply their "
      "init.",
      {opt("shard", K::Int, "replicated", "split over ranks along this dim"),
       opt("blocks", K::Ints, "one block", "the full block sizes along `shard` (a fused q|k|v), cut block by block"),
       choice("init", {"normal", "uniform", "ones", "zeros", "arange", "fan_in"}, "normal",
              "how the input is filled (fan_in: normal(0, 1/sqrt(last dim)))"),
       opt("mean", K::Number, "0", "init normal"), opt("std", K::Number, "1", "init normal"),
       opt("low", K::Number, "0", "init uniform"), opt("high", K::Number, "1", "init uniform"),
       opt("start", K::Number, "0", "init arange"), opt("step", K::Number, "1", "init arange"),
       opt("dim_order", K::Ints, "row-major",
           "the dims from outermost in memory to innermost (torch's dim_order): a transposed input"),
       opt("seed", K::String, "this repro's name",
           "draw the values as the repro of this name draws its input of this name (an export or a minified "
           "graph keeps its repro's values)")});
  add(Op::Full, "(none)", "its declared type", "A tensor of one value.",
      {req("value", K::Number, "the value (inf, -inf and nan are numbers)")});
  add(Op::Arange, "(none)", "[ceil((end - start) / step)] of `dtype`", "torch.arange: start, start + step, ... below end.",
      {opt("start", K::Number, "0", "the first value"), req("end", K::Number, "the bound, not included"),
       opt("step", K::Number, "1", "the increment, not 0"),
       opt("dtype", K::DType, "i64", "the values' dtype (not bool)")});
  // pointwise
  for (Op op : {Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Pow, Op::Maximum, Op::Minimum})
    add(op, "x, y: numbers", kBroadcast, "Elementwise, broadcasting.");
  for (Op op : {Op::Eq, Op::Ne, Op::Lt, Op::Le, Op::Gt, Op::Ge})
    add(op, "x, y: any dtype", "bool, the broadcast of the operands' shapes", "Elementwise comparison, broadcasting.");
  for (Op op : {Op::Neg, Op::Exp, Op::Log, Op::Sqrt, Op::Rsqrt, Op::Relu, Op::Silu, Op::Sigmoid, Op::Tanh, Op::Sin,
                Op::Cos, Op::Erf})
    add(op, "x: floating", kSame, "Elementwise.");
  add(Op::Gelu, "x: floating", kSame, "GELU.",
      {choice("approximate", {"none", "tanh"}, "none", "erf form (none) or the tanh approximation")});
  add(Op::Abs, "x: a number (not bool)", kSame, "Elementwise |x|.");
  add(Op::Clamp, "x: a number (not bool)", kSame, "Elementwise clamp to [min, max]; needs min, max or both.",
      {opt("min", K::Number, "no lower bound", "lower bound"),
       opt("max", K::Number, "no upper bound", "upper bound (not below min)")});
  add(Op::Where, "cond: bool, x, y", "the broadcast of the three shapes; dtype as for add of x and y",
      "x where cond holds, else y.");
  add(Op::Cast, "x: any dtype", "x's shape in dtype `to`", "Converts the dtype.",
      {req("to", K::DType, "the dtype to convert to")});
  add(Op::Cat, "x0, x1, ...: 1 to 64 tensors of one rank, equal outside `dim`",
      "the operands joined along dim; dtype: the widest", "Concatenation.",
      {req("dim", K::Int, "the dim to join along (negative counts from the end)")});
  add(Op::Contiguous, "x: any dtype", kSame, "A copy in row-major order, made only where a reader needs one.");
  add(Op::Pad, "x: any dtype", "x with each padded dim grown by its before + after", "A constant pad.",
      {req("pad", K::Ints, "(before, after) sizes per dim, last dim first, as torch's F.pad; none negative"),
       opt("value", K::Number, "0", "the fill")});
  add(Op::IndexSelect, "x, index: i64 or i32, 1-D", "x with dim `dim` of the index's length",
      "x's slices along dim at the index's positions (an indirect load).",
      {req("dim", K::Int, "the dim indexed")});
  add(Op::Gather, "x, index: i64, x's rank, no larger than x outside dim", "the index's shape in x's dtype",
      "x[..., index[i], ...] along dim for every position of the index (an indirect load).",
      {req("dim", K::Int, "the dim indexed")});
  add(Op::OneHot, "index: i64, each in [0, num_classes)", "i64: the index's shape + [num_classes]",
      "1 where the last dim's position is the index, else 0 (index arithmetic; an index outside the classes "
      "gives a row of zeros, where torch raises).",
      {req("num_classes", K::Int, "the classes: the last dim's size, at least 1")});
  // reductions
  const AttrSpec dims = opt("dims", K::Ints, "every dim", "the dims reduced (a list; negative count from the end)");
  const AttrSpec keepdim = opt("keepdim", K::Flag, "0", "keep the reduced dims as size 1");
  add(Op::Sum, "x: any dtype", "x without the reduced dims; integers and bool sum to i64", "Sum.", {dims, keepdim});
  add(Op::Mean, "x: floating", "x without the reduced dims", "Mean.", {dims, keepdim});
  add(Op::Amax, "x: a number", "x without the reduced dims", "Largest value.", {dims, keepdim});
  add(Op::Amin, "x: a number", "x without the reduced dims", "Smallest value.", {dims, keepdim});
  add(Op::Var, "x: floating", "x without the reduced dims", "Variance.",
      {dims, keepdim, opt("correction", K::Int, "1", "subtracted from the count (1: unbiased)")});
  add(Op::Argmax, "x: a number (not bool)", "i64: x without dim, or rank 0 over the flattened tensor",
      "The index of the first largest value (NaN counts as largest).",
      {opt("dim", K::Int, "the flattened tensor", "the dim searched (one dim)"), keepdim});
  add(Op::Cumsum, "x: any dtype", "x's shape; integers and bool give i64", "Running sum along dim (a scan).",
      {req("dim", K::Int, "the dim scanned")});
  add(Op::Softmax, "x: floating", kSame, "Softmax along dim; decomposed into amax, exp, sum and div.",
      {req("dim", K::Int, "the dim normalized")});
  add(Op::LogSoftmax, "x: floating", kSame, "Log-softmax along dim; decomposed.",
      {req("dim", K::Int, "the dim normalized")});
  add(Op::RmsNorm, "x: floating, weight: [last dim of x]", kSame,
      "x * rsqrt(mean(x^2 over the last dim) + eps) * weight, computed in f32; decomposed.",
      {opt("eps", K::Number, "1e-06", "added to the mean square")});
  add(Op::LayerNorm, "x: floating, weight, bias: [last dim of x]", kSame,
      "Layer norm over the last dim; decomposed.", {opt("eps", K::Number, "1e-05", "added to the variance")});
  // extern kernels
  add(Op::Linear, "x: [..., K], weight: [N, K], bias: [N] (optional)", "[..., N] in x's dtype",
      "x @ weight^T (+ bias): a library GEMM.",
      {choice("epilogue", {"gelu_tanh"}, "none",
              "an epilogue the GEMM applies itself (written by gemm_epilogue, cuda max-autotune)")});
  add(Op::LinearAddRank0, "x, weight, r: the GEMM's result type", "[..., N] in x's dtype",
      "linear(x, weight) plus r on rank 0 only (written by tp_rewrite).")
      ->internal = true;
  add(Op::Matmul, "a: [..., M, K], b: [..., K, N]", "[batch broadcast, M, N]; dtype: the wider",
      "Batched matrix product: a library GEMM.");
  add(Op::Sdpa, "q: [B, H, S, D], k, v: [B, Hkv, L, D] (H a multiple of Hkv)", "[B, H, S, D of v] in q's dtype",
      "Scaled dot-product attention, scale 1/sqrt(D) unless given; grouped-query when k and v have fewer heads.",
      {opt("causal", K::Flag, "1", "mask keys after the query's position"),
       opt("scale", K::Number, "1/sqrt(D)", "the scores' factor (a padded head dim keeps its own)")});
  add(Op::Embedding, "weight: [V, D], indices: i64", "indices' shape + [D] in weight's dtype", "Row lookup.");
  add(Op::Topk, "x: a number (not bool)", "i64: x with dim of size k",
      "The positions of the k largest values along dim (smallest with largest = 0), best first; the values are "
      "gather(x, topk(x)). A library kernel.",
      {req("k", K::Int, "how many, 1 to the dim's size"), opt("dim", K::Int, "-1", "the dim searched (one dim)"),
       opt("largest", K::Flag, "1", "the largest (1) or the smallest (0)")});
  const AttrSpec sort_dim = opt("dim", K::Int, "-1", "the dim sorted (one dim)");
  const AttrSpec descending = opt("descending", K::Flag, "0", "largest first");
  add(Op::Sort, "x: a number (not bool)", kSame, "x sorted along dim; stable (equal values keep their order); NaN "
      "sorts last ascending, first descending. Rows of 2 to 512 elements: a generated kernel sorting each row "
      "whole, its producers inlined (Inductor's GPU sort); longer rows: a library kernel.", {sort_dim, descending});
  add(Op::Argsort, "x: a number (not bool)", "i64: x's shape",
      "The positions that sort x along dim (sort's order, stable); generated or a library kernel as sort is.",
      {sort_dim, descending});
  {
    OpSpec* fp = add(Op::FastPath, "the matched nodes' inputs (1 to 8)", "[shape] of dtype, from its attributes",
                     "One stage of a hand-written fused kernel, put in place of the nodes a fast path matched "
                     "(written by fast_paths).",
                     {req("name", K::String, "the fast path"), req("dtype", K::DType, "its result's dtype"),
                      req("shape", K::Ints, "its result's shape")});
    fp->internal = true;
    fp->open = true;
  }
  // views
  add(Op::Reshape, "x: any dtype", "x's elements in `shape`", "A view.",
      {req("shape", K::Ints, "the new shape; one -1 takes what is left (write -1 where a size changes with world size)")});
  add(Op::Permute, "x: any dtype", "x's dims in the order given", "A view.",
      {req("dims", K::Ints, "every dim of x once")});
  add(Op::Transpose, "x: any dtype", "x with two dims swapped", "A view.",
      {req("dim0", K::Int, "one dim swapped"), req("dim1", K::Int, "the other dim swapped")});
  add(Op::Slice, "x: any dtype", "x with dim cut to the slice",
      "A view: [start, end) by step (as torch), or block `index` of `blocks`, world-relative: the same line means "
      "the same at every world size.",
      {req("dim", K::Int, "the dim sliced"), opt("start", K::Int, "0", "first position (negative: from the end)"),
       opt("end", K::Int, "the dim's size", "bound, not included (negative: from the end)"),
       opt("step", K::Int, "1", "at least 1"),
       opt("blocks", K::Ints, "(start/end/step)", "the full sizes of the blocks of a fused dim (q|k|v)"),
       opt("index", K::Int, "(with blocks)", "which block")});
  add(Op::Expand, "x: any dtype", "x broadcast to `shape`", "A view.",
      {req("shape", K::Ints, "the new shape; -1 keeps a dim of x")});
  add(Op::Flip, "x: any dtype", kSame, "Reverses the dims given (index arithmetic, never a strided view).",
      {req("dims", K::Ints, "the dims reversed")});
  // collectives
  const AttrSpec inplace = opt("inplace", K::Flag, "0", "written by capture for an in-place call outside a compiled graph");
  add(Op::AllReduce, "x: any dtype", kSame, "Sum over the ranks (c10d: Gloo, NCCL).",
      {choice("reduce_op", {"sum"}, "sum", "the reduction"), inplace});
  add(Op::AllGather, "x: rank >= 1", "x with dim 0 times the world size", "The ranks' pieces stacked along dim 0.",
      {opt("world", K::Int, "1", "the world size the line is typed at; a run takes its own"),
       opt("dim", K::Int, "0", "dim 0 only"), inplace});
  add(Op::ReduceScatter, "x: rank >= 1, dim 0 divisible by the world size", "x with dim 0 divided by the world size",
      "The sum over ranks, each rank keeping its piece of dim 0.",
      {opt("world", K::Int, "1", "the world size the line is typed at; a run takes its own"),
       opt("dim", K::Int, "0", "dim 0 only"), inplace});
  // mutation
  add(Op::CopyInto, "dst: a graph input, src: broadcasts to dst", "dst's type", "Writes src into the input dst.");
  // indirect stores
  const AttrSpec scatter_dim = req("dim", K::Int, "the dim the index points along");
  add(Op::Scatter, "self, index: i64 of self's rank, src: the index's shape, no larger than self outside dim",
      "self's type",
      "A copy of self with src[i] written at position index[i] along dim (torch.scatter): an indirect store. "
      "Two elements to one place: the last along dim wins.",
      {scatter_dim});
  add(Op::ScatterAdd, "self, index: i64 of self's rank, src: the index's shape, no larger than self outside dim",
      "self's type",
      "A copy of self with src[i] added at position index[i] along dim (torch.scatter_add), in order along dim: "
      "an indirect store, the same bits on every run.",
      {scatter_dim});
  add(Op::IndexAdd, "self, index: i64, 1-D, src: self's shape with dim the index's length", "self's type",
      "A copy of self with src's slices along dim added at the index's positions (torch.index_add), in order: an "
      "indirect store.",
      {scatter_dim});
  // host: each breaks the graph it is captured in
  add(Op::Print, "x: any dtype", kSame,
      "Prints x on the host and passes it on (`%y = print(%x) : f32[4]`): a graph break, as Python's print in a "
      "compiled function.");
  add(Op::Item, "x: one element", "f64[]", "x's value on the host: a graph break.");
  add(Op::Nonzero, "x: any dtype", "i64[-1, rank of x]: a size known only at run time",
      "The positions of x's nonzero elements: a graph break (data-dependent shape).");
  add(Op::If, "cond: one element; the arms' yields", "the arms' common type",
      "`%y = if(%c) : T { ... yield %a } else { ... yield %b }`: a branch on a value, a graph break; only the taken "
      "arm runs.");
  return v;
}

const std::vector<OpSpec>& specs() {
  static const std::vector<OpSpec> s = build();
  return s;
}

std::string names_of(const std::vector<AttrSpec>& attrs) {
  std::string r;
  for (const AttrSpec& a : attrs) r += (r.empty() ? "" : ", ") + a.name;
  return r;
}

std::string quoted_list(const std::vector<std::string>& xs) {
  std::string r;
  for (const std::string& x : xs) r += (r.empty() ? "\"" : ", \"") + x + "\"";
  return r;
}

std::string value_text(const Attr& v) {
  if (auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (auto* d = std::get_if<double>(&v)) return format_double(*d);
  if (auto* s = std::get_if<std::string>(&v)) return "\"" + *s + "\"";
  return shape_str(std::get<std::vector<int64_t>>(v));
}

// Why `v` is not a value of `a`, or empty.
std::string bad_value(const AttrSpec& a, const Attr& v) {
  const bool is_int = std::holds_alternative<int64_t>(v);
  const auto* s = std::get_if<std::string>(&v);
  switch (a.kind) {
    case K::Int:
      if (is_int) return "";
      break;
    case K::Flag:
      if (is_int && (std::get<int64_t>(v) == 0 || std::get<int64_t>(v) == 1)) return "";
      break;
    case K::Number:
      if (is_int || std::holds_alternative<double>(v)) return "";
      break;
    case K::String:
      if (s) return "";
      break;
    case K::Ints:
      if (std::holds_alternative<std::vector<int64_t>>(v)) return "";
      break;
    case K::DType: {
      DType t;
      if (s && parse_dtype(*s, &t)) return "";
      return "must name a dtype (\"bf16\", \"f16\", \"f32\", \"f64\", \"i64\", \"i32\", \"u8\", \"bool\"), got " +
             value_text(v);
    }
    case K::Choice:
      if (s && std::find(a.choices.begin(), a.choices.end(), *s) != a.choices.end()) return "";
      return "must be one of " + quoted_list(a.choices) + ", got " + value_text(v);
  }
  return std::string("must be ") + attr_kind_name(a.kind) + ", got " + value_text(v);
}

}  // namespace

const char* attr_kind_name(AttrKind k) {
  switch (k) {
    case K::Int: return "an integer";
    case K::Flag: return "a flag (0 or 1)";
    case K::Number: return "a number";
    case K::String: return "a string";
    case K::Ints: return "a list of integers like [0, 1]";
    case K::DType: return "a dtype";
    case K::Choice: return "one of the choices";
  }
  return "?";
}

std::string unknown_op_message(const std::string& name) {
  // the nearest name by edit distance, where it is near
  auto distance = [](const std::string& a, const std::string& b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      size_t diag = row[0];
      row[0] = i;
      for (size_t j = 1; j <= b.size(); ++j) {
        const size_t up = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
        diag = up;
      }
    }
    return row[b.size()];
  };
  std::string best;
  size_t best_d = 3;
  for (int i = 0; i < kOpCount; ++i) {
    const std::string n = op_name(static_cast<Op>(i));
    const size_t d = distance(name, n);
    if (d < best_d) best_d = d, best = n;
  }
  return "unknown op '" + name + "'" + (best.empty() ? "" : " (did you mean '" + best + "'?)") +
         "; `fusegate ops` lists every op";
}

const OpSpec& op_spec(Op op) {
  for (const OpSpec& s : specs())
    if (s.op == op) return s;
  internal_error(std::string("op ") + op_name(op) + " missing from the op reference");
}

bool check_attrs(Op op, const Attrs& attrs, AttrProblem* problem) {
  const OpSpec& spec = op_spec(op);
  const std::string name = op_name(op);
  for (const auto& [key, value] : attrs) {
    if (!key.empty() && key[0] == '@') continue;
    auto it = std::find_if(spec.attrs.begin(), spec.attrs.end(), [&](const AttrSpec& a) { return a.name == key; });
    if (it == spec.attrs.end()) {
      if (spec.open) continue;
      std::string takes = spec.attrs.empty() ? name + " takes no attributes" : name + " takes " + names_of(spec.attrs);
      // one spelling per concept: dim is one dim, dims a list
      auto has = [&](const char* n) {
        return std::any_of(spec.attrs.begin(), spec.attrs.end(), [&](const AttrSpec& a) { return a.name == n; });
      };
      if (key == "dim" && has("dims"))
        takes += "; dims is a list: dims = [" +
                 (std::holds_alternative<int64_t>(value) ? std::to_string(std::get<int64_t>(value)) : std::string("0")) +
                 "]";
      else if (key == "dims" && has("dim"))
        takes += "; dim is one dim, an integer";
      *problem = {key, "unknown attribute '" + key + "' (" + takes + "; `fusegate ops` lists every op)"};
      return false;
    }
    const std::string bad = bad_value(*it, value);
    if (!bad.empty()) {
      *problem = {key, "attribute '" + key + "' " + bad};
      return false;
    }
  }
  for (const AttrSpec& a : spec.attrs)
    if (a.required && !attrs.count(a.name)) {
      *problem = {"", "missing attribute '" + a.name + "', " + attr_kind_name(a.kind) + ": " + a.doc};
      return false;
    }
  return true;
}

}  // namespace fg
