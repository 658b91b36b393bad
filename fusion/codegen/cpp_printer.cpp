#include "fusion/codegen/cpp_printer.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "fusion/errors.h"
#include "fusion/ir/text.h"

namespace fg {

std::string CStylePrinter::compute_type(DType t) const {
  switch (t) {
    case DType::BF16: case DType::F16: case DType::F32: return "float";
    case DType::F64: return "double";
    case DType::I64: return "int64_t";
    case DType::Bool: return "bool";
  }
  return "?";
}

std::string CStylePrinter::storage_type(DType t) const {
  switch (t) {
    case DType::BF16: case DType::F16: return "uint16_t";
    case DType::F32: return "float";
    case DType::F64: return "double";
    case DType::I64: return "int64_t";
    case DType::Bool: return "bool";
  }
  return "?";
}

std::string CStylePrinter::load_text(DType t, const std::string& ptr, const std::string& idx) const {
  if (t == DType::BF16) return "fg_bf16_to_float(" + ptr + "[" + idx + "])";
  if (t == DType::F16) return "fg_f16_to_float(" + ptr + "[" + idx + "])";
  return ptr + "[" + idx + "]";
}

std::string CStylePrinter::store_text(DType t, const std::string& ptr, const std::string& idx, const std::string& v) const {
  if (t == DType::BF16) return ptr + "[" + idx + "] = fg_float_to_bf16(" + v + ");";
  if (t == DType::F16) return ptr + "[" + idx + "] = fg_float_to_f16(" + v + ");";
  return ptr + "[" + idx + "] = static_cast<" + storage_type(t) + ">(" + v + ");";
}

std::string CStylePrinter::const_text(double v, DType t) const {
  if (t == DType::Bool) return v != 0 ? "true" : "false";
  if (t == DType::I64) return "INT64_C(" + std::to_string(static_cast<int64_t>(v)) + ")";
  std::string ct = compute_type(t);
  if (std::isnan(v)) return "static_cast<" + ct + ">(NAN)";
  if (std::isinf(v)) return std::string(v < 0 ? "-" : "") + "static_cast<" + ct + ">(INFINITY)";
  std::string s = format_double(v);
  return ct == "float" ? s + "f" : s;
}

std::string CStylePrinter::op_text(Op op, DType t, const std::vector<std::string>& a, const Attrs& attrs) const {
  std::string T = compute_type(t);
  auto c = [&](const std::string& x) { return "static_cast<" + T + ">(" + x + ")"; };
  switch (op) {
    case Op::Neg: return "(-" + a[0] + ")";
    case Op::Exp: return "std::exp(" + a[0] + ")";
    case Op::Log: return "std::log(" + a[0] + ")";
    case Op::Sqrt: return "std::sqrt(" + a[0] + ")";
    case Op::Rsqrt: return "(" + c("1") + " / std::sqrt(" + a[0] + "))";
    case Op::Relu: return "fg_relu(" + a[0] + ")";
    case Op::Sigmoid: return "(" + c("1") + " / (" + c("1") + " + std::exp(-" + a[0] + ")))";
    case Op::Silu: return "(" + a[0] + " / (" + c("1") + " + std::exp(-" + a[0] + ")))";
    case Op::Tanh: return "std::tanh(" + a[0] + ")";
    case Op::Sin: return "std::sin(" + a[0] + ")";
    case Op::Cos: return "std::cos(" + a[0] + ")";
    case Op::Gelu:
      if (attr_str_or(attrs, "approximate", "none") == "tanh")
        return "fg_gelu_tanh(" + a[0] + ")";
      return "fg_gelu_erf(" + a[0] + ")";
    case Op::Add: return "(" + c(a[0]) + " + " + c(a[1]) + ")";
    case Op::Sub: return "(" + c(a[0]) + " - " + c(a[1]) + ")";
    case Op::Mul: return "(" + c(a[0]) + " * " + c(a[1]) + ")";
    case Op::Div: return "(" + c(a[0]) + " / " + c(a[1]) + ")";
    case Op::Pow: return "std::pow(" + c(a[0]) + ", " + c(a[1]) + ")";
    case Op::Maximum: return "fg_max(" + c(a[0]) + ", " + c(a[1]) + ")";
    case Op::Eq: return "(" + a[0] + " == " + a[1] + ")";
    case Op::Ne: return "(" + a[0] + " != " + a[1] + ")";
    case Op::Lt: return "(" + a[0] + " < " + a[1] + ")";
    case Op::Le: return "(" + a[0] + " <= " + a[1] + ")";
    case Op::Gt: return "(" + a[0] + " > " + a[1] + ")";
    case Op::Ge: return "(" + a[0] + " >= " + a[1] + ")";
    default: break;
  }
  internal_error(std::string("no code for op ") + op_name(op));
}

KernelProgram CStylePrinter::print(const Schedule& s) {
  readers_.assign(g_.buffers.size(), {});
  for (const auto& n : g_.nodes)
    for (int b : n.reads) readers_[static_cast<size_t>(b)].push_back(n.id);
  KernelProgram p;
  p.module_source = prelude();
  std::map<std::string, std::string> seen_bodies;  // body text -> kernel name
  int index = 0;
  for (const FusedGroup& gr : s.groups) {
    const SchedNode& first = g_.nodes[static_cast<size_t>(gr.nodes[0])];
    if (!gr.generated) {
      Kernel k;
      k.kind = first.kind == SNKind::Extern ? "extern" : "collective";
      k.ops = first.origins;
      k.nodes = gr.nodes;
      k.name = k.kind + "_" + (first.origins.empty() ? std::string("op") : first.origins[0]);
      p.kernels.push_back(k);
      continue;
    }
    Kernel k = print_group(gr, index, &p.removed_buffers);
    // identical code reuses one function and its name
    auto it = seen_bodies.find(k.source);
    if (it != seen_bodies.end()) {
      k.name = it->second;
    } else {
      ++index;
      seen_bodies[k.source] = k.name;
      std::string src = k.source;
      size_t at = src.find("@NAME@");
      src.replace(at, 6, k.name);
      p.module_source += "\n" + src;
    }
    size_t at = k.source.find("@NAME@");
    k.source.replace(at, 6, k.name);
    p.kernels.push_back(k);
  }
  return p;
}

Kernel CStylePrinter::print_group(const FusedGroup& gr, int index, std::set<int>* removed) {
  const int64_t X = gr.numel, R = gr.rnumel;
  std::set<int> members(gr.nodes.begin(), gr.nodes.end());
  bool has_red = false;
  std::map<int, int> producer;        // buffer -> node in group
  std::map<int, ExprP> body;          // node -> body in kernel vars
  std::map<int, IndexP> store_at;     // node -> store index
  std::map<int, bool> inner;
  for (int n : gr.nodes) {
    const SchedNode& sn = g_.nodes[static_cast<size_t>(n)];
    has_red = has_red || sn.is_reduction();
    producer[sn.out_buffer] = n;
    body[n] = ex_subst(sn.body, kernel_var_map(sn, X, R));
    std::vector<Access> acc;
    FG_CHECK(kernel_accesses(g_, sn, X, R, &acc), "node does not fit its kernel");
    for (const auto& a : acc)
      if (a.write) store_at[n] = a.index;
    inner[n] = runs_inner(sn, X, R);
  }

  // phases: runs of nodes in one loop over r, or at the x level
  std::vector<std::vector<int>> phases;
  std::vector<bool> phase_inner;
  std::map<int, size_t> phase_of;
  for (int n : gr.nodes) {
    bool in = inner[n];
    bool join = !phases.empty() && phase_inner.back() == in;
    if (join && in) {
      std::map<std::string, std::pair<int, IndexP>> loads;
      ex_loads(body[n], &loads);
      for (const auto& [k, l] : loads) {
        auto it = producer.find(l.first);
        if (it != producer.end() && phase_of.count(it->second) && phase_of[it->second] == phases.size() - 1 &&
            g_.nodes[static_cast<size_t>(it->second)].is_reduction())
          join = false;
      }
    }
    if (!join) { phases.emplace_back(); phase_inner.push_back(in); }
    phases.back().push_back(n);
    phase_of[n] = phases.size() - 1;
  }

  // a value is stored if anything outside the kernel reads it, if it is a
  // graph output, or if a later loop of this kernel needs it
  std::set<int> outputs;
  for (const auto& o : g_.outputs) outputs.insert(o.first);
  std::map<int, bool> stored;
  for (int n : gr.nodes) {
    const SchedNode& sn = g_.nodes[static_cast<size_t>(n)];
    bool st = sn.mutation || outputs.count(sn.out_buffer) > 0;
    for (int reader : readers_[static_cast<size_t>(sn.out_buffer)])
      if (!members.count(reader)) st = true;
    stored[n] = st;
  }
  for (int n : gr.nodes) {
    std::map<std::string, std::pair<int, IndexP>> loads;
    ex_loads(body[n], &loads);
    for (const auto& [k, l] : loads) {
      auto it = producer.find(l.first);
      if (it == producer.end() || it->second == n) continue;
      int p = it->second;
      bool same_index = l.second->key == store_at[p]->key;
      bool visible = !inner[p] || g_.nodes[static_cast<size_t>(p)].is_reduction() || phase_of[p] == phase_of[n];
      if (!same_index || !visible) stored[p] = true;
    }
  }
  for (int n : gr.nodes)
    if (!stored[n]) removed->insert(g_.nodes[static_cast<size_t>(n)].out_buffer);

  // printing
  Kernel k;
  k.kind = !has_red ? "poi" : (R <= 1024 ? "per" : "red");
  k.ops = kernel_ops(g_, gr.nodes);
  k.nodes = gr.nodes;
  k.name = kernel_name(backend(), k.kind, k.ops, index);
  std::map<int, std::string> arg_name;  // buffer -> pointer name
  auto ptr = [&](int b) {
    auto it = arg_name.find(b);
    if (it != arg_name.end()) return it->second;
    std::string nm = "p" + std::to_string(k.args.size());
    k.args.push_back(b);
    return arg_name[b] = nm;
  };
  std::vector<std::string> lines;
  int indent = 2;
  auto line = [&](const std::string& s) { lines.push_back(std::string(static_cast<size_t>(indent) * 2, ' ') + s); };
  std::vector<std::map<std::string, std::string>> scopes(1);
  std::map<int, std::string> value;  // node -> variable holding its value, while visible
  int tmp = 0;
  std::function<std::string(const ExprP&)> emit = [&](const ExprP& e) -> std::string {
    if (e->kind == Expr::Const) return const_text(e->value, e->dtype);
    if (e->kind == Expr::Load) {
      auto pit = producer.find(e->buffer);
      if (pit != producer.end() && value.count(pit->second) && store_at[pit->second]->key == e->index->key)
        return value[pit->second];
    }
    for (auto it = scopes.rbegin(); it != scopes.rend(); ++it) {
      auto f = it->find(e->key);
      if (f != it->end()) return f->second;
    }
    std::string text;
    switch (e->kind) {
      case Expr::Load: {
        DType bt = g_.buffers[static_cast<size_t>(e->buffer)].dtype;
        text = load_text(bt, ptr(e->buffer), e->index->key);
        break;
      }
      case Expr::Unary: case Expr::Binary: {
        std::vector<std::string> a;
        for (const auto& x : e->args) a.push_back(emit(x));
        DType t = e->dtype;
        if (is_comparison(e->op)) {
          t = promote(e->args[0]->dtype, e->args[1]->dtype);
          for (auto& s : a) s = "static_cast<" + compute_type(t) + ">(" + s + ")";
        }
        text = op_text(e->op, t, a, e->attrs);
        if (e->op == Op::Pow && e->args[1]->kind == Expr::Const && e->args[1]->value == 2.0)
          text = "(static_cast<" + compute_type(t) + ">(" + a[0] + ") * static_cast<" + compute_type(t) + ">(" + a[0] + "))";
        break;
      }
      case Expr::Where: {
        std::string c = emit(e->args[0]), x = emit(e->args[1]), y = emit(e->args[2]);
        std::string T = compute_type(e->dtype);
        text = "(" + c + " ? static_cast<" + T + ">(" + x + ") : static_cast<" + T + ">(" + y + "))";
        break;
      }
      case Expr::Cast: {
        std::string x = emit(e->args[0]);
        if (e->dtype == DType::BF16) text = "fg_round_bf16(static_cast<float>(" + x + "))";
        else if (e->dtype == DType::F16) text = "fg_round_f16(static_cast<float>(" + x + "))";
        else if (e->dtype == DType::Bool) text = "(" + x + " != 0)";
        else text = "static_cast<" + compute_type(e->dtype) + ">(" + x + ")";
        break;
      }
      case Expr::IndexLt:
        text = "(" + e->index->key + " < " + std::to_string(e->bound) + ")";
        break;
      default:
        internal_error("unexpected expression kind");
    }
    std::string v = "t" + std::to_string(tmp++);
    line("const " + compute_type(e->dtype) + " " + v + " = " + text + ";");
    scopes.back()[e->key] = v;
    return v;
  };
  auto store = [&](int n, const std::string& v) {
    const SchedNode& sn = g_.nodes[static_cast<size_t>(n)];
    if (!stored[n]) return;
    line(store_text(g_.buffers[static_cast<size_t>(sn.out_buffer)].dtype, ptr(sn.out_buffer), store_at[n]->key, v));
  };

  line(outer_loop(X) + " {");
  ++indent;
  scopes.emplace_back();
  for (size_t pi = 0; pi < phases.size(); ++pi) {
    if (!phase_inner[pi]) {
      for (int n : phases[pi]) {
        std::string v = emit(body[n]);
        value[n] = v;
        store(n, v);
      }
      continue;
    }
    std::map<int, std::string> acc;
    for (int n : phases[pi]) {
      const SchedNode& sn = g_.nodes[static_cast<size_t>(n)];
      if (!sn.is_reduction()) continue;
      DType t = sn.body->dtype;
      std::string at = t == DType::F64 ? "double" : (is_floating(t) ? "float" : "int64_t");
      std::string init = sn.reduce_op == Op::Sum ? "0" : (is_floating(t) ? "-INFINITY" : "INT64_MIN");
      acc[n] = "acc" + std::to_string(n);
      line(at + " " + acc[n] + " = " + init + ";");
    }
    line(inner_loop(R) + " {");
    ++indent;
    scopes.emplace_back();
    for (int n : phases[pi]) {
      std::string v = emit(body[n]);
      const SchedNode& sn = g_.nodes[static_cast<size_t>(n)];
      if (sn.is_reduction()) {
        line(acc[n] + (sn.reduce_op == Op::Sum ? " += " + v + ";" : " = fg_max(" + acc[n] + ", static_cast<decltype(" + acc[n] + ")>(" + v + "));"));
      } else {
        value[n] = v;
        store(n, v);
      }
    }
    scopes.pop_back();
    --indent;
    line("}");
    for (int n : phases[pi]) {
      if (!g_.nodes[static_cast<size_t>(n)].is_reduction()) { value.erase(n); continue; }
      value[n] = acc[n];
      store(n, acc[n]);
    }
  }
  --indent;
  line("}");

  std::string src = signature("@NAME@") + " {\n";
  for (size_t ai = 0; ai < k.args.size(); ++ai) {
    int b = k.args[ai];
    const BufferInfo& bi = g_.buffers[static_cast<size_t>(b)];
    bool written = false;
    for (int n : gr.nodes) written = written || (g_.nodes[static_cast<size_t>(n)].out_buffer == b && stored[n]);
    src += "  " + std::string(written ? "" : "const ") + storage_type(bi.dtype) + "* __restrict__ " + arg_name[b] +
           " = static_cast<" + (written ? "" : std::string("const ")) + storage_type(bi.dtype) + "*>(args[" +
           std::to_string(ai) + "]);  // " + bi.name + "\n";
  }
  for (const auto& l : lines) src += l.substr(2) + "\n";
  src += "}\n";
  k.source = src;
  return k;
}

std::string CppPrinter::prelude() const {
  return R"(// generated by fusegate: host C++ kernels
#include <cmath>
#include <cstdint>
#include <cstring>
#include <algorithm>

static inline float fg_bf16_to_float(uint16_t v) {
  uint32_t u = static_cast<uint32_t>(v) << 16; float f; std::memcpy(&f, &u, 4); return f;
}
static inline uint16_t fg_float_to_bf16(float f) {
  uint32_t u; std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);                     // round to nearest even
  return static_cast<uint16_t>(u >> 16);
}
static inline float fg_round_bf16(float f) { return fg_bf16_to_float(fg_float_to_bf16(f)); }
static inline float fg_f16_to_float(uint16_t v) { _Float16 h; std::memcpy(&h, &v, 2); return static_cast<float>(h); }
static inline uint16_t fg_float_to_f16(float f) { _Float16 h = static_cast<_Float16>(f); uint16_t v; std::memcpy(&v, &h, 2); return v; }
static inline float fg_round_f16(float f) { return fg_f16_to_float(fg_float_to_f16(f)); }
template <typename T> static inline T fg_max(T a, T b) { return (a != a || a > b) ? a : b; }
template <typename T> static inline T fg_relu(T a) { return a != a ? a : (a > T(0) ? a : T(0)); }
template <typename T> static inline T fg_gelu_erf(T a) { return T(0.5) * a * (T(1) + std::erf(a * T(0.70710678118654752440))); }
template <typename T> static inline T fg_gelu_tanh(T a) {
  return T(0.5) * a * (T(1) + std::tanh(T(0.79788456080286535588) * (a + T(0.044715) * a * a * a)));
}
static inline int64_t fg_clamp(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : (v > hi ? hi : v); }
)";
}

std::string CppPrinter::signature(const std::string& name) const {
  return "extern \"C\" void " + name + "(void** args)";
}
std::string CppPrinter::outer_loop(int64_t numel) const {
  return "for (int64_t x = 0; x < " + std::to_string(numel) + "; ++x)";
}
std::string CppPrinter::inner_loop(int64_t rnumel) const {
  return "for (int64_t r = 0; r < " + std::to_string(rnumel) + "; ++r)";
}

KernelProgram generate_cpp(const LoweredGraph& g, const Schedule& s) { return CppPrinter(g).print(s); }

}  // namespace fg
