#include "fusion/codegen/cstyle_printer.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <sstream>

#include "fusion/bisect.h"
#include "fusion/fault.h"
#include "fusion/codegen/kernel_emitter.h"
#include "fusion/errors.h"
#include "fusion/ir/text.h"

namespace fg {

std::string CStylePrinter::compute_type(DType t) const {
  switch (t) {
    case DType::BF16: case DType::F16: case DType::F32: return "float";
    case DType::F64: return "double";
    case DType::I64: return "int64_t";
    case DType::Bool: return "bool";
    // each value of a u8 computation is held as u8: wrapping as torch's does
    case DType::I32: return "int32_t";
    case DType::U8: return "uint8_t";
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
    case DType::I32: return "int32_t";
    case DType::U8: return "uint8_t";
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
  if (t == DType::I32 || t == DType::U8) return "static_cast<" + compute_type(t) + ">(" + std::to_string(static_cast<int64_t>(v)) + ")";
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
    // an operand may be a negative literal: "-(-0.75f)", never "--0.75f"
    case Op::Neg: return "(-(" + a[0] + "))";
    case Op::Exp: return "std::exp(" + a[0] + ")";
    case Op::Log: return "std::log(" + a[0] + ")";
    case Op::Sqrt: return "std::sqrt(" + a[0] + ")";
    case Op::Rsqrt: return "(" + c("1") + " / std::sqrt(" + a[0] + "))";
    case Op::Relu: return "fg_relu(" + a[0] + ")";
    case Op::Sigmoid: return "(" + c("1") + " / (" + c("1") + " + std::exp(-(" + a[0] + "))))";
    case Op::Silu: return "(" + a[0] + " / (" + c("1") + " + std::exp(-(" + a[0] + "))))";
    case Op::Tanh: return "std::tanh(" + a[0] + ")";
    case Op::Sin: return "std::sin(" + a[0] + ")";
    case Op::Cos: return "std::cos(" + a[0] + ")";
    case Op::Erf: return "std::erf(" + a[0] + ")";
    // operands are variables or literals here, so each may be read twice
    case Op::Abs: return is_floating(t) ? "std::fabs(" + a[0] + ")" : "(" + a[0] + " < 0 ? -" + a[0] + " : " + a[0] + ")";
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
    case Op::Minimum:  // NaN-propagating, as fg_max
      return "((" + a[0] + " != " + a[0] + " || " + c(a[0]) + " < " + c(a[1]) + ") ? " + c(a[0]) + " : " + c(a[1]) + ")";
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
      if (first.op.op == Op::FastPath) {
        // a hand-written kernel (kernels/fastpaths/): named as its function is
        const std::string stage = attr_str_or(first.op.attrs, "stage", "");
        k.kind = "fast_path";
        k.name = "fastpath_" + attr_str_or(first.op.attrs, "name", "") + (stage.empty() ? "" : "_" + stage);
        k.ops = {k.name};
      }
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
  KernelEmitter em(*this, g_, k, nullptr);
  bool has_red = false, has_scan = false;
  for (int n : gr.nodes) {
    has_red = has_red || g_.nodes[static_cast<size_t>(n)].is_reduction();
    has_scan = has_scan || g_.nodes[static_cast<size_t>(n)].serial();
  }
  serial_rows_ = has_scan;
  // chunks of 8 are a codegen variant FUSEGATE_BISECT=codegen_variants:K
  // can switch off: the K-th kernel that could have them is the last that
  // does (fusion/bisect.h); the rest run element by element
  // (on the host, a pointwise kernel's loop marked for vectorization is the
  // variant: `omp simd`)
  const bool vectorizable = !has_red && !has_scan && can_vectorize(X);
  // (a kernel with a scan runs its rows in order: never a variant, nor
  // counted as one)
  const bool variant = ((has_red ? can_chunk(1, R) : can_chunk(X, 1)) && !has_scan) || vectorizable;
  const int64_t limit = bisect_limits().codegen_variants;
  if (variant) ++variants_;
  const bool allowed = !(variant && limit >= 0 && variants_ > limit);
  chunks_allowed_ = allowed && !has_scan;
  k.chunked = variant && !vectorizable && chunks_allowed_;
  k.vectorized = vectorizable && allowed;
  if (variant && limit >= 0 && variants_ == limit + 1) k.held_back_variant = vectorizable ? "simd" : "chunked";
  const std::string broken = fault_argument("broken_codegen");
  broken_variant_ = (k.chunked && broken == "chunked") || (k.vectorized && broken == "simd");
  // 32-bit indices when the kernel's iteration space and every buffer of
  // the graph hold fewer than 2^30 elements: an index is a sum of
  // non-negative terms no larger than the element it reaches, and a
  // grid-stride step (blocks x threads, at most a few million) past the
  // last element cannot leave 31 bits. (NVRTC 13.0 also crashed compiling
  // an unrolled row loop with 64-bit r and x divided by 17: a fuzz finding.)
  int64_t largest = X * std::max<int64_t>(R, 1);
  for (const BufferInfo& b : g_.buffers) largest = std::max(largest, b.storage_numel);
  narrow_index_ = largest < (int64_t{1} << 30);
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
    if (k.vectorized) em.line("#pragma omp simd");
    em.open(outer_loop(X, has_red));
    em.phases(gr.nodes, body, inner, R, nullptr);
    em.close();
  }
  sig_numel_ = X;
  sig_rnumel_ = R;
  sig_row_words_ = em.row_words;
  k.source = em.finish(signature("@NAME@"), gr.nodes, removed);
  chunks_allowed_ = true;
  broken_variant_ = false;
  narrow_index_ = false;
  serial_rows_ = false;
  return k;
}

Kernel CStylePrinter::print_template(const FusedGroup& gr, int index, std::set<int>* removed) {
  internal_error("the " + backend() + " printer has no GEMM template");
}

std::string sort_row_helper(const std::string& q) {
  return "// sort: a row in place, stable (equal values keep their order), NaN the\n"
         "// largest value (last ascending, first descending), each element's position\n"
         "// moved with it; merged bottom-up through a second row\n"
         "template <typename T> " + q + " bool fg_sorts_before(T a, T b, bool descending) {\n"
         "  return descending ? ((a != a && b == b) || a > b) : ((a == a && b != b) || a < b);\n"
         "}\n"
         "template <int N, typename T> " + q + " void fg_sort_row(T (&v)[N], int64_t (&ix)[N], bool descending) {\n"
         "  T tv[N];\n"
         "  int64_t ti[N];\n"
         "  for (int w = 1; w < N; w *= 2) {\n"
         "    for (int lo = 0; lo < N; lo += 2 * w) {\n"
         "      const int mid = lo + w < N ? lo + w : N, hi = lo + 2 * w < N ? lo + 2 * w : N;\n"
         "      int a = lo, b = mid, k = lo;\n"
         "      while (a < mid && b < hi) {\n"
         "        if (fg_sorts_before(v[b], v[a], descending)) { tv[k] = v[b]; ti[k++] = ix[b++]; }\n"
         "        else { tv[k] = v[a]; ti[k++] = ix[a++]; }\n"
         "      }\n"
         "      while (a < mid) { tv[k] = v[a]; ti[k++] = ix[a++]; }\n"
         "      while (b < hi) { tv[k] = v[b]; ti[k++] = ix[b++]; }\n"
         "    }\n"
         "    for (int k = 0; k < N; ++k) { v[k] = tv[k]; ix[k] = ti[k]; }\n"
         "  }\n"
         "}\n";
}

}  // namespace fg
