#include "fusion/codegen/kernel_emitter.h"

#include "fusion/fault.h"

#include "fusion/errors.h"

namespace fg {

void KernelEmitter::open(const std::string& head) {
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

std::string KernelEmitter::ptr(int b) {
  auto it = arg_name_.find(b);
  if (it != arg_name_.end()) return it->second;
  std::string nm = "p" + std::to_string(k_.args.size());
  k_.args.push_back(b);
  return arg_name_[b] = nm;
}

std::string KernelEmitter::emit(const ExprP& e) {
  if (e->kind == Expr::Const) return p_.const_text(e->value, e->dtype);
  // a row's cached element exists inside the loops over r only: a phase
  // computed once per row (outside them) loads it itself (fusegate fuzz
  // found row1[j] read before any loop, where no j is)
  if (e->kind == Expr::Load && in_row_loop && row_cache.count(e->key) && !row_chunked.count(e->key) &&
      row_cache_first[e->key] != current_phase)
    return row_cache[e->key] + "[j]";
  if (e->kind == Expr::Load) {
    // the value the last node of this kernel to write it computed, when it
    // wrote this very element: its store may still wait in a chunk
    // (two copy_ into one input: the second reads the first's value)
    auto wit = writers.find(e->buffer);
    if (wit != writers.end())
      for (auto w = wit->second.rbegin(); w != wit->second.rend(); ++w)
        if (value.count(*w)) {
          if (store_at[*w]->key == e->index->key) return value[*w];
          break;
        }
  }
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    auto f = it->find(e->key);
    if (f != it->end()) return f->second;
  }
  std::string text;
  // an index that data gives: its variables first, each once in scope
  for (size_t k = 0; k < e->indirect.size(); ++k) {
    const auto& [name, size] = e->indirect[k];
    bool declared = false;
    for (const auto& sc : scopes_) declared = declared || sc.count("#" + name);
    if (declared) continue;
    const std::string v = emit(e->args[k]);
    line("const int64_t " + name + " = fg_clamp(static_cast<int64_t>(" + v + "), 0, " + std::to_string(size - 1) + ");");
    scopes_.back()["#" + name] = name;
  }
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
    case Expr::IndexValue: text = "static_cast<" + p_.compute_type(e->dtype) + ">(" + e->index->key + ")"; break;
    default: internal_error("unexpected expression kind");
  }
  std::string v = "t" + std::to_string(tmp_++);
  line("const " + p_.compute_type(e->dtype) + " " + v + " = " + text + ";");
  scopes_.back()[e->key] = v;
  if (e->kind == Expr::Load && in_row_loop && row_cache.count(e->key) && !row_chunked.count(e->key))
    line(row_cache[e->key] + "[j] = " + v + ";");
  return v;
}

std::string KernelEmitter::round_to(DType t, const std::string& x) const {
  if (t == DType::BF16) return "fg_round_bf16(static_cast<float>(" + x + "))";
  if (t == DType::F16) return "fg_round_f16(static_cast<float>(" + x + "))";
  if (t == DType::Bool) return "(" + x + " != 0)";
  return "static_cast<" + p_.compute_type(t) + ">(" + x + ")";
}

// FUSEGATE_FAULT=perturb:NODE: the node's value times 1.5, only where it is
// computed inside a generated kernel that fuses it with other nodes (a
// simulated miscompile of that fusion, for `fusegate bisect` and its tests).
// FUSEGATE_FAULT=broken_fusion:reduction does it to every reduction fused
// with another node: a broken fusion rule, for the fuzzer to find.
bool KernelEmitter::perturbs(int n) const {
  const SchedNode& sn = g_.nodes[static_cast<size_t>(n)];
  const bool chosen = fault_argument("perturb") == sn.name ||
                      (sn.is_reduction() && fault_argument("broken_fusion") == "reduction");
  return k_.nodes.size() >= 2 && chosen && sn.body && is_floating(sn.body->dtype) && sn.reduce_op != Op::Argmax;
}

// A pointwise value as the kernel uses it: `v`, or a variable holding the
// perturbed value.
std::string KernelEmitter::perturb(int n, const std::string& v) {
  if (!perturbs(n)) return v;
  const std::string t = "perturbed" + std::to_string(n) + "_" + std::to_string(tmp_++);
  line(p_.compute_type(g_.nodes[static_cast<size_t>(n)].body->dtype) + " " + t + " = (" + v + ") * 1.5f;");
  return t;
}

void KernelEmitter::store(int n, const std::string& value, bool per_row) {
  const SchedNode& sn = g_.nodes[static_cast<size_t>(n)];
  if (!stored[n]) return;
  const bool broken = p_.broken_variant() && is_floating(g_.buffers[static_cast<size_t>(sn.out_buffer)].dtype);
  const std::string v = broken ? "(" + value + ") * 1.5f" : value;
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

void KernelEmitter::phases(const std::vector<int>& nodes, const std::map<int, ExprP>& body,
                           const std::map<int, bool>& inner, int64_t R,
                           const std::function<void(int, const std::string&)>& on_value) {
  // what a node loads: its value's loads, and an indirect store's position's
  auto node_loads = [&](int n, std::map<std::string, std::pair<int, IndexP>>* loads) {
    ex_loads(body.at(n), loads);
    auto at = scatter_at.find(n);
    if (at != scatter_at.end()) ex_loads(at->second, loads);
  };
  std::vector<std::vector<int>> ph;
  std::vector<bool> ph_inner;
  std::map<int, size_t> phase_of;
  for (int n : nodes) {
    bool in = inner.at(n);
    bool join = !ph.empty() && ph_inner.back() == in;
    if (join && in) {
      std::map<std::string, std::pair<int, IndexP>> loads;
      node_loads(n, &loads);
      for (const auto& [k, l] : loads) {
        auto it = producer.find(l.first);
        if (it == producer.end() || !phase_of.count(it->second) || phase_of[it->second] != ph.size() - 1) continue;
        const SchedNode& ps = g_.nodes[static_cast<size_t>(it->second)];
        // a scan's running value at the element this loop is at is there
        // already; a reduction's is there only once its loop ends
        if (ps.is_reduction() && !(ps.is_scan() && store_at.count(it->second) &&
                                   l.second->key == store_at.at(it->second)->key))
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
    node_loads(n, &loads);
    for (const auto& [k, l] : loads) {
      auto it = producer.find(l.first);
      if (it == producer.end() || it->second == n || !phase_of.count(it->second)) continue;
      int p = it->second;
      bool same_index = l.second->key == store_at[p]->key;
      const SchedNode& ps = g_.nodes[static_cast<size_t>(p)];
      // a scan's value is per element, as a pointwise one's
      bool visible = !inner.at(p) || (ps.is_reduction() && !ps.is_scan()) || phase_of[p] == phase_of[n];
      if (!same_index || !visible) stored[p] = true;
    }
  }
  bool row_kernel = R > 1;
  bool looped_before = false;
  int64_t regs = p_.row_registers(R);
  if (regs > 0) {
    row_words = std::max<int64_t>(row_words, 0);
    std::map<std::string, std::set<size_t>> phases_of_load;
    std::map<std::string, DType> load_type;
    std::map<std::string, IndexP> load_index;
    std::map<std::string, int> load_buffer;
    size_t first_inner = ph.size();
    constexpr int64_t kMaxPrefetchWords = 32;
    int64_t prefetch_words = 0;
    for (size_t pi = 0; pi < ph.size(); ++pi) {
      if (!ph_inner[pi]) continue;
      first_inner = std::min(first_inner, pi);
      for (int n : ph[pi]) {
        std::map<std::string, std::pair<int, IndexP>> loads;
        ex_loads(body.at(n), &loads);
        for (const auto& [k, l] : loads)
          if (!producer.count(l.first)) {
            phases_of_load[k].insert(pi);
            load_type[k] = g_.buffers[static_cast<size_t>(l.first)].dtype;
            load_index[k] = l.second;
            load_buffer[k] = l.first;
          }
      }
    }
    for (const auto& [k, pset] : phases_of_load) {
      // a load the same for every r of the row is one register already
      // (found by the fuzzer on an H100: such a load, emitted once before the
      // loops, left its row cache unwritten and a later loop read garbage)
      std::map<std::string, int64_t> vars;
      ix_vars(load_index[k], &vars);
      bool varies = false;
      for (const auto& [v, range] : vars) varies = varies || v != "x";
      // A load only later loops read is fetched by the first loop, with the
      // row, when it stays in chunks: one wait on memory a row, not a second
      // one after the block-wide combine (a norm's weight; measured on the
      // H100: RMSNorm over 1024 x 2048 bf16 took 4.1 us against 3.0 for the
      // Triton kernel torch.compile makes, which issues both loads at once;
      // 3.9 us with the prefetch). At most kMaxPrefetchWords 32-bit
      // registers a thread go to prefetched rows: the row cache already
      // holds up to 32 elements a thread of each row read twice.
      IndexP pre_base;
      const int64_t words = regs * static_cast<int64_t>(dtype_size(load_type[k])) / 4;
      const bool prefetch = pset.size() == 1 && varies && *pset.begin() != first_inner && p_.chunked(1, R) &&
                            wide(load_type[k]) && prefetch_words + words <= kMaxPrefetchWords &&
                            chunk_access(load_index[k], "r", R, &pre_base);
      if (prefetch) prefetch_words += words;
      if ((pset.size() > 1 && varies) || prefetch) {
        std::string name = "row" + std::to_string(row_cache.size());
        row_cache[k] = name;
        row_cache_first[k] = prefetch ? first_inner : *pset.begin();
        if (prefetch) row_prefetch.insert(k);
        // in chunks, a row read at contiguous aligned places stays in its
        // chunks (bf16: two elements a register)
        IndexP base;
        if (p_.chunked(1, R) && wide(load_type[k]) && chunk_access(load_index[k], "r", R, &base)) {
          row_chunked.insert(k);
          row_chunk_at[k] = {load_buffer[k], base->key};
          row_words += regs * static_cast<int64_t>(dtype_size(load_type[k])) / 4;  // in storage type
          line(p_.chunk_decl(p_.storage_type(load_type[k]),
                             name + "[" + std::to_string(regs / CStylePrinter::kChunkLanes) + "]"));
        } else {
          line(p_.compute_type(load_type[k]) + " " + name + "[" + std::to_string(regs) + "];");
          row_words += regs * (dtype_size(load_type[k]) == 8 ? 2 : 1);  // in compute type
        }
      }
    }
  }
  if (regs > 0) {
    // a stored value read back by a later loop at the element it was
    // stored to: forwarded in registers, as computed (Inductor's kernel
    // answers such a load from its store cache, the value before the store's
    // conversion, as a load in the same loop is answered here); memory would
    // cost a round trip and, in a row kernel held to full occupancy, spills
    for (size_t pi = 0; pi < ph.size(); ++pi) {
      if (!ph_inner[pi]) continue;
      for (int n : ph[pi]) {
        std::map<std::string, std::pair<int, IndexP>> loads;
        ex_loads(body.at(n), &loads);
        for (const auto& [k, l] : loads) {
          auto it = producer.find(l.first);
          if (it == producer.end() || row_cache.count(k)) continue;
          const int p = it->second;
          const SchedNode& ps = g_.nodes[static_cast<size_t>(p)];
          if (p == n || !phase_of.count(p) || phase_of[p] >= pi || !ph_inner[phase_of[p]] || ps.is_reduction() ||
              l.second->key != store_at[p]->key)
            continue;
          const DType t = g_.buffers[static_cast<size_t>(l.first)].dtype;
          const std::string name = "row" + std::to_string(row_cache.size());
          row_cache[k] = name;
          row_cache_first[k] = phase_of[p];
          row_forward[p].push_back(k);
          line(p_.compute_type(t) + " " + name + "[" + std::to_string(regs) + "];");
          row_words += regs * (dtype_size(t) == 8 ? 2 : 1);  // in compute type
        }
      }
    }
  }
  for (size_t pi = 0; pi < ph.size(); ++pi) {
    if (!ph_inner[pi]) {
      for (int n : ph[pi]) {
        std::string v = perturb(n, emit(body.at(n)));
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
      if (!sn.is_reduction() || sn.is_scatter()) continue;
      DType t = sn.body->dtype;
      if (sn.is_sort()) {
        // the row, and beside it each element's position, sorted once the
        // loop has filled them
        acc[n] = "srt" + std::to_string(n);
        line(p_.compute_type(t) + " " + acc[n] + "v[" + std::to_string(R) + "];");
        line("int64_t " + acc[n] + "i[" + std::to_string(R) + "];");
        continue;
      }
      std::string at = p_.accumulator_type(t, sn.reduce_op);
      std::string init = sn.reduce_op == Op::Sum || sn.reduce_op == Op::Cumsum ? "0"
                         : sn.reduce_op == Op::Amin ? (is_floating(t) ? "INFINITY" : "9223372036854775807LL")
                                                    : (is_floating(t) ? "-INFINITY" : "INT64_MIN");
      acc[n] = "acc" + std::to_string(n);
      if (sn.reduce_op == Op::Argmax) {
        // the index, and beside it the value it points at
        line(at + " " + acc[n] + "v = " + (is_floating(t) ? "-INFINITY" : "INT64_MIN") + ";");
        line("int64_t " + acc[n] + " = 0;");
        continue;
      }
      line(at + " " + acc[n] + " = " + init + ";");
    }
    current_phase = pi;
    in_row_loop = true;
    const bool chunks = p_.chunked(1, R);
    if (chunks && regs / CStylePrinter::kChunkLanes >= 2) {
      // loads first: this loop's row caches filled by a loop of loads alone
      // (see row_chunk_at); the loop after it reads them from registers
      std::vector<std::string> first;
      for (const auto& [k, at] : row_chunk_at)
        if (row_cache_first[k] == pi) first.push_back(k);
      if (!first.empty()) {
        open(p_.chunk_loop(1, R));
        line(p_.chunk_prologue(1, R));
        for (const std::string& k : first) {
          const auto& at = row_chunk_at.at(k);
          line(p_.chunk_assign(row_cache[k] + "[c]", ptr(at.first) + " + (" + at.second + ")"));
          row_cache_first[k] = kFilledBefore;
        }
        close();
      }
    }
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
      if (sn.is_scatter()) {
        // where the index says, clamped into the dim as an indirect load's
        // index is; added to what is there (scatter_add, index_add) or
        // written over it, by one thread of the row, in order
        const std::string at = emit(scatter_at.at(n));
        const int64_t size = sn.store.sizes[static_cast<size_t>(sn.reduce_dims[0])];
        line("const int64_t " + sn.scatter_var() + " = fg_clamp(static_cast<int64_t>(" + at + "), 0, " +
             std::to_string(size - 1) + ");");
        std::string x = v;
        if (sn.reduce_op != Op::Scatter) {
          const DType t = g_.buffers[static_cast<size_t>(sn.out_buffer)].dtype;
          const std::string T = p_.compute_type(t);
          x = "(static_cast<" + T + ">(" + p_.load_text(t, ptr(sn.out_buffer), store_at[n]->key) + ") + static_cast<" +
              T + ">(" + v + "))";
        }
        store(n, x, true);
        if (on_value) on_value(n, x);
      } else if (sn.is_sort()) {
        line(acc[n] + "v[r] = " + v + ";");
        line(acc[n] + "i[r] = r;");
      } else if (sn.is_scan()) {
        // the running sum is this element's value; a node of this loop that
        // reads it gets it as stored (in its dtype), as a reload would
        line(acc[n] + " += " + v + ";");
        value[n] = round_to(g_.buffers[static_cast<size_t>(sn.out_buffer)].dtype, acc[n]);
        store(n, acc[n]);
        if (on_value) on_value(n, acc[n]);
      } else if (sn.is_reduction()) {
        const std::string x = "static_cast<decltype(" + acc[n] + ")>(" + v + ")";
        if (sn.reduce_op == Op::Argmax)
          line("if (fg_argmax_better(static_cast<decltype(" + acc[n] + "v)>(" + v + "), static_cast<int64_t>(r), " +
               acc[n] + "v, " + acc[n] + ")) { " + acc[n] + "v = " + v + "; " + acc[n] + " = r; }");
        else if (sn.reduce_op == Op::Sum) line(acc[n] + " += " + v + ";");
        else if (sn.reduce_op == Op::Amin)  // NaN sticks, as in fg_max (the prelude has no min)
          line("if (" + x + " != " + x + " || " + x + " < " + acc[n] + ") " + acc[n] + " = " + x + ";");
        else line(acc[n] + " = fg_max(" + acc[n] + ", " + x + ");");
      } else {
        v = perturb(n, v);
        value[n] = v;
        store(n, v);
        if (on_value) on_value(n, v);
        auto fw = row_forward.find(n);
        if (fw != row_forward.end())
          for (const std::string& k : fw->second)
            line(row_cache[k] + "[j] = " + v + ";");
      }
    }
    close();
    if (chunks) {
      chunk_end();
      close();
    }
    in_row_loop = false;
    for (int n : ph[pi]) {
      const SchedNode& done = g_.nodes[static_cast<size_t>(n)];
      if (done.is_sort()) {
        // sorted, then stored at every element; a later loop of this kernel
        // reads the element it is at from the row
        line("fg_sort_row(" + acc[n] + "v, " + acc[n] + "i, " + (done.descending ? "true" : "false") + ");");
        const std::string at = acc[n] + (done.reduce_op == Op::Sort ? "v[r]" : "i[r]");
        if (stored[n]) {
          open(p_.inner_loop(R));
          store(n, at);
          close();
        }
        value[n] = at;
        continue;
      }
      if (!done.is_reduction() || done.serial()) { value.erase(n); continue; }
      std::string combine = p_.combine_partials(acc[n], g_.nodes[static_cast<size_t>(n)].reduce_op);
      if (!combine.empty()) line(combine);
      if (perturbs(n)) line(acc[n] + " *= 1.5f;");
      value[n] = acc[n];
      store(n, acc[n], true);
    }
  }
}

void KernelEmitter::place(const std::vector<int>& nodes, int64_t X, int64_t R, std::map<int, ExprP>* body,
                          std::map<int, bool>* inner) {
  for (int n : nodes) {
    const SchedNode& sn = g_.nodes[static_cast<size_t>(n)];
    writes(sn.out_buffer, n);
    (*body)[n] = ex_subst(sn.body, kernel_var_map(sn, X, R));
    if (sn.is_scatter()) scatter_at[n] = ex_subst(sn.scatter_at, kernel_var_map(sn, X, R));
    std::vector<Access> acc;
    FG_CHECK(kernel_accesses(g_, sn, X, R, &acc), "node does not fit its kernel");
    for (const auto& a : acc)
      if (a.write) store_at[n] = a.index;
    (*inner)[n] = runs_inner(sn, X, R);
  }
}

std::string KernelEmitter::finish(const std::string& signature, const std::vector<int>& nodes,
                                  std::set<int>* removed) {
  std::set<int> written;
  for (int n : nodes) {
    if (stored[n]) written.insert(g_.nodes[static_cast<size_t>(n)].out_buffer);
    else removed->insert(g_.nodes[static_cast<size_t>(n)].out_buffer);
  }
  std::string src = signature + " {\n" + arg_decls(written);
  for (const auto& l : lines) src += l + "\n";
  return src + "}\n";
}

bool KernelEmitter::chunk_access(const IndexP& index, const std::string& var, int64_t range, IndexP* base) {
  constexpr int64_t kLanes = CStylePrinter::kChunkLanes;
  if (range % kLanes != 0) return false;
  // an indirect index is known per element only, never for a whole chunk
  std::map<std::string, int64_t> used;
  ix_vars(index, &used);
  for (const auto& [v, r] : used)
    if (v.rfind(kIndirectVarPrefix, 0) == 0) return false;
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

void KernelEmitter::chunk_begin(const std::vector<int>& nodes, const std::map<int, ExprP>& body,
                                const std::string& var, int64_t range) {
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
  // the later loops' loads this loop prefetches (no node of it reads them)
  for (const std::string& k : row_prefetch)
    if (row_cache_first[k] == current_phase && !vec_load.count(k)) {
      const auto& at = row_chunk_at.at(k);
      line(p_.chunk_assign(row_cache[k] + "[c]", ptr(at.first) + " + (" + at.second + ")"));
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

void KernelEmitter::chunk_end() {
  for (const auto& [n, s] : vec_store)
    line(p_.chunk_store(g_.buffers[static_cast<size_t>(g_.nodes[static_cast<size_t>(n)].out_buffer)].dtype, s.first,
                        s.second));
  vec_load.clear();
  vec_store.clear();
}

std::string KernelEmitter::arg_decls(const std::set<int>& written) const {
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

}  // namespace fg
