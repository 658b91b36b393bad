// The lowering's inner workings, shared by lower.cpp (the walk over the
// graph, buffers, externs, collectives, mutations), lower_pointwise.cpp,
// lower_reduction.cpp and lower_view.cpp: a lowered Value, the loaders that
// compute it, and the Lowerer that turns graph nodes into Values and
// scheduler nodes. Included by those files alone; lower.h is the pass.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "fusion/passes/lower.h"

namespace fg::lowering {

using Coords = std::vector<IndexP>;
// Loaders nest (a value inlined into a value inlined into ...); sharing them
// keeps copies cheap.
using LoadFn = std::shared_ptr<const std::function<ExprP(const Coords&)>>;
template <typename F>
LoadFn make_loader(F f) { return std::make_shared<const std::function<ExprP(const Coords&)>>(std::move(f)); }

// A lowered value: either backed by a buffer through a strided layout, or a
// loader that computes it from other values (inlined).
using Relayout = std::function<std::optional<Layout>(const Layout&)>;

// The repro source lines a value covers: the union of its node's and of
// every value inlined into it, kept as a shared tree of unions, flattened
// only where a scheduler node is made (copying the growing set into each
// value of an inlined chain cost a 50k chain of relus a second).
class SourceLines {
 public:
  SourceLines() = default;
  SourceLines(std::set<std::string> own);  // NOLINT: a set of lines is a SourceLines
  void add(const SourceLines& other);
  std::vector<std::string> flat() const;  // sorted, each once

 private:
  struct Part {
    std::set<std::string> own;
    std::shared_ptr<const Part> a, b;
  };
  std::shared_ptr<const Part> p_;
};

struct Value {
  TensorType type;
  LoadFn load;
  int buffer = -1;
  Layout layout;
  // A chain of views over the value of graph node `view_base`, not yet in a
  // buffer: `relayout` maps that value's buffer layout to this view's.
  int view_base = -1;
  Relayout relayout;
  std::set<std::string> origins;
  SourceLines lines;  // repro source locations of the graph nodes it covers
  bool storage() const { return buffer >= 0; }
};

inline std::string coords_key(const Coords& c) {
  std::string k;
  for (const auto& i : c) k += i->key + ";";
  return k;
}

// Memoises a loader per coordinate tuple, so that a value inlined twice at
// the same index is one expression (printed once).
template <typename F>
LoadFn memo(F f) {
  auto cache = std::make_shared<std::unordered_map<std::string, ExprP>>();
  return make_loader([f = std::move(f), cache](const Coords& c) {
    std::string k = coords_key(c);
    auto it = cache->find(k);
    if (it != cache->end()) return it->second;
    ExprP e = f(c);
    (*cache)[k] = e;
    return e;
  });
}

// Coordinates of an input broadcast to `out` (numpy rules).
inline Coords broadcast_coords(const Coords& c, const Shape& out, const Shape& in) {
  Coords r;
  size_t off = out.size() - in.size();
  for (size_t k = 0; k < in.size(); ++k) r.push_back(in[k] == 1 ? ix_const(0) : c[k + off]);
  return r;
}

class Lowerer {
 public:
  Lowerer(const Graph& g, const LowerOptions& o) : g_(g), opts_(o), users_(g.users()) {
    for (int o2 : g.outputs) ++extra_uses_[o2];
    out_.name = g.name;
  }

  LoweredGraph run();

 private:
  // Nodes that use the value, each once (mul(d, d) is one user), and the
  // graph's output once: what Inductor's reuse heuristic counts (an FX
  // node's users).
  int uses(int id) const {
    const auto& u = users_[static_cast<size_t>(id)];
    const std::set<int> distinct(u.begin(), u.end());
    return static_cast<int>(distinct.size()) + (extra_uses_.count(id) ? 1 : 0);
  }

  bool should_realize(const Node& n, const Value& v);
  // Inductor's run_node for a graph output (cuda): a value of one or more
  // dims is stored as soon as it is lowered, in a layout fixed from then on
  // (require_exact_strides: later readers load that buffer, and a cat
  // copies it into its slice rather than retargeting its kernel); a view's
  // base is stored and the view reads it; a 0-d value is stored then only
  // where other nodes read it too.
  void store_output(const Node& n);
  // A view of a pointwise value no buffer holds, for a graph output: its
  // base stored (its layout fixed), the view a strided read of that buffer
  // where its strides can say it; else `v` as it is.
  Value view_of_stored_base(const Value& v);
  // buffers whose layout a graph output fixed (store_output)
  std::set<int> fixed_;
  // Inductor's mark_reuse: a value used `users` times is stored when its
  // body is heavy (> 4 loads or > 30 values)
  bool realize_on_reuse(const Value& v, int64_t users) const;
  static bool heavy_on_reuse(const InlineStats& st, int64_t users);
  // A view `v` of graph node n over a value no buffer holds: that base
  // value marked for reuse with n's users (mark_reuse through the view);
  // if stored, `v` reads its buffer where its strides can say it.
  void reuse_through_view(const Node& n, Value& v);
  // the base of view `v` stored where `users` reads of it would repeat too
  // much work (Inductor's mark_reuse), `v` then read from its buffer
  void reuse_view_base(Value& v, int64_t users);
  // Inductor's broadcast of an operand (broadcast_tensors, then expand's
  // mark_reuse): an unstored operand of n read broadcast, N elements of n's
  // output to one of its own, counts N uses
  void mark_broadcast_reuse(const Node& n);
  int new_buffer(const std::string& name, DType t, const Layout& layout, int input_index = -1);
  Value from_storage(int buffer, const Layout& l, DType t, std::set<std::string> origins = {},
                     SourceLines lines = {});

  // Records a scheduler node with its reads and dependencies.
  SchedNode& add_node(SchedNode sn);
  // `v` stored in a buffer of its own: row-major, or (flexible) in the
  // layout the compiler chooses, padded where pad_strides says so
  Value realize(const Value& v, bool flexible = false);
  // A pointwise node that stores `body` over `loop` into buffer `b` laid
  // out as `store` (v's origins and lines): b read as `read_as` after.
  Value store_copy(const Value& v, int b, const Shape& loop, ExprP body, const Layout& store, const Layout& read_as);
  Layout flexible_layout(const Shape& s, DType t) const;
  bool is_output(int id) const;
  // The layout of graph value `id` stored by the compiler: row-major for a
  // graph output (eager's strides), else flexible_layout
  Layout chosen_layout(int id, const Shape& s, DType t) const;
  // A GEMM's operand in a layout it can read as the 2-D or 3-D matrix ATen
  // gives it (a view), else a row-major copy: where the padding breaks that
  // view, or where a permuted operand's batch dims do not merge.
  Value gemm_operand(const Node& n, size_t k, const Value& v);

  const Value& in(const Node& n, size_t k) { return values_[static_cast<size_t>(n.inputs[k])]; }

  // An extern's input: a view of a pointwise value realizes that value in
  // its own order and reads it through the view when the view keeps the
  // innermost dim contiguous (what the library kernels take); anything else
  // is realized as it is read.
  Value realize_for_extern(const Value& v);
  std::string origin_of(const Node& n) const { return n.origin.empty() ? op_info(n.op).aten : n.origin; }
  // Where the repro made `n` (nothing when unknown: a graph built in code).
  static std::set<std::string> line_of(const Node& n) {
    if (!n.loc.known()) return {};
    return {n.loc.str()};
  }
  static void merge(std::set<std::string>& into, const std::set<std::string>& from) { into.insert(from.begin(), from.end()); }
  static void merge(SourceLines& into, const SourceLines& from) { into.add(from); }

  Value lower_node(const Node& n);
  Value lower_input(const Node& n);
  Value lower_pointwise(const Node& n);
  Value lower_reduction(const Node& n);
  // One reduction node over `s` (reducing `dims` by `op`) into a new
  // row-major buffer of n's type.
  Value add_reduction(const Node& n, const Shape& s, const std::vector<int64_t>& dims, Op op, ExprP body,
                      const std::set<std::string>& origins, const SourceLines& lines, bool descending = false);

  // Inductor's hint (Reduction.num_splits): a reduction is INNER when most
  // of its full-size reads (those that use every iteration variable) step
  // through some reduced dim with a stride of 1 (or negative), OUTER when
  // they step over every one with a stride of 0 or over 1; none when no
  // read is full-size (then it is never split, unless it makes one value).
  enum class ReadHint { None, Inner, Outer };
  static ReadHint read_hint(const ExprP& body, const Shape& s, const std::vector<int64_t>& dims);
  // The first kernel of a split reduction, over [rows..., block], itself
  // split where Inductor's Reduction.create, called again for it, splits it
  // (an amin over 8514 values: 2 blocks, each then in 34).
  Value intermediate_reduction(const Shape& shape, ExprP body, Op op, DType acc, double identity,
                               const Shape& out_shape, const std::set<std::string>& origins,
                               const SourceLines& lines);

  // A reduction in two kernels (Inductor's create_multilayer): the first
  // reduces each output's elements in `split` blocks of ceil(r / split)
  // (a block's tail past r reads the reduction's identity), into an f32
  // buffer for 16-bit types; the second reduces the blocks.
  Value lower_split_reduction(const Node& n, const Value& x, const std::vector<int64_t>& dims, int64_t r,
                              int64_t split, const std::set<std::string>& origins, const SourceLines& lines);
  // One kernel of a split reduction: `op` over the last dim of `shape`
  // into a row-major buffer of `out_shape`.
  Value add_split_stage(const Shape& shape, ExprP body, Op op, DType dt, const Shape& out_shape,
                        const std::set<std::string>& origins, const SourceLines& lines);
  // A variance's sum of squared deviations split as Inductor splits a
  // Welford reduction (WelfordReduction.create_multilayer): each block's
  // own mean from the block sums of the mean's first kernel and its squared
  // deviations from it, summed in the same kernel; then the blocks combined
  // (Chan: M2 = sum M2_b + n_b (mean_b - mean)^2) beside the mean's second
  // kernel. Two kernels, where a sum of (x - mean)^2 split on its own is a
  // third and a fourth after the mean's two. -1 where `n` is not such a
  // sum or its mean was not split alike (dims, r and split).
  int welford_mean_sum(const Node& n, const std::vector<int64_t>& dims, int64_t r, int64_t split) const;
  // A full reduction of `r` elements of `x` that reads (through pointwise
  // values) reductions of one (numel, rnumel) covering r: that numel, the
  // split Inductor takes from them (its existing ranges); else 0.
  int64_t existing_split(const Value& x, int64_t r) const;
  Value lower_welford_split(const Node& n, int mean_sum, const std::vector<int64_t>& dims, int64_t r, int64_t split,
                            const std::set<std::string>& origins, const SourceLines& lines);
  // The first kernel of each split reduction, by node: its block sums.
  struct SplitPartial {
    Value partial;
    std::vector<int64_t> dims;
    int64_t r = 0, split = 0;
  };
  std::map<int, SplitPartial> split_partials_;
  Value lower_view(const Node& n);

  // out = A W^T (+ bias) as a generated kernel: A is read through its
  // layout over (m, k), so a batch of rows can be any strided view.
  Value lower_gemm_template(const Node& n);
  Value lower_extern(const Node& n);
  Value lower_collective(const Node& n);
  Value lower_copy_into(const Node& n);
  // A pointwise node storing `body` over `shape` into `layout` of `buffer`,
  // a buffer other nodes write too (a mutation: copy_ into an input, a
  // cat's piece); origins and lines are `src`'s and `n`'s, its name
  // `prefix` and its place.
  void add_store(int buffer, const Layout& layout, const Shape& shape, ExprP body, const Value& src, const Node& n,
                 const char* origin, const char* prefix);
  Value lower_scatter(const Node& n);
  // sort and argsort as Inductor lowers them for GPUs (lower_reduction.cpp)
  Value lower_sort(const Node& n);

  // cat as a buffer its pieces are stored into, or one pointwise value
  // (lower_cat.cpp: Inductor's rules)
  bool concat_as_kernel(const Node& n);
  Value lower_concat(const Node& n);
  // Whether every user of node `id` is a pointwise op, views followed (a
  // graph output is not one).
  bool only_pointwise_uses(int id) const;
  // Whether the node that last wrote `buffer` is of `kind`.
  bool writer_is(int buffer, SNKind kind) const;
  // Whether that node is a reduction as Inductor's cat sees one (not a
  // sort, a scan or an indirect store).
  bool writer_is_reduction(int buffer) const;

  const Graph& g_;
  const LowerOptions& opts_;
  std::vector<std::vector<int>> users_;
  std::map<int, int> extra_uses_;
  LoweredGraph out_;
  std::vector<Value> values_;
  std::map<int, int> last_writer_;
  std::map<int, std::vector<int>> readers_;
  SourceLoc loc_;
  // the next indirect index variable's number (unique in the graph)
  std::shared_ptr<int> indirect_vars_ = std::make_shared<int>(0);
  // ops lowered into generated code so far (FUSEGATE_BISECT=lowerings:K):
  // past the limit an op is a library call (lower_fallback)
  int64_t lowered_ = 0;
  bool generated(const Node& n);
  Value lower_fallback(const Node& n);
};

}  // namespace fg::lowering
