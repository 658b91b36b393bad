// The host C++ dialect: plain loops over x and r, and the GEMM template
// (the one template any dialect prints; the CUDA dialect calls cuBLASLt).
#include "fusion/codegen/cpp_printer.h"

#include <algorithm>
#include <map>

#include "fusion/codegen/kernel_emitter.h"
#include "fusion/errors.h"

namespace fg {

// A GEMM template with what fused into it. Rows of A are built kGemmRows at
// a time (running the prologue over (x=m, r=k), which may hold a whole norm)
// into local arrays; each row of B is built once per block of rows; the dot
// products accumulate in f32; the epilogue runs over (x = m*N + n) with the
// GEMM results rounded to the output type, as a store and reload would.
Kernel CppPrinter::print_template(const FusedGroup& gr, int index, std::set<int>* removed) {
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
  KernelEmitter em(*this, g_, k, nullptr);
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
      if (n != a_node) return;
      // a row-constant A (K = 1, or a value broadcast along K) is computed
      // outside the loop over r: it fills the whole row
      if (inner.at(n)) em.line("arow[i][r] = " + em.round_to(a_type, v) + ";");
      else em.line("for (int64_t r = 0; r < " + K_s + "; ++r) arow[i][r] = " + em.round_to(a_type, v) + ";");
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
    em.writes(sn.out_buffer, t);
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

std::string CppPrinter::prelude() const { return host_kernel_prelude() + host_generated_extras(); }

const std::string& host_generated_extras() {
  static const std::string text = R"(
// helpers of generated kernels only (not hashed into fast path proofs)
// argmax: NaN is the largest value; ties and NaNs go to the first index
template <typename T> static inline bool fg_argmax_better(T v, int64_t i, T bv, int64_t bi) {
  if (v != v) return bv == bv || i < bi;
  if (bv != bv) return false;
  return v > bv || (v == bv && i < bi);
}
)" + sort_row_helper("static inline");
  return text;
}

const std::string& host_kernel_prelude() {
  static const std::string text = R"(// generated by fusegate: host C++ kernels
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
  return text;
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
