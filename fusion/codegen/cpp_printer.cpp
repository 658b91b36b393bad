#include "fusion/codegen/cpp_printer.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <sstream>

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
      if (gr.nodes.size() > 1) k.name += "_x" + std::to_string(gr.nodes.size());  // batched siblings
      p.kernels.push_back(k);
      continue;
    }
    Kernel k = print_group(gr, index, &p.removed_buffers);
    // identical code reuses one function and its name; the comments that
    // name the buffers do not count
    std::string key;
    {
      std::istringstream in(k.source);
      std::string l;
      while (std::getline(in, l)) key += l.substr(0, l.find("  //")) + "\n";
    }
    auto it = seen_bodies.find(key);
    if (it != seen_bodies.end()) {
      k.name = it->second;
    } else {
      ++index;
      seen_bodies[key] = k.name;
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

namespace {

// Emits the nodes of one kernel: values as local variables (common
// subexpressions once per scope), in-kernel reads of a value as that
// variable when it is visible at the same index, stores where anything
// outside needs the value.
class Emitter {
 public:
  Emitter(const CStylePrinter& p, const LoweredGraph& g, Kernel& k, std::function<std::string(const ExprP&)> custom_load)
      : p_(p), g_(g), k_(k), custom_load_(std::move(custom_load)) {}

  std::vector<std::string> lines;
  int indent = 1;
  std::map<int, std::string> value;     // node -> variable holding its value, while visible
  std::map<int, int> producer;          // buffer -> node in this kernel
  std::map<int, IndexP> store_at;       // node -> store index (kernel vars)
  std::map<int, bool> stored;

  void line(const std::string& s) { lines.push_back(std::string(static_cast<size_t>(indent) * 2, ' ') + s); }
  void open(const std::string& head) {
    // a head may carry lines before the loop itself (a #pragma)
    std::string h = head;
    for (size_t nl = h.find('\n'); nl != std::string::npos; nl = h.find('\n')) {
      line(h.substr(0, nl));
      h = h.substr(nl + 1);
    }
    line(h + " {");
    ++indent;
    scopes_.emplace_back();
  }
  void close() { scopes_.pop_back(); --indent; line("}"); }

  std::string ptr(int b) {
    auto it = arg_name_.find(b);
    if (it != arg_name_.end()) return it->second;
    std::string nm = "p" + std::to_string(k_.args.size());
    k_.args.push_back(b);
    return arg_name_[b] = nm;
  }

  // Loads of kernel inputs that several loops over r read at the same index
  // are kept in per-thread register arrays (row_registers elements) when the
  // dialect keeps rows in registers: the second pass reads no memory.
  std::map<std::string, std::string> row_cache;        // load key -> array
  std::map<std::string, size_t> row_cache_first;       // load key -> phase that fills it
  std::set<std::string> row_chunked;                    // cached as chunks (in storage type), not as values
  size_t current_phase = 0;
  // Chunk accesses of the current chunk (see CStylePrinter::chunked).
  std::map<std::string, std::string> vec_load;                   // load key -> chunk variable
  std::map<int, std::pair<std::string, std::string>> vec_store;  // node -> chunk variable, pointer to its start

  std::string emit(const ExprP& e) {
    if (e->kind == Expr::Const) return p_.const_text(e->value, e->dtype);
    if (e->kind == Expr::Load && row_cache.count(e->key) && !row_chunked.count(e->key) &&
        row_cache_first[e->key] != current_phase)
      return row_cache[e->key] + "[j]";
    if (e->kind == Expr::Load) {
      auto pit = producer.find(e->buffer);
      if (pit != producer.end() && value.count(pit->second) && store_at[pit->second]->key == e->index->key)
        return value[pit->second];
    }
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = it->find(e->key);
      if (f != it->end()) return f->second;
    }
    std::string text;
    switch (e->kind) {
      case Expr::Load: {
        text = custom_load_ ? custom_load_(e) : "";
        if (text.empty() && vec_load.count(e->key))
          text = p_.load_text(g_.buffers[static_cast<size_t>(e->buffer)].dtype, vec_load[e->key], "v");
        if (text.empty())
          text = p_.load_text(g_.buffers[static_cast<size_t>(e->buffer)].dtype, ptr(e->buffer), e->index->key);
        break;
      }
      case Expr::Unary: case Expr::Binary: {
        std::vector<std::string> a;
        for (const auto& x : e->args) a.push_back(emit(x));
        DType t = e->dtype;
        if (is_comparison(e->op)) {
          t = promote(e->args[0]->dtype, e->args[1]->dtype);
          for (auto& x : a) x = "static_cast<" + p_.compute_type(t) + ">(" + x + ")";
        }
        text = p_.op_text(e->op, t, a, e->attrs);
        if (e->op == Op::Pow && e->args[1]->kind == Expr::Const && e->args[1]->value == 2.0)
          text = "(static_cast<" + p_.compute_type(t) + ">(" + a[0] + ") * static_cast<" + p_.compute_type(t) + ">(" + a[0] + "))";
        break;
      }
      case Expr::Where: {
        std::string c = emit(e->args[0]), x = emit(e->args[1]), y = emit(e->args[2]);
        std::string T = p_.compute_type(e->dtype);
        text = "(" + c + " ? static_cast<" + T + ">(" + x + ") : static_cast<" + T + ">(" + y + "))";
        break;
      }
      case Expr::Cast: text = round_to(e->dtype, emit(e->args[0])); break;
      case Expr::IndexLt: text = "(" + e->index->key + " < " + std::to_string(e->bound) + ")"; break;
      default: internal_error("unexpected expression kind");
    }
    std::string v = "t" + std::to_string(tmp_++);
    line("const " + p_.compute_type(e->dtype) + " " + v + " = " + text + ";");
    scopes_.back()[e->key] = v;
    if (e->kind == Expr::Load && row_cache.count(e->key) && !row_chunked.count(e->key))
      line(row_cache[e->key] + "[j] = " + v + ";");
    return v;
  }

  // A value as the given dtype would hold it (what a store and reload give).
  std::string round_to(DType t, const std::string& x) const {
    if (t == DType::BF16) return "fg_round_bf16(static_cast<float>(" + x + "))";
    if (t == DType::F16) return "fg_round_f16(static_cast<float>(" + x + "))";
    if (t == DType::Bool) return "(" + x + " != 0)";
    return "static_cast<" + p_.compute_type(t) + ">(" + x + ")";
  }

  void store(int n, const std::string& v, bool per_row = false) {
    const SchedNode& sn = g_.nodes[static_cast<size_t>(n)];
    if (!stored[n]) return;
    auto vs = vec_store.find(n);
    if (vs != vec_store.end()) {
      line(vs->second.first + ".s[v] = " + v + ";");
      return;
    }
    std::string st = p_.store_text(g_.buffers[static_cast<size_t>(sn.out_buffer)].dtype, ptr(sn.out_buffer),
                                   store_at[n]->key, v);
    std::string guard = per_row ? p_.row_store_guard() : "";
    line(guard.empty() ? st : guard + " " + st);
  }

  // The nodes of one frame (numel X, rnumel R) for the current x: runs of
  // nodes share a loop over r; a node that needs a reduction finished in the
  // current run starts a new one. `on_value` sees each pointwise value.
  void phases(const std::vector<int>& nodes, const std::map<int, ExprP>& body, const std::map<int, bool>& inner,
              int64_t R, const std::function<void(int, const std::string&)>& on_value) {
    std::vector<std::vector<int>> ph;
    std::vector<bool> ph_inner;
    std::map<int, size_t> phase_of;
    for (int n : nodes) {
      bool in = inner.at(n);
      bool join = !ph.empty() && ph_inner.back() == in;
      if (join && in) {
        std::map<std::string, std::pair<int, IndexP>> loads;
        ex_loads(body.at(n), &loads);
        for (const auto& [k, l] : loads) {
          auto it = producer.find(l.first);
          if (it != producer.end() && phase_of.count(it->second) && phase_of[it->second] == ph.size() - 1 &&
              g_.nodes[static_cast<size_t>(it->second)].is_reduction())
            join = false;
        }
      }
      if (!join) { ph.emplace_back(); ph_inner.push_back(in); }
      ph.back().push_back(n);
      phase_of[n] = ph.size() - 1;
    }
    // a value read by a later loop of this kernel must be stored
    for (int n : nodes) {
      std::map<std::string, std::pair<int, IndexP>> loads;
      ex_loads(body.at(n), &loads);
      for (const auto& [k, l] : loads) {
        auto it = producer.find(l.first);
        if (it == producer.end() || it->second == n || !phase_of.count(it->second)) continue;
        int p = it->second;
        bool same_index = l.second->key == store_at[p]->key;
        bool visible = !inner.at(p) || g_.nodes[static_cast<size_t>(p)].is_reduction() || phase_of[p] == phase_of[n];
        if (!same_index || !visible) stored[p] = true;
      }
    }
    bool row_kernel = R > 1;
    bool looped_before = false;
    int64_t regs = p_.row_registers(R);
    if (regs > 0) {
      std::map<std::string, std::set<size_t>> phases_of_load;
      std::map<std::string, DType> load_type;
      std::map<std::string, IndexP> load_index;
      for (size_t pi = 0; pi < ph.size(); ++pi) {
        if (!ph_inner[pi]) continue;
        for (int n : ph[pi]) {
          std::map<std::string, std::pair<int, IndexP>> loads;
          ex_loads(body.at(n), &loads);
          for (const auto& [k, l] : loads)
            if (!producer.count(l.first)) {
              phases_of_load[k].insert(pi);
              load_type[k] = g_.buffers[static_cast<size_t>(l.first)].dtype;
              load_index[k] = l.second;
            }
        }
      }
      for (const auto& [k, pset] : phases_of_load)
        if (pset.size() > 1) {
          std::string name = "row" + std::to_string(row_cache.size());
          row_cache[k] = name;
          row_cache_first[k] = *pset.begin();
          // in chunks, a row read at contiguous aligned places stays in its
          // chunks (bf16: two elements a register)
          IndexP base;
          if (p_.chunked(1, R) && wide(load_type[k]) && chunk_access(load_index[k], "r", R, &base)) {
            row_chunked.insert(k);
            line(p_.chunk_decl(p_.storage_type(load_type[k]),
                               name + "[" + std::to_string(regs / CStylePrinter::kChunkLanes) + "]"));
          } else {
            line(p_.compute_type(load_type[k]) + " " + name + "[" + std::to_string(regs) + "];");
          }
        }
    }
    for (size_t pi = 0; pi < ph.size(); ++pi) {
      if (!ph_inner[pi]) {
        for (int n : ph[pi]) {
          std::string v = emit(body.at(n));
          value[n] = v;
          store(n, v, row_kernel);
          if (on_value) on_value(n, v);
        }
        continue;
      }
      if (looped_before && !p_.loop_barrier().empty()) line(p_.loop_barrier());
      looped_before = true;
      std::map<int, std::string> acc;
      for (int n : ph[pi]) {
        const SchedNode& sn = g_.nodes[static_cast<size_t>(n)];
        if (!sn.is_reduction()) continue;
        DType t = sn.body->dtype;
        std::string at = t == DType::F64 ? "double" : (is_floating(t) ? "float" : "int64_t");
        std::string init = sn.reduce_op == Op::Sum ? "0" : (is_floating(t) ? "-INFINITY" : "INT64_MIN");
        acc[n] = "acc" + std::to_string(n);
        line(at + " " + acc[n] + " = " + init + ";");
      }
      current_phase = pi;
      const bool chunks = p_.chunked(1, R);
      if (chunks) {
        open(p_.chunk_loop(1, R));
        line(p_.chunk_prologue(1, R));
        chunk_begin(ph[pi], body, "r", R);
        open(p_.lane_loop());
        line(p_.lane_prologue(1, R));
      } else {
        open(p_.inner_loop(R));
        if (!p_.inner_loop_prologue(R).empty()) line(p_.inner_loop_prologue(R));
      }
      for (int n : ph[pi]) {
        std::string v = emit(body.at(n));
        const SchedNode& sn = g_.nodes[static_cast<size_t>(n)];
        if (sn.is_reduction()) {
          line(acc[n] + (sn.reduce_op == Op::Sum ? " += " + v + ";"
                                                 : " = fg_max(" + acc[n] + ", static_cast<decltype(" + acc[n] + ")>(" + v + "));"));
        } else {
          value[n] = v;
          store(n, v);
          if (on_value) on_value(n, v);
        }
      }
      close();
      if (chunks) {
        chunk_end();
        close();
      }
      for (int n : ph[pi]) {
        if (!g_.nodes[static_cast<size_t>(n)].is_reduction()) { value.erase(n); continue; }
        std::string combine = p_.combine_partials(acc[n], g_.nodes[static_cast<size_t>(n)].reduce_op);
        if (!combine.empty()) line(combine);
        value[n] = acc[n];
        store(n, acc[n], true);
      }
    }
  }

  // Puts nodes in a frame (numel X, rnumel R): their bodies in the kernel's
  // variables, where each stores, and whether it runs inside the r loop.
  void place(const std::vector<int>& nodes, int64_t X, int64_t R, std::map<int, ExprP>* body,
             std::map<int, bool>* inner) {
    for (int n : nodes) {
      const SchedNode& sn = g_.nodes[static_cast<size_t>(n)];
      producer[sn.out_buffer] = n;
      (*body)[n] = ex_subst(sn.body, kernel_var_map(sn, X, R));
      std::vector<Access> acc;
      FG_CHECK(kernel_accesses(g_, sn, X, R, &acc), "node does not fit its kernel");
      for (const auto& a : acc)
        if (a.write) store_at[n] = a.index;
      (*inner)[n] = runs_inner(sn, X, R);
    }
  }

  // The kernel's text; buffers no store reached are reported as removed.
  std::string finish(const std::string& signature, const std::vector<int>& nodes, std::set<int>* removed) {
    std::set<int> written;
    for (int n : nodes) {
      if (stored[n]) written.insert(g_.nodes[static_cast<size_t>(n)].out_buffer);
      else removed->insert(g_.nodes[static_cast<size_t>(n)].out_buffer);
    }
    std::string src = signature + " {\n" + arg_decls(written);
    for (const auto& l : lines) src += l + "\n";
    return src + "}\n";
  }

  static bool wide(DType t) { return dtype_size(t) == 2 || dtype_size(t) == 4; }

  // Whether `index` moves by one element per lane when `var` (of `range`
  // values) runs over chunks q*8 + v, from a chunk start that is a multiple
  // of 8 elements (16 bytes for 2-byte types) for every q and every value
  // of the other variables. `base` gets the chunk start, in q.
  static bool chunk_access(const IndexP& index, const std::string& var, int64_t range, IndexP* base) {
    constexpr int64_t kLanes = CStylePrinter::kChunkLanes;
    if (range % kLanes != 0) return false;
    IndexP at = ix_subst(index, {{var, ix_add(ix_mul(ix_var("q", range / kLanes), kLanes), ix_var("v", kLanes))}});
    bool unit = false;
    IndexP b = ix_const(at->constant);
    for (const auto& [c, atom] : at->terms) {
      if (atom->kind == IndexAtom::Var && atom->var == "v") {
        if (c != 1) return false;
        unit = true;
        continue;
      }
      std::map<std::string, int64_t> vars;
      ix_vars(ix_atom(atom), &vars);
      if (vars.count("v") || c % kLanes != 0) return false;
      b = ix_add(b, ix_mul(ix_atom(atom), c));
    }
    if (!unit || b->constant % kLanes != 0) return false;
    *base = b;
    return true;
  }

  // Opens a chunk of `nodes`: the chunk's wide loads of kernel inputs, and
  // the chunk variables that stores fill lane by lane. Values and their
  // order are what scalar accesses give.
  void chunk_begin(const std::vector<int>& nodes, const std::map<int, ExprP>& body, const std::string& var,
                   int64_t range) {
    vec_load.clear();
    vec_store.clear();
    for (int n : nodes) {
      std::map<std::string, std::pair<int, IndexP>> loads;
      ex_loads(body.at(n), &loads);
      for (const auto& [k, l] : loads) {
        if (vec_load.count(k) || producer.count(l.first)) continue;
        if (row_cache.count(k) && row_cache_first[k] != current_phase) {
          if (row_chunked.count(k)) vec_load[k] = row_cache[k] + "[c]";  // in registers already
          continue;
        }
        DType t = g_.buffers[static_cast<size_t>(l.first)].dtype;
        IndexP base;
        if (!wide(t) || !chunk_access(l.second, var, range, &base)) continue;
        std::string at = ptr(l.first) + " + (" + base->key + ")";
        if (row_chunked.count(k)) {
          vec_load[k] = row_cache[k] + "[c]";
          line(p_.chunk_assign(vec_load[k], at));
        } else {
          vec_load[k] = "w" + std::to_string(tmp_++);
          line(p_.chunk_load(p_.storage_type(t), vec_load[k], at));
        }
      }
    }
    for (int n : nodes) {
      const SchedNode& sn = g_.nodes[static_cast<size_t>(n)];
      DType t = g_.buffers[static_cast<size_t>(sn.out_buffer)].dtype;
      IndexP base;
      if (!stored[n] || !wide(t) || !chunk_access(store_at[n], var, range, &base)) continue;
      std::string name = "w" + std::to_string(tmp_++);
      line(p_.out_chunk_decl(name));
      vec_store[n] = {name, ptr(sn.out_buffer) + " + (" + base->key + ")"};
    }
  }

  void chunk_end() {
    for (const auto& [n, s] : vec_store)
      line(p_.chunk_store(g_.buffers[static_cast<size_t>(g_.nodes[static_cast<size_t>(n)].out_buffer)].dtype, s.first,
                          s.second));
    vec_load.clear();
    vec_store.clear();
  }

  std::string arg_decls(const std::set<int>& written) const {
    std::string src;
    for (size_t ai = 0; ai < k_.args.size(); ++ai) {
      int b = k_.args[ai];
      const BufferInfo& bi = g_.buffers[static_cast<size_t>(b)];
      bool w = written.count(b) > 0;
      std::string c = w ? "" : "const ";
      src += "  " + c + p_.storage_type(bi.dtype) + "* __restrict__ " + arg_name_.at(b) + " = static_cast<" + c +
             p_.storage_type(bi.dtype) + "*>(" + p_.arg_ref(ai) + ");  // " + bi.name + "\n";
    }
    return src;
  }

 private:
  const CStylePrinter& p_;
  const LoweredGraph& g_;
  Kernel& k_;
  std::function<std::string(const ExprP&)> custom_load_;
  std::map<int, std::string> arg_name_;
  std::vector<std::map<std::string, std::string>> scopes_{1};
  int tmp_ = 0;
};

}  // namespace

// Which values leave the kernel: read by a node outside it, a graph output,
// or a mutation of an input.
std::map<int, bool> CStylePrinter::needs_store(const std::vector<int>& nodes) const {
  std::set<int> members(nodes.begin(), nodes.end());
  std::set<int> outputs;
  for (const auto& o : g_.outputs) outputs.insert(o.first);
  std::map<int, bool> stored;
  for (int n : nodes) {
    const SchedNode& sn = g_.nodes[static_cast<size_t>(n)];
    bool st = sn.mutation || outputs.count(sn.out_buffer) > 0;
    for (int reader : readers_[static_cast<size_t>(sn.out_buffer)])
      if (!members.count(reader)) st = true;
    stored[n] = st;
  }
  return stored;
}

Kernel CStylePrinter::print_group(const FusedGroup& gr, int index, std::set<int>* removed) {
  for (int n : gr.nodes)
    if (g_.nodes[static_cast<size_t>(n)].is_template()) return print_template(gr, index, removed);
  const int64_t X = gr.numel, R = gr.rnumel;
  Kernel k;
  Emitter em(*this, g_, k, nullptr);
  bool has_red = false;
  for (int n : gr.nodes) has_red = has_red || g_.nodes[static_cast<size_t>(n)].is_reduction();
  std::map<int, ExprP> body;
  std::map<int, bool> inner;
  em.place(gr.nodes, X, R, &body, &inner);
  em.stored = needs_store(gr.nodes);
  k.kind = !has_red ? "poi" : (R <= 1024 ? "per" : "red");
  k.numel = X;
  k.rnumel = R;
  k.ops = kernel_ops(g_, gr.nodes);
  k.nodes = gr.nodes;
  k.name = kernel_name(backend(), k.kind, k.ops, index);
  if (!has_red && chunked(X, 1)) {
    // pointwise in chunks of 8 consecutive x
    em.open(chunk_loop(X, 1));
    em.chunk_begin(gr.nodes, body, "x", X);
    em.open(lane_loop());
    em.line(lane_prologue(X, 1));
    em.phases(gr.nodes, body, inner, R, nullptr);
    em.close();
    em.chunk_end();
    em.close();
  } else {
    em.open(outer_loop(X, has_red));
    em.phases(gr.nodes, body, inner, R, nullptr);
    em.close();
  }
  k.source = em.finish(signature("@NAME@"), gr.nodes, removed);
  return k;
}

// A GEMM template with what fused into it. Rows of A are built kGemmRows at
// a time (running the prologue over (x=m, r=k), which may hold a whole norm)
// into local arrays; each row of B is built once per block of rows; the dot
// products accumulate in f32; the epilogue runs over (x = m*N + n) with the
// GEMM results rounded to the output type, as a store and reload would.
Kernel CStylePrinter::print_template(const FusedGroup& gr, int index, std::set<int>* removed) {
  FG_CHECK(supports_templates(), "the " + backend() + " printer has no GEMM template");
  constexpr int kGemmRows = 4;
  std::vector<int> tmpls, pro, epi;
  for (int n : gr.nodes) {
    const SchedNode& sn = g_.nodes[static_cast<size_t>(n)];
    if (sn.is_template()) tmpls.push_back(n);
  }
  const SchedNode& t0 = g_.nodes[static_cast<size_t>(tmpls[0])];
  const int64_t M = t0.gemm_m, N = t0.gemm_n, K = t0.gemm_k;
  for (int n : gr.nodes) {
    const SchedNode& sn = g_.nodes[static_cast<size_t>(n)];
    if (sn.is_template()) continue;
    (n < tmpls[0] ? pro : epi).push_back(n);
  }
  Kernel k;
  k.kind = "tem";
  k.ops = kernel_ops(g_, gr.nodes);
  k.nodes = gr.nodes;
  k.name = kernel_name(backend(), k.kind, k.ops, index);
  Emitter em(*this, g_, k, nullptr);
  em.stored = needs_store(gr.nodes);
  std::map<int, ExprP> body;
  std::map<int, bool> inner;
  em.place(pro, M, K, &body, &inner);
  em.place(epi, M * N, 1, &body, &inner);
  const std::string K_s = std::to_string(K);
  em.line("float arow[" + std::to_string(kGemmRows) + "][" + K_s + "];");
  em.line("float brow[" + K_s + "];");
  em.open("for (int64_t m0 = 0; m0 < " + std::to_string(M) + "; m0 += " + std::to_string(kGemmRows) + ")");
  em.line("const int64_t rows = std::min<int64_t>(" + std::to_string(kGemmRows) + ", " + std::to_string(M) + " - m0);");
  em.open("for (int64_t i = 0; i < rows; ++i)");
  em.line("const int64_t x = m0 + i;");
  int a_node = -1;
  auto pit = em.producer.find(t0.a_buffer);
  if (pit != em.producer.end()) a_node = pit->second;
  DType a_type = g_.buffers[static_cast<size_t>(t0.a_buffer)].dtype;
  if (!pro.empty())
    em.phases(pro, body, inner, K, [&](int n, const std::string& v) {
      if (n == a_node) em.line("arow[i][r] = " + em.round_to(a_type, v) + ";");
    });
  if (a_node < 0) {
    em.open(inner_loop(K));
    em.line("arow[i][r] = " + em.emit(t0.gemm_a) + ";");
    em.close();
  }
  em.close();
  em.value.clear();
  em.open("for (int64_t n = 0; n < " + std::to_string(N) + "; ++n)");
  for (int t : tmpls) {
    const SchedNode& sn = g_.nodes[static_cast<size_t>(t)];
    std::string acc = "acc" + std::to_string(t);
    em.line("float " + acc + "[" + std::to_string(kGemmRows) + "];");
    em.open(inner_loop(K));
    em.line("brow[r] = " + em.emit(sn.gemm_b) + ";");
    em.close();
    em.open("for (int64_t i = 0; i < rows; ++i)");
    em.line("float s = 0;");
    em.line("#pragma omp simd reduction(+ : s)");
    em.line("for (int64_t r = 0; r < " + K_s + "; ++r) s += arow[i][r] * brow[r];");
    if (sn.gemm_bias) em.line("s += " + em.emit(sn.gemm_bias) + ";");
    em.line(acc + "[i] = s;");
    em.close();
  }
  em.open("for (int64_t i = 0; i < rows; ++i)");
  em.line("const int64_t x = (m0 + i) * " + std::to_string(N) + " + n;");
  for (int t : tmpls) {
    const SchedNode& sn = g_.nodes[static_cast<size_t>(t)];
    std::string v = "v" + std::to_string(t);
    em.line("const float " + v + " = " + em.round_to(g_.buffers[static_cast<size_t>(sn.out_buffer)].dtype,
                                                     "acc" + std::to_string(t) + "[i]") + ";");
    em.producer[sn.out_buffer] = t;
    em.store_at[t] = ix_var("x", M * N);
    em.value[t] = v;
    em.store(t, v);
  }
  if (!epi.empty()) em.phases(epi, body, inner, 1, nullptr);
  em.close();
  em.close();
  em.close();
  k.source = em.finish(signature("@NAME@"), gr.nodes, removed);
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
std::string CppPrinter::outer_loop(int64_t numel, bool) const {
  return "for (int64_t x = 0; x < " + std::to_string(numel) + "; ++x)";
}
std::string CppPrinter::inner_loop(int64_t rnumel) const {
  return "for (int64_t r = 0; r < " + std::to_string(rnumel) + "; ++r)";
}

KernelProgram generate_cpp(const LoweredGraph& g, const Schedule& s) { return CppPrinter(g).print(s); }

}  // namespace fg
