#include "fusion/capture/session.h"

#include "fusion/errors.h"
#include "fusion/ir/text.h"
#include "fusion/logs.h"

namespace fg {

const char* mode_letter(Mode m) {
  switch (m) {
    case Mode::Eager: return "A";
    case Mode::CompiledDisabled: return "B";
    case Mode::Compiled: return "C";
  }
  return "?";
}

int64_t Tensor::size(int64_t dim) const {
  return shape()[static_cast<size_t>(norm_dim(dim, shape().size(), Op::Reshape))];
}

Session::Session(Mode mode, Executor* ex, std::string repro_file)
    : mode_(mode), ex_(ex), repro_file_(std::move(repro_file)) {}

SourceLoc Session::located(const Here& h) const {
  SourceLoc l = h.loc;
  // report paths relative to the project: ".../repros/x.cpp" -> "repros/x.cpp"
  for (const char* top : {"/repros/", "/tests/", "/bench/"}) {
    size_t at = l.file.rfind(top);
    if (at != std::string::npos) { l.file = l.file.substr(at + 1); break; }
  }
  return l;
}

Tensor Session::wrap(ConcreteP v, const std::string& name, Attrs annotations, std::optional<DType> declared) {
  auto impl = std::make_shared<TensorImpl>();
  impl->name = name;
  impl->annotations = std::move(annotations);
  impl->session = this;
  impl->type = ex_->type_of(v);
  impl->declared = declared ? *declared : impl->type.dtype;
  impl->value = std::move(v);
  return Tensor(impl);
}

int Session::node_for(const Tensor& t) {
  const auto& impl = t.impl();
  FG_CHECK(impl->session == this, "tensor from another session");
  if (impl->node >= 0) return impl->node;
  // a concrete value enters the graph as an input (once)
  for (size_t i = 0; i < cur_inputs_.size(); ++i)
    if (cur_inputs_[i] == impl) return cur_.input_ids()[i];
  std::string name = impl->name.empty() ? "arg" + std::to_string(cur_inputs_.size()) : impl->name;
  for (const auto& n : cur_.nodes)
    if (n.name == name) name += "_" + std::to_string(cur_inputs_.size());
  int id = cur_.add(Op::Input, {}, impl->annotations, &impl->type, name);
  cur_inputs_.push_back(impl);
  cur_impls_.resize(cur_.nodes.size());
  return id;
}

Tensor Session::op(Op op, const std::vector<Tensor>& in, Attrs attrs, const Here& here) {
  FG_CHECK(fusion_kind(op) != FusionKind::Host, "host ops go through their own Session calls");
  SourceLoc loc = located(here);
  auto impl = std::make_shared<TensorImpl>();
  impl->session = this;
  if (!capturing()) {
    Node n;
    n.op = op;
    n.attrs = std::move(attrs);
    n.loc = loc;
    std::vector<TensorType> ts;
    std::vector<ConcreteP> vals;
    for (const auto& t : in) {
      ts.push_back({t.impl()->declared, t.type().shape});
      vals.push_back(concrete(t));
    }
    n.type = infer_type(op, ts, n.attrs);  // as declared (executors hold f64 for it in fp64)
    impl->value = ex_->eager(n, vals);
    impl->type = ex_->type_of(impl->value);
    impl->declared = n.type.dtype;
    return Tensor(impl);
  }
  std::vector<int> ids;
  for (const auto& t : in) ids.push_back(node_for(t));
  int id = cur_.add(op, ids, std::move(attrs), nullptr, {}, loc);
  impl->node = id;
  impl->type = cur_.node(id).type;
  impl->declared = impl->type.dtype;
  cur_impls_.resize(cur_.nodes.size());
  cur_impls_[static_cast<size_t>(id)] = impl;
  return Tensor(impl);
}

Tensor Session::full(double value, DType t, const Shape& shape, const Here& here) {
  TensorType ty{t, shape};
  auto impl = std::make_shared<TensorImpl>();
  impl->session = this;
  if (!capturing()) {
    Node n;
    n.op = Op::Full;
    n.attrs = {{"value", value}};
    n.type = ty;
    n.loc = located(here);
    impl->value = ex_->eager(n, {});
    impl->type = ex_->type_of(impl->value);  // the fp64 reference fills in f64
    impl->declared = t;
    return Tensor(impl);
  }
  int id = cur_.add(Op::Full, {}, {{"value", value}}, &ty, {}, located(here));
  impl->node = id;
  impl->type = ty;
  impl->declared = t;
  cur_impls_.resize(cur_.nodes.size());
  cur_impls_[static_cast<size_t>(id)] = impl;
  return Tensor(impl);
}

void Session::graph_break(const std::string& reason, const SourceLoc& loc) {
  breaks_.push_back({reason, loc});
  if (log_enabled("graph_breaks"))
    log_write("graph_breaks", "graph break: " + reason + " at " + loc.str());
  flush({});
}

void Session::flush(const std::vector<Tensor>& extra_outputs) {
  bool has_ops = false;
  for (const auto& n : cur_.nodes) has_ops = has_ops || n.op != Op::Input;
  if (has_ops) {
    // outputs: values the program still holds, then the explicit ones
    std::vector<std::shared_ptr<TensorImpl>> outs;
    auto add_out = [&](const std::shared_ptr<TensorImpl>& impl) {
      if (!impl || impl->node < 0) return;
      for (const auto& o : outs)
        if (o == impl) return;
      outs.push_back(impl);
    };
    for (const auto& t : extra_outputs) add_out(t.impl());
    if (extra_outputs.empty())
      for (const auto& w : cur_impls_) add_out(w.lock());
    for (const auto& o : outs) cur_.outputs.push_back(o->node);
    cur_.name = "graph" + std::to_string(graph_count_);
    graph_hashes_.push_back(graph_hash(cur_));
    std::vector<ConcreteP> ins;
    for (const auto& i : cur_inputs_) ins.push_back(i->value);
    std::vector<ConcreteP> res = ex_->run_graph(cur_, ins, graph_count_);
    FG_CHECK(res.size() == outs.size(), "graph returned the wrong number of outputs");
    for (size_t i = 0; i < outs.size(); ++i) {
      outs[i]->value = res[i];
      outs[i]->node = -1;
    }
    ++graph_count_;
  }
  // handles to values that were not outputs are dead: nothing can read them
  for (const auto& w : cur_impls_)
    if (auto impl = w.lock(); impl && impl->node >= 0) impl->node = -1;
  cur_ = Graph();
  cur_inputs_.clear();
  cur_impls_.clear();
}

ConcreteP Session::concrete(const Tensor& t) {
  if (t.impl()->node >= 0) flush({});
  FG_CHECK(t.impl()->value != nullptr, "value of a tensor was lost at a graph break");
  return t.impl()->value;
}

double Session::item(const Tensor& t, const Here& here) {
  if (capturing()) graph_break("Tensor.item() call: a host sync", located(here));
  return ex_->item(concrete(t));
}

void Session::print(const std::string& msg, const Tensor& t, const Here& here) {
  if (capturing()) graph_break("host callback print(\"" + msg + "\")", located(here));
  std::string text = msg + ": " + ex_->describe(concrete(t));
  if (std::getenv("FUSEGATE_QUIET_PRINT") == nullptr) log_write("print", text);
}

bool Session::branch_on(const Tensor& cond, const Here& here) {
  if (capturing()) graph_break("data-dependent control flow (branch on a tensor value)", located(here));
  return ex_->item(concrete(cond)) != 0;
}

Tensor Session::nonzero(const Tensor& t, const Here& here) {
  if (capturing()) graph_break("unsupported op nonzero (data-dependent output shape)", located(here));
  Node n;
  n.op = Op::Nonzero;
  n.type = infer_type(Op::Nonzero, {t.type()}, {});
  n.loc = located(here);
  return wrap(ex_->eager(n, {concrete(t)}));
}

void Session::disabled(const std::string& what, const std::function<void()>& fn, const Here& here) {
  if (capturing()) graph_break("call to disabled function " + what + " (torch.compiler.disable)", located(here));
  ++disabled_depth_;
  try {
    fn();
  } catch (...) {
    --disabled_depth_;
    throw;
  }
  --disabled_depth_;
}

Tensor Session::collective(Op op, const Tensor& t, const Here& here, bool in_place) {
  Attrs attrs;
  if (op != Op::AllReduce) {
    attrs["world"] = int64_t{world_size()};
    attrs["dim"] = int64_t{0};
  } else {
    attrs["reduce_op"] = std::string("sum");
  }
  if (in_place && (mode_ != Mode::Compiled || disabled_depth_ > 0)) attrs["inplace"] = int64_t{1};
  if (mode_ == Mode::CompiledDisabled && disabled_depth_ == 0) {
    Tensor r;
    std::string name = std::string(op_name(op)) + (in_place ? "_" : "");
    disabled(name, [&] { r = this->op(op, {t}, attrs, here); }, here);
    return r;
  }
  return this->op(op, {t}, attrs, here);
}

void Session::all_reduce_(Tensor& t, const Here& here) {
  Tensor r = collective(Op::AllReduce, t, here, true);
  // in place: the caller's handle (and every copy of it) now holds the result
  auto& impl = *t.impl();
  impl.value = r.impl()->value;
  impl.node = r.impl()->node;
  impl.declared = r.impl()->declared;
  if (impl.node >= 0) cur_impls_[static_cast<size_t>(impl.node)] = t.impl();
}

Tensor Session::all_reduce(const Tensor& t, const Here& here) { return collective(Op::AllReduce, t, here, false); }
Tensor Session::all_gather(const Tensor& t, const Here& here) { return collective(Op::AllGather, t, here, false); }
Tensor Session::reduce_scatter(const Tensor& t, const Here& here) {
  return collective(Op::ReduceScatter, t, here, false);
}

std::vector<ConcreteP> Session::finish(const std::vector<Tensor>& outputs) {
  bool pending = false;
  for (const auto& t : outputs) pending = pending || t.impl()->node >= 0;
  if (pending) flush(outputs);
  else flush({});
  std::vector<ConcreteP> r;
  for (const auto& t : outputs) r.push_back(concrete(t));
  return r;
}

}  // namespace fg
