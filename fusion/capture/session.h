// Capture: the C++ tensor API repros are written in, and the Session that
// records it.
//
// A repro calls ops on fg::Tensor. In mode A every op runs at once through
// the executor (eager, op by op). In modes B and C ops are recorded into the
// current graph; a host-side event (a `disabled` region, item(), a print,
// data-dependent control flow, an op the compiler does not support) ends the
// graph — a graph break, with its reason and the repro's source location —
// after which the graph is compiled and run, and capture starts a new one.
// The outputs of a graph at a break are the values the program still holds
// (tensors alive in the repro), as Dynamo keeps the live locals.
//
// Collectives: in mode A they run eagerly (in place for all_reduce_); in
// mode B every collective call sits in a disabled wrapper (a break per call);
// in mode C they are traced as functional collectives (an in-place
// all_reduce_ is rewritten to the functional op and the handle rebound, as
// Dynamo does), so a TP block is one graph.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fusion/ir/graph.h"

namespace fg {

// A concrete tensor owned by the runtime (opaque here: the compiler does not
// depend on LibTorch).
struct Concrete {
  virtual ~Concrete() = default;
};
using ConcreteP = std::shared_ptr<Concrete>;

struct GraphBreak {
  std::string reason;
  SourceLoc loc;
};

// What the session needs from a runtime.
class Executor {
 public:
  virtual ~Executor() = default;
  // Runs one op on concrete inputs (mode A, host ops, disabled regions);
  // `n` carries op, attrs and the inferred type, its inputs are `in`.
  virtual ConcreteP eager(const Node& n, const std::vector<ConcreteP>& in) = 0;
  // Compiles (or finds in its cache) and runs one captured graph.
  // `index` is the graph's position in this forward (its guard site).
  virtual std::vector<ConcreteP> run_graph(const Graph& g, const std::vector<ConcreteP>& inputs, int index) = 0;
  virtual TensorType type_of(const ConcreteP& t) = 0;
  virtual double item(const ConcreteP& t) = 0;
  virtual std::string describe(const ConcreteP& t) = 0;
  virtual int world_size() const = 0;
  virtual int rank() const = 0;
};

enum class Mode { Eager, CompiledDisabled, Compiled };
const char* mode_letter(Mode m);  // "A", "B", "C"

class Session;

struct TensorImpl {
  Session* session = nullptr;
  TensorType type;
  // the dtype the repro declares: type.dtype, but for the fp64 reference,
  // whose values are f64 (eager nodes carry it: rounding noise reads it)
  DType declared = DType::F32;
  ConcreteP value;  // set when concrete
  int node = -1;    // set when a node of the current graph
  std::string name; // a repro input's name, used for its graph input
  Attrs annotations; // a repro input's layout and init, shown on its graph input
};

// Location of the repro line that called an API function.
struct Here {
  SourceLoc loc;
  Here(const char* file = __builtin_FILE(), int line = __builtin_LINE(), const char* fn = __builtin_FUNCTION())
      : loc{file, line, fn} {}
  explicit Here(SourceLoc l) : loc(std::move(l)) {}
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}
  const TensorType& type() const { return impl_->type; }
  const Shape& shape() const { return impl_->type.shape; }
  DType dtype() const { return impl_->type.dtype; }
  int64_t size(int64_t dim) const;
  bool defined() const { return impl_ != nullptr; }
  const std::shared_ptr<TensorImpl>& impl() const { return impl_; }

 private:
  std::shared_ptr<TensorImpl> impl_;
};

class Session {
 public:
  Session(Mode mode, Executor* ex, std::string repro_file = {});
  Mode mode() const { return mode_; }
  int world_size() const { return ex_->world_size(); }
  int rank() const { return ex_->rank(); }

  // A concrete value entering the program (a repro input, with its layout
  // and init as .fg attributes); `declared`: the type the repro declares
  // where the value is held in another (the fp64 reference's f64).
  Tensor wrap(ConcreteP v, const std::string& name = {}, Attrs annotations = {},
              std::optional<DType> declared = std::nullopt);
  // Records or runs one op.
  Tensor op(Op op, const std::vector<Tensor>& in, Attrs attrs, const Here& here);
  Tensor full(double value, DType t, const Shape& shape, const Here& here);

  // Host-side events: each ends the current graph in modes B and C.
  double item(const Tensor& t, const Here& here = Here());
  void print(const std::string& msg, const Tensor& t, const Here& here = Here());
  bool branch_on(const Tensor& cond, const Here& here = Here());  // data-dependent control flow
  Tensor nonzero(const Tensor& t, const Here& here = Here());     // unsupported by the compiler
  // Runs `fn` eagerly outside any graph (torch.compiler.disable).
  void disabled(const std::string& what, const std::function<void()>& fn, const Here& here = Here());

  // Collectives over the executor's process group.
  void all_reduce_(Tensor& t, const Here& here = Here());  // in place, like dist.all_reduce
  Tensor all_reduce(const Tensor& t, const Here& here = Here());
  Tensor all_gather(const Tensor& t, const Here& here = Here());
  Tensor reduce_scatter(const Tensor& t, const Here& here = Here());

  // Ends the forward: compiles and runs what is left; returns concrete outputs.
  std::vector<ConcreteP> finish(const std::vector<Tensor>& outputs);
  ConcreteP concrete(const Tensor& t);  // forces a value (a break if pending)

  int graph_count() const { return graph_count_; }
  const std::vector<GraphBreak>& breaks() const { return breaks_; }
  const std::vector<std::string>& graph_hashes() const { return graph_hashes_; }

 private:
  bool capturing() const { return mode_ != Mode::Eager && disabled_depth_ == 0; }
  int node_for(const Tensor& t);
  void graph_break(const std::string& reason, const SourceLoc& loc);
  void flush(const std::vector<Tensor>& extra_outputs);
  Tensor collective(Op op, const Tensor& t, const Here& here, bool in_place);
  SourceLoc located(const Here& h) const;

  Mode mode_;
  Executor* ex_;
  std::string repro_file_;
  int disabled_depth_ = 0;
  Graph cur_;
  std::vector<std::shared_ptr<TensorImpl>> cur_inputs_;       // concrete values lifted into cur_
  std::vector<std::weak_ptr<TensorImpl>> cur_impls_;          // node id -> handle
  int graph_count_ = 0;
  std::vector<GraphBreak> breaks_;
  std::vector<std::string> graph_hashes_;
};

// ---- the tensor API (free functions) --------------------------------------
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator-(const Tensor& a);

Tensor add(const Tensor& a, const Tensor& b, const Here& h = Here());
Tensor sub(const Tensor& a, const Tensor& b, const Here& h = Here());
Tensor mul(const Tensor& a, const Tensor& b, const Here& h = Here());
Tensor div(const Tensor& a, const Tensor& b, const Here& h = Here());
Tensor pow(const Tensor& a, double e, const Here& h = Here());
Tensor maximum(const Tensor& a, const Tensor& b, const Here& h = Here());
Tensor unary(Op op, const Tensor& a, const Here& h = Here());
Tensor neg(const Tensor& a, const Here& h = Here());
Tensor exp(const Tensor& a, const Here& h = Here());
Tensor log(const Tensor& a, const Here& h = Here());
Tensor sqrt(const Tensor& a, const Here& h = Here());
Tensor rsqrt(const Tensor& a, const Here& h = Here());
Tensor relu(const Tensor& a, const Here& h = Here());
Tensor gelu(const Tensor& a, bool tanh_approx = false, const Here& h = Here());
Tensor silu(const Tensor& a, const Here& h = Here());
Tensor sigmoid(const Tensor& a, const Here& h = Here());
Tensor tanh(const Tensor& a, const Here& h = Here());
Tensor sin(const Tensor& a, const Here& h = Here());
Tensor cos(const Tensor& a, const Here& h = Here());
Tensor where(const Tensor& c, const Tensor& a, const Tensor& b, const Here& h = Here());
Tensor compare(Op op, const Tensor& a, const Tensor& b, const Here& h = Here());
Tensor cast(const Tensor& a, DType t, const Here& h = Here());
Tensor sum(const Tensor& a, std::vector<int64_t> dims, bool keepdim = false, const Here& h = Here());
Tensor mean(const Tensor& a, std::vector<int64_t> dims, bool keepdim = false, const Here& h = Here());
Tensor amax(const Tensor& a, std::vector<int64_t> dims, bool keepdim = false, const Here& h = Here());
Tensor var(const Tensor& a, std::vector<int64_t> dims, bool keepdim = false, int64_t correction = 1,
           const Here& h = Here());
Tensor softmax(const Tensor& a, int64_t dim, const Here& h = Here());
Tensor rms_norm(const Tensor& x, const Tensor& w, double eps, const Here& h = Here());
Tensor layer_norm(const Tensor& x, const Tensor& w, const Tensor& b, double eps, const Here& h = Here());
Tensor linear(const Tensor& x, const Tensor& w, const Here& h = Here());
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b, const Here& h = Here());
Tensor matmul(const Tensor& a, const Tensor& b, const Here& h = Here());
Tensor reshape(const Tensor& a, Shape shape, const Here& h = Here());
Tensor permute(const Tensor& a, std::vector<int64_t> dims, const Here& h = Here());
Tensor transpose(const Tensor& a, int64_t d0, int64_t d1, const Here& h = Here());
Tensor slice(const Tensor& a, int64_t dim, int64_t start, int64_t end, int64_t step = 1, const Here& h = Here());
Tensor cat(const std::vector<Tensor>& xs, int64_t dim, const Here& h = Here());
Tensor expand(const Tensor& a, Shape shape, const Here& h = Here());
Tensor sdpa_causal(const Tensor& q, const Tensor& k, const Tensor& v, const Here& h = Here());
Tensor embedding(const Tensor& weight, const Tensor& idx, const Here& h = Here());

}  // namespace fg
