// The op table: every op with its text name, fusion kind (STYLE 6: classify
// ops up front), arity and shape rule. Passes ask this table, never a switch
// of their own, what kind an op is.
#pragma once
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "fusion/ir/types.h"

namespace fg {

enum class FusionKind { Input, Pointwise, Reduction, Template, Extern, Collective, View, Mutation, Scatter, Host };
const char* fusion_kind_name(FusionKind k);

enum class Op {
  // leaves
  Input, Full,
  // pointwise. arange() {start, end, step, dtype} is a leaf too: its values
  // come from its index. contiguous is a copy (realized only where needed),
  // pad a constant pad (torch's F.pad order: last dim first).
  Add, Sub, Mul, Div, Pow, Maximum, Minimum, Neg, Exp, Log, Sqrt, Rsqrt, Relu, Gelu, Silu, Sigmoid,
  Tanh, Sin, Cos, Erf, Abs, Clamp, Where, Eq, Ne, Lt, Le, Gt, Ge, Cast, Cat, Arange, Contiguous, Pad,
  // indirect reads: index_select(x, idx) {dim} takes x's slices along dim
  // at a 1-D index; gather(x, idx) {dim} reads x[..., idx[i], ...] along dim
  // for every i of an index shaped like the result
  IndexSelect, Gather,
  // one_hot(idx) {num_classes}: i64, 1 where the last dim's position is
  // the index (index arithmetic, as arange)
  OneHot,
  // reductions
  Sum, Mean, Amax, Amin, Var,
  // argmax {dim, keepdim}: the index (i64) of the first largest value along
  // dim (NaN largest), or in the flattened tensor without dim
  Argmax,
  // cumsum {dim}: a scan, the running sum along dim (integers: i64); a
  // reduction to the scheduler, as Inductor treats its scans
  Cumsum,
  // composites, removed by decompose
  Softmax, LogSoftmax, RmsNorm, LayerNorm,
  // extern kernels. linear_add_rank0(a, w, r) is linear(a, w) plus r on rank
  // 0 only: what a row-parallel GEMM computes when a replicated residual
  // added after its all-reduce moves in front of it (passes/tp_rewrite).
  // fast_path(...) {name, stage, shape, dtype, ...} is one stage of a
  // hand-written fused kernel (kernels/fastpaths/) that passes/fast_paths
  // put in place of the nodes it matched; its result type is in its attributes.
  Linear, LinearAddRank0, Matmul, Sdpa, Embedding, FastPath,
  // topk(x) {k, dim, largest}: the i64 positions of the k largest (or
  // smallest) values along dim, best first (the values: gather(x, topk));
  // sort(x) {dim, descending}: the values in order, stable; argsort: their
  // positions. Library kernels, as Inductor falls back to ATen for them.
  Topk, Sort, Argsort,
  // views (flip is index arithmetic, never a strided view)
  Reshape, Permute, Transpose, Slice, Expand, Flip,
  // collectives (functional)
  AllReduce, AllGather, ReduceScatter,
  // mutation: copy_(dst, src) writes src into the graph input dst
  CopyInto,
  // indirect stores: a copy of self with src written (scatter) or added
  // (scatter_add) at the positions along dim an index gives, one index
  // element a src element; index_add(self, index, src) {dim} adds src's
  // slices along dim at a 1-D index's positions
  Scatter, ScatterAdd, IndexAdd,
  // host-side: never inside a compiled graph; capturing one breaks the graph.
  // if(pred, then, else) is a .fg branch on a tensor's value: the nodes of
  // its two arms come before it (attribute "@if" = branch number, "@arm" =
  // 1 then / 0 else) and it is the taken arm's yielded value.
  Print, Item, Nonzero, If,
};

constexpr int kOpCount = static_cast<int>(Op::If) + 1;

using Attr = std::variant<int64_t, double, std::string, std::vector<int64_t>>;
using Attrs = std::map<std::string, Attr>;

struct OpInfo {
  Op op;
  const char* name;     // text name in .fg and in kernel names
  const char* aten;     // ATen name used in kernel names ("add", "_to_copy")
  FusionKind kind;
  int min_inputs, max_inputs;
};

const OpInfo& op_info(Op op);

// The op reference: what each op reads and takes, as the parser checks it
// and `fusegate ops` (docs/OPS.md) prints it (fusion/ir/op_specs.cpp).
// One spelling per concept: `dim` is one dim (an integer), `dims` a list.
enum class AttrKind { Int, Flag, Number, String, Ints, DType, Choice };
const char* attr_kind_name(AttrKind k);  // "integer", "0 or 1", ...
struct AttrSpec {
  std::string name;
  AttrKind kind = AttrKind::Int;
  bool required = false;
  std::string absent;                // the value when absent, or what absence means
  std::vector<std::string> choices;  // Choice: the allowed values
  std::string doc;
};
struct OpSpec {
  Op op = Op::Input;
  std::string operands;  // what it reads, with the dtypes it takes
  std::string result;    // the result's shape and dtype
  std::string doc;
  std::vector<AttrSpec> attrs;
  bool internal = false;  // written by passes, never by hand (a .fg may still hold it)
  bool open = false;      // takes any attribute its writer sets (fast_path's matcher)
};
const OpSpec& op_spec(Op op);
// What is wrong with `attrs` for `op`: an unknown key, a value of the wrong
// kind, a value not among the choices, a required key missing. `key` names
// the attribute at fault (empty for a missing one); "@" keys are the
// parser's block tags and pass.
struct AttrProblem {
  std::string key;
  std::string message;
};
bool check_attrs(Op op, const Attrs& attrs, AttrProblem* problem);
// "unknown op 'topkk' (did you mean 'topk'?); ..." for a name no op has.
std::string unknown_op_message(const std::string& name);
// The reference of every op as Markdown (docs/OPS.md, `fusegate ops`), or
// of the op named `only` ("" when no op has that name).
std::string op_reference(const std::string& only = "");
bool op_from_name(const std::string& name, Op* out);
inline FusionKind fusion_kind(Op op) { return op_info(op).kind; }
inline const char* op_name(Op op) { return op_info(op).name; }

// A UserError naming the op: "<op>: <what>".
[[noreturn]] void type_error(Op op, const std::string& what);
bool is_unary_pointwise(Op op);
// Pointwise as ATen tags its ops (torch.Tag.pointwise), which Inductor's
// passes ask of a value's readers: fusegate's pointwise ops but the indirect
// loads, the index and constant makers, clone, cat and pad.
bool aten_pointwise(Op op);
bool is_binary_pointwise(Op op);
bool is_comparison(Op op);

// Attribute access with a clear error naming the op and the attribute.
int64_t attr_int(const Attrs& a, const std::string& key, Op op);
int64_t attr_int_or(const Attrs& a, const std::string& key, int64_t dflt);
double attr_float(const Attrs& a, const std::string& key, Op op);
double attr_float_or(const Attrs& a, const std::string& key, double dflt);
std::string attr_str_or(const Attrs& a, const std::string& key, const std::string& dflt);
std::vector<int64_t> attr_ints(const Attrs& a, const std::string& key, Op op);

// Output type of `op` on inputs of the given types; throws UserError saying
// what is wrong ("mul: shapes [2,3] and [4] do not broadcast").
TensorType infer_type(Op op, const std::vector<TensorType>& in, const Attrs& attrs);

// What a slice takes along its dim of size `len`: [start, end) by step,
// clamped to the dim. Two forms: `start`/`end`/`step` (as torch's slice),
// or `blocks`/`index`, world-relative: `blocks` are the full sizes of the
// blocks of a fused tensor (q|k|v) and the slice is block `index` of
// whatever share of them this rank holds (len = sum(blocks) / k, each block
// cut to block / k), so one .fg line means the same at every world size.
struct SliceBounds {
  int64_t dim = 0, start = 0, end = 0, step = 1;
};
SliceBounds slice_bounds(const Attrs& a, const Shape& in, Op op = Op::Slice);

// Broadcast two shapes (numpy rules); false if they do not broadcast.
bool broadcast_shapes(const Shape& a, const Shape& b, Shape* out);
// Normalise a possibly negative dim against a rank; throws on range error.
int64_t norm_dim(int64_t d, size_t rank, Op op);

}  // namespace fg
