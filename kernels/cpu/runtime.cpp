#include "kernels/cpu/runtime.h"

#include <algorithm>
#include <chrono>
#include <sstream>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/rand.h>
#include "fusion/bisect.h"
#include "fusion/errors.h"
#include "fusion/logs.h"
#include "kernels/collectives/collectives.h"
#include "kernels/cpu/aten_trace.h"
#include "kernels/cpu/jit.h"
#include "kernels/fastpaths/runtime.h"

namespace fg {

ConcreteP wrap_aten(at::Tensor t) { return std::make_shared<AtenValue>(std::move(t)); }

const at::Tensor& unwrap(const ConcreteP& c) {
  auto* v = dynamic_cast<AtenValue*>(c.get());
  FG_CHECK(v != nullptr, "value from another runtime");
  return v->tensor;
}

// Host kernels: one shared object, a function per kernel.
class HostModule : public KernelModule {
 public:
  explicit HostModule(const KernelProgram& p) : so_(jit_compile(p.module_source)) {
    for (const auto& k : p.kernels)
      fns_.push_back(k.generated() ? reinterpret_cast<void (*)(void**)>(so_->symbol(k.name)) : nullptr);
  }
  void launch(size_t index, const std::vector<void*>& ptrs) override {
    fns_[index](const_cast<void**>(ptrs.data()));
  }

 private:
  std::shared_ptr<JitModule> so_;
  std::vector<void (*)(void**)> fns_;
};

std::unique_ptr<KernelModule> load_host_module(const KernelProgram& p) { return std::make_unique<HostModule>(p); }

AtenExecutor::AtenExecutor(Collectives* coll, int rank, int world, FusionPolicy fusion, bool upcast_fp64,
                           Backend backend)
    : coll_(coll),
      backend_(backend),
      device_(at::kCPU),
      rank_(rank),
      world_(world),
      fusion_(fusion) {
  if (backend == Backend::Cuda) {
    if (!cuda_backend_built())
      user_error("this fusegate was built without the cuda runtime (its LibTorch has no CUDA): use --backend cpu");
    device_ = at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(cuda_select_device(rank)));
  }
  ctx_.collectives = coll;
  ctx_.rank = rank;
  ctx_.upcast_fp64 = upcast_fp64;
  ctx_.device = device_;
}

AtenExecutor::~AtenExecutor() = default;

namespace {
std::string guard_of(const std::vector<at::Tensor>& ins, std::vector<Layout>* layouts);
void launch_cost(const LoweredGraph& lg, const Kernel& k, double* bytes, double* flops);
}  // namespace

// What a compiled graph is specialised for: input types and layouts, the
// world size and the fusion policy. A site whose guard changes recompiles.
std::string AtenExecutor::guard_key(const std::vector<at::Tensor>& ins, std::vector<Layout>* layouts) const {
  return guard_of(ins, layouts) + "|world=" + std::to_string(world_) + "|fusion=" + policy_name(fusion_);
}

void AtenExecutor::synchronize() const {
  if (backend_ == Backend::Cuda) cuda_synchronize();
}

void AtenExecutor::begin_forward() {
  launches_.clear();
  outside_.clear();
  graphs_run_.clear();
}

namespace {
// One rounding's worth of relative noise on `r`, the value of `n` (see
// set_rounding_noise): views, inputs, constants, integers and f64 are kept.
at::Tensor with_rounding_noise(const Node& n, const at::Tensor& r, uint64_t draw) {
  const FusionKind k = fusion_kind(n.op);
  if (!r.defined() || !r.is_floating_point() || k == FusionKind::View || k == FusionKind::Mutation ||
      k == FusionKind::Input || n.op == Op::Full)
    return r;
  const double u = n.type.dtype == DType::BF16 ? 0x1p-8
                   : n.type.dtype == DType::F16 ? 0x1p-11
                   : n.type.dtype == DType::F32 ? 0x1p-24
                                                : 0.0;
  if (u == 0.0) return r;
  auto gen = at::detail::createCPUGenerator(0x9e3779b97f4a7c15ULL ^ draw);
  const at::Tensor d = at::rand(r.sizes(), gen, at::TensorOptions().dtype(at::kDouble)).mul(2 * u).sub(u);
  return r.mul(d.add(1.0).to(r.device(), r.scalar_type()));
}
}  // namespace

ConcreteP AtenExecutor::eager(const Node& n, const std::vector<ConcreteP>& in) {
  std::vector<at::Tensor> ts;
  for (const auto& c : in) ts.push_back(unwrap(c));
  int before = ctx_.launches;
  size_t first = launches_.size();
  if (probe_) probe_->open();
  at::Tensor r = aten_op(n, ts, ctx_);
  if (rounding_noise_) r = with_rounding_noise(n, r, noise_draws_++);
  bool coll = fusion_kind(n.op) == FusionKind::Collective;
  LaunchRecord proto;
  proto.name = std::string(coll ? "collective_" : "aten_") + op_info(n.op).aten;
  proto.kind = coll ? "collective" : "extern";
  proto.ops = {op_info(n.op).aten};
  for (int i = before; i < ctx_.launches; ++i) launches_.push_back(proto);
  if (probe_) {
    // one op that counts several launches (an RMSNorm in eager mode): what it
    // ran belongs to all of them together, so the first holds it
    if (launches_.size() > first) {
      probe_->close(launches_[first]);
      for (size_t i = first + 1; i < launches_.size(); ++i) launches_[i].probed = true;
    } else {
      LaunchRecord none = proto;
      probe_->close(none);
      if (!none.device_kernels.empty()) outside_.push_back(std::move(none));
    }
  }
  return wrap_aten(r);
}

TensorType AtenExecutor::type_of(const ConcreteP& t) {
  const at::Tensor& x = unwrap(t);
  return TensorType{from_aten(x.scalar_type()), Shape(x.sizes().begin(), x.sizes().end())};
}

double AtenExecutor::item(const ConcreteP& t) { return unwrap(t).to(at::kDouble).item<double>(); }

std::string AtenExecutor::describe(const ConcreteP& t) {
  const at::Tensor& x = unwrap(t);
  std::ostringstream o;
  o << type_of(t).str() << " sum=" << x.to(at::kDouble).sum().item<double>();
  return o.str();
}

namespace {

std::string guard_of(const std::vector<at::Tensor>& ins, std::vector<Layout>* layouts) {
  std::string g;
  for (const auto& t : ins) {
    Layout l{Shape(t.sizes().begin(), t.sizes().end()), std::vector<int64_t>(t.strides().begin(), t.strides().end()), 0};
    layouts->push_back(l);
    g += std::string(c10::toString(t.scalar_type())) + l.str() + ";";
  }
  return g;
}

at::Tensor view_of(const at::Tensor& buf, const Layout& l) {
  return buf.as_strided(l.sizes, l.strides, buf.storage_offset() + l.offset);
}

double numel_of(const Shape& s) {
  double n = 1;
  for (int64_t d : s) n *= static_cast<double>(d);
  return n;
}

// The least a launch must move (each buffer it touches read or written once)
// and compute (GEMMs, the two GEMMs of the gate_up_swiglu fast paths, and
// attention; pointwise arithmetic is not counted).
// The per-kernel profile sets these against the device's ceilings.
void launch_cost(const LoweredGraph& lg, const Kernel& k, double* bytes, double* flops) {
  auto buf_bytes = [&](int b) {
    const BufferInfo& bi = lg.buffers[static_cast<size_t>(b)];
    return numel_of(bi.layout.sizes) * dtype_size(bi.dtype);
  };
  auto view_bytes = [&](const std::pair<int, Layout>& a) {
    return numel_of(a.second.sizes) * dtype_size(lg.buffers[static_cast<size_t>(a.first)].dtype);
  };
  *bytes = 0;
  *flops = 0;
  if (k.generated()) {
    std::set<int> seen(k.args.begin(), k.args.end());
    for (int b : seen) *bytes += buf_bytes(b);
    return;
  }
  for (size_t i = 0; i < k.nodes.size(); ++i) {
    const SchedNode& sn = lg.nodes[static_cast<size_t>(k.nodes[i])];
    // batched sibling GEMMs read their shared input once
    for (size_t a = i == 0 ? 0 : 1; a < sn.args.size(); ++a) *bytes += view_bytes(sn.args[a]);
    if (sn.out_buffer >= 0) *bytes += buf_bytes(sn.out_buffer);
    const Op op = sn.op.op;
    if ((op == Op::Linear || op == Op::LinearAddRank0) && sn.args.size() >= 2) {
      const Shape& w = sn.args[1].second.sizes;  // [N, K]
      double mk = numel_of(sn.args[0].second.sizes);
      if (w.size() == 2) *flops += 2.0 * mk * static_cast<double>(w[0]);
    } else if (op == Op::Matmul && sn.args.size() == 2) {
      const Shape& a = sn.args[0].second.sizes;
      const Shape& b = sn.args[1].second.sizes;
      if (!b.empty()) *flops += 2.0 * numel_of(a) * static_cast<double>(b.back());
    } else if (op == Op::FastPath && [&] {
                 const std::string fp = attr_str_or(sn.op.attrs, "name", "");
                 return (fp == "gate_up_swiglu" && sn.args.size() == 3) ||
                        (fp == "rmsnorm_gate_up_swiglu" && sn.args.size() == 4);
               }()) {
      // two GEMMs, h (or the norm's x) [.., K] against the gate and the up
      // weight [N, K] (after gamma, for the folded norm)
      const Shape& w = sn.args[sn.args.size() - 2].second.sizes;
      if (w.size() == 2) *flops += 2.0 * 2.0 * numel_of(sn.args[0].second.sizes) * static_cast<double>(w[0]);
    } else if (op == Op::FastPath && attr_str_or(sn.op.attrs, "name", "") == "causal_attention" &&
               sn.args.size() == 3) {
      // causal attention: half of the two [S, S] x D products
      const Shape& q = sn.args[0].second.sizes;  // [B, H, S, D]
      if (q.size() == 4) *flops += 0.5 * 4.0 * numel_of(q) * static_cast<double>(q[2]);
    } else if (op == Op::Sdpa && sn.args.size() >= 2) {
      const Shape& q = sn.args[0].second.sizes;  // [B, H, Sq, D]
      const Shape& kk = sn.args[1].second.sizes;
      if (q.size() >= 2 && kk.size() >= 2) {
        double f = 4.0 * numel_of(q) * static_cast<double>(kk[kk.size() - 2]);
        if (attr_int_or(sn.op.attrs, "causal", 1) != 0) f *= 0.5;
        *flops += f;
      }
    }
  }
}

// ATen operators per launch, through RecordFunction observers.
class AtenOpProbe : public LaunchProbe {
 public:
  void open() override {
    trace_.reset();  // a window an exception left open
    trace_ = std::make_unique<AtenOpTrace>();
  }
  void close(LaunchRecord& r) override {
    r.probed = true;
    if (trace_)
      for (const auto& [name, n] : trace_->ops()) r.aten_ops[name] += n;
    trace_.reset();
  }

 private:
  std::unique_ptr<AtenOpTrace> trace_;
};

}  // namespace

std::unique_ptr<LaunchProbe> make_aten_op_probe() { return std::make_unique<AtenOpProbe>(); }

std::vector<ConcreteP> AtenExecutor::run_graph(const Graph& g, const std::vector<ConcreteP>& inputs, int index) {
  std::vector<at::Tensor> ins;
  for (const auto& c : inputs) ins.push_back(unwrap(c));
  std::vector<Layout> layouts;
  std::string guard = guard_key(ins, &layouts);
  const std::string hash = graph_hash(g);
  const std::string key = hash + "|" + guard;  // the hash is hex: the guard follows the first '|'
  // the program also depends on the residual placement: one cache entry each
  std::string entry = key;
  for (const std::string& s : residuals_apart_) entry += "\n" + s;
  // and, under per-graph FUSEGATE_BISECT limits, on the graph's number
  if (bisect_per_graph()) entry += "\nbisect graph " + std::to_string(index);

  // guards: a site that compiled before with other guards compiles again
  auto site = site_guard_.find(index);
  if (site != site_guard_.end() && site->second != key && !cache_.count(entry)) {
    ++recompiles_;
    last_failed_guard_ = failed_guard(g, site->second.substr(site->second.find('|') + 1), guard);
    if (log_enabled("recompiles"))
      log_write("recompiles", "recompiling graph " + std::to_string(index) + ": guard failed: " + last_failed_guard_);
  }
  site_guard_[index] = key;

  auto it = cache_.find(entry);
  if (it == cache_.end()) {
    auto t0 = std::chrono::steady_clock::now();
    auto rt = std::make_unique<CompiledGraphRt>();
    CompileOptions o;
    o.fusion = fusion_;
    o.backend = backend_;
    o.input_layouts = layouts;
    o.replicated_inputs = replicated_;
    o.fast_paths = fast_sel_;
    o.proofs = fast_proofs_;
    o.world_size = world_;
    o.template_gemms = template_gemms_;
    o.residuals_apart = residuals_apart_;
    o.graph = index;
    rt->prog = compile(g, o);
    rt->guard = guard;
    // each kernel's GEMM template shapes, named once here rather than at every launch
    for (const Kernel& k : rt->prog.program.kernels) {
      std::string shapes;
      for (int n : k.nodes) {
        const SchedNode& sn = rt->prog.lowered.nodes[static_cast<size_t>(n)];
        if (sn.is_template())
          shapes += (shapes.empty() ? "" : " + ") +
                    gemm_shape_key(sn.op.type.dtype, sn.gemm_m, sn.gemm_n, sn.gemm_k, sn.gemm_bias != nullptr);
      }
      rt->gemm_shapes.push_back(shapes);
    }
    agree(rt->prog, hash, index);
    bool any = false;
    for (const auto& k : rt->prog.program.kernels) any = any || k.generated();
    if (any) rt->module = backend_ == Backend::Cuda ? load_cuda_module(rt->prog.program) : load_host_module(rt->prog.program);
    compile_ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    it = cache_.emplace(entry, std::move(rt)).first;
  }
  graphs_run_.push_back(it->second.get());
  return wrap_all(execute(*it->second, ins, index));
}

std::vector<ConcreteP> AtenExecutor::wrap_all(std::vector<at::Tensor> ts) {
  std::vector<ConcreteP> r;
  for (auto& t : ts) r.push_back(wrap_aten(std::move(t)));
  return r;
}

void AtenExecutor::agree(const CompiledProgram& p, const std::string& hash, int index) {
  if (!coll_ || world_ < 2) return;
  // the n-th graph this executor compiles pairs with every rank's n-th
  const std::vector<std::string> mine = agreement_items(p, hash);
  std::string text;
  for (const auto& l : mine) text += l + "\n";
  const std::vector<std::string> all =
      coll_->exchange("agree/" + std::to_string(agreement_id_) + "/" + std::to_string(agreed_++), text);
  auto lines = [](const std::string& t) {
    std::vector<std::string> out;
    std::istringstream in(t);
    std::string l;
    while (std::getline(in, l)) out.push_back(l);
    return out;
  };
  const std::vector<std::string> ref = lines(all.at(0));
  for (size_t r = 1; r < all.size(); ++r) {
    const std::vector<std::string> other = lines(all[r]);
    for (size_t i = 0; i < std::max(ref.size(), other.size()); ++i) {
      const std::string a = i < ref.size() ? ref[i] : "(nothing)";
      const std::string b = i < other.size() ? other[i] : "(nothing)";
      if (a == b) continue;
      // name the item ("decision 14") and both ranks' versions of it
      const std::string what = (i < ref.size() ? a : b).substr(0, (i < ref.size() ? a : b).find(':'));
      throw RanksDisagree("rank " + std::to_string(r) + " differs from rank 0 at " + what + " of graph " +
                          std::to_string(index) + ": rank 0 has '" + a + "', rank " + std::to_string(r) +
                          " has '" + b + "' (found before the graph's first collective, which would otherwise "
                          "wait on mismatched peers)");
    }
  }
}

// The first input whose type or layout differs between two guards:
// "input x: BFloat16[2,64,256]... -> BFloat16[2,32,256]...".
std::string AtenExecutor::failed_guard(const Graph& g, const std::string& was, const std::string& now) {
  auto parts = [](const std::string& s) {
    std::vector<std::string> out;
    std::istringstream in(s.substr(0, s.find('|')));
    std::string p;
    while (std::getline(in, p, ';')) out.push_back(p);
    return out;
  };
  const std::vector<std::string> a = parts(was), b = parts(now);
  const std::vector<int> ids = g.input_ids();
  for (size_t k = 0; k < std::max(a.size(), b.size()); ++k) {
    const std::string x = k < a.size() ? a[k] : "(none)", y = k < b.size() ? b[k] : "(none)";
    if (x != y)
      return "input " + (k < ids.size() ? g.node(ids[k]).name : std::to_string(k)) + ": " + x + " -> " + y;
  }
  return "the graph changed";
}

std::vector<at::Tensor> AtenExecutor::replay(const CompiledGraphRt& rt, const std::vector<at::Tensor>& ins) {
  std::vector<Layout> layouts;
  std::string guard = guard_key(ins, &layouts);
  if (guard != rt.guard) user_error("replay: the inputs no longer match the compiled graph's guards (" + guard + ")");
  return execute(rt, ins, 0);
}

std::vector<at::Tensor> AtenExecutor::execute(const CompiledGraphRt& rt, const std::vector<at::Tensor>& ins, int index) {
  const LoweredGraph& lg = rt.prog.lowered;

  std::vector<at::Tensor> bufs(lg.buffers.size());
  for (size_t k = 0; k < lg.input_buffers.size(); ++k) bufs[static_cast<size_t>(lg.input_buffers[k])] = ins[k];
  auto ensure = [&](int b) {
    if (bufs[static_cast<size_t>(b)].defined()) return;
    const BufferInfo& bi = lg.buffers[static_cast<size_t>(b)];
    bufs[static_cast<size_t>(b)] =
        at::empty_strided(bi.layout.sizes, bi.layout.strides, at::TensorOptions().dtype(to_aten(bi.dtype)).device(device_));
  };
  const auto& kernels = rt.prog.program.kernels;
  auto run_one = [&](size_t ki) {
    const Kernel& k = kernels[ki];
    if (k.generated()) {
      std::vector<void*> ptrs;
      for (int b : k.args) {
        ensure(b);
        ptrs.push_back(bufs[static_cast<size_t>(b)].data_ptr());
      }
      rt.module->launch(ki, ptrs);
      return;
    }
    const SchedNode& sn = lg.nodes[static_cast<size_t>(k.nodes[0])];
    if (k.nodes.size() > 1) {
      // sibling GEMMs as one batched GEMM; each result is a slice of it
      std::vector<at::Tensor> ws;
      for (int n : k.nodes) {
        const auto& w = lg.nodes[static_cast<size_t>(n)].args[1];
        ws.push_back(view_of(bufs[static_cast<size_t>(w.first)], w.second));
      }
      at::Tensor a = view_of(bufs[static_cast<size_t>(sn.args[0].first)], sn.args[0].second);
      at::Tensor out = linear_batch(a, ws, at::Tensor(), at::Tensor(), 0.0f);
      for (size_t i = 0; i < k.nodes.size(); ++i) {
        const BufferInfo& bi = lg.buffers[static_cast<size_t>(lg.nodes[static_cast<size_t>(k.nodes[i])].out_buffer)];
        FG_CHECK(bi.layout.is_contiguous(), "batched GEMM results must be contiguous");
        bufs[static_cast<size_t>(bi.id)] = out[static_cast<int64_t>(i)].view(bi.layout.sizes);
      }
      return;
    }
    std::vector<at::Tensor> args;
    for (const auto& [b, l] : sn.args) args.push_back(view_of(bufs[static_cast<size_t>(b)], l));
    if (sn.op.op == Op::FastPath) {
      if (!fast_) fast_ = std::make_unique<FastPathRunner>(backend_, coll_, rank_, world_);
      ensure(sn.out_buffer);
      fast_->run(sn.op, args, bufs[static_cast<size_t>(sn.out_buffer)]);
      return;
    }
    if (sn.kind == SNKind::Collective && sn.op.op == Op::AllReduce) {
      at::Tensor& t = bufs[static_cast<size_t>(sn.out_buffer)];
      coll_->all_reduce_(t);
      return;
    }
    EagerContext ctx = ctx_;
    ctx.launches = 0;
    at::Tensor r = aten_op(sn.op, args, ctx);
    const BufferInfo& bi = lg.buffers[static_cast<size_t>(sn.out_buffer)];
    if (!(Shape(r.strides().begin(), r.strides().end()) == bi.layout.strides) || r.storage_offset() != 0) {
      // the extern writes the layout the compiler planned for its output
      ensure(sn.out_buffer);
      bufs[static_cast<size_t>(sn.out_buffer)].copy_(r);
    } else {
      bufs[static_cast<size_t>(sn.out_buffer)] = r;
    }
  };
  for (size_t ki = 0; ki < kernels.size(); ++ki) {
    const Kernel& k = kernels[ki];
    LaunchRecord rec;
    rec.name = k.name;
    rec.kind = k.kind;
    rec.ops = k.ops;
    rec.graph = index;
    launch_cost(lg, k, &rec.bytes, &rec.flops);
    rec.gemm = rt.gemm_shapes[ki];
    launches_.push_back(std::move(rec));
    if (probe_) probe_->open();
    run_one(ki);
    if (probe_) probe_->close(launches_.back());
  }
  std::vector<at::Tensor> outs;
  for (const auto& [b, l] : lg.outputs) outs.push_back(view_of(bufs[static_cast<size_t>(b)], l));
  return outs;
}

}  // namespace fg
