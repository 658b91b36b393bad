#include "kernels/cuda/cublaslt.h"

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <vector>
#include <memory>
#include <mutex>
#include <tuple>

namespace fg {

namespace {

#define LT_TRY(call)                                                                              \
  do {                                                                                            \
    cublasStatus_t st_ = (call);                                                                  \
    if (st_ != CUBLAS_STATUS_SUCCESS) return std::string(#call) + ": cuBLAS status " + std::to_string(st_); \
  } while (0)

cudaDataType_t data_type(LtType t) {
  switch (t) {
    case LtType::BF16: return CUDA_R_16BF;
    case LtType::F16: return CUDA_R_16F;
    case LtType::F32: return CUDA_R_32F;
  }
  return CUDA_R_32F;
}

// One shape's descriptors and algorithm. cuBLASLt is column-major: the
// row-major D [m, n] is the column-major D^T [n, m] = W · A^T, so its "A" is
// W (k x n, transposed) and its "B" is A (k x m).
struct Plan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t w = nullptr, a = nullptr, c = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  ~Plan() {
    if (op) cublasLtMatmulDescDestroy(op);
    for (auto l : {w, a, c, d})
      if (l) cublasLtMatrixLayoutDestroy(l);
  }
};

// device, m, n, k, batch, type, bias, gelu, addend, and the alignments of W, A, C, D
using PlanKey = std::tuple<int, int64_t, int64_t, int64_t, int64_t, int, bool, bool, bool, uint32_t, uint32_t,
                           uint32_t, uint32_t>;

// The largest power of two (up to 256) that divides the address: the
// algorithm search is told it, as its default assumes 256-byte alignment.
uint32_t alignment(const void* p) {
  uint32_t a = 256;
  auto v = reinterpret_cast<uintptr_t>(p);
  while (a > 1 && v % a != 0) a /= 2;
  return a;
}

struct Choice {
  LtAlgo algo;
  int fallbacks = 0;  // plans that could not take it (their operands' alignment)
};

struct State {
  std::mutex mu;
  std::map<int, cublasLtHandle_t> handles;  // per device
  std::map<PlanKey, std::unique_ptr<Plan>> plans;
  bool tuning = false;
  std::map<std::string, Choice> choices;  // by lt_shape_key
  std::set<std::string> untuned_seen;
  std::vector<LtGemm> untuned;
};

State& state() {
  static State* s = new State();  // lives as long as the process: its handles may be used at exit
  return *s;
}

std::string tune_key(const LtGemm& g) { return lt_shape_key(g); }

std::string make_layout(cublasLtMatrixLayout_t* l, cudaDataType_t t, int64_t rows, int64_t cols, int64_t ld,
                        int64_t batch, int64_t stride) {
  LT_TRY(cublasLtMatrixLayoutCreate(l, t, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), ld));
  if (batch > 1) {
    int32_t b = static_cast<int32_t>(batch);
    LT_TRY(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &b, sizeof(b)));
    LT_TRY(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
  }
  return "";
}

std::string make_descs(const LtGemm& g, Plan* p) {
  cudaDataType_t t = data_type(g.type);
  LT_TRY(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t tw = CUBLAS_OP_T, ta = CUBLAS_OP_N;
  LT_TRY(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &tw, sizeof(tw)));
  LT_TRY(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &ta, sizeof(ta)));
  if (g.bias || g.gelu_tanh) {
    cublasLtEpilogue_t e = g.gelu_tanh ? (g.bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU)
                                       : CUBLASLT_EPILOGUE_BIAS;
    LT_TRY(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof(e)));
  }
  if (g.bias) LT_TRY(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &t, sizeof(t)));
  std::string err;
  if (!(err = make_layout(&p->w, t, g.k, g.n, g.k, g.batch, g.n * g.k)).empty()) return err;
  if (!(err = make_layout(&p->a, t, g.k, g.m, g.k, g.batch, 0)).empty()) return err;
  // without an addend, C is D (not read: beta is 0)
  if (!(err = make_layout(&p->c, t, g.n, g.m, g.n, g.batch, g.addend ? 0 : g.m * g.n)).empty()) return err;
  if (!(err = make_layout(&p->d, t, g.n, g.m, g.n, g.batch, g.m * g.n)).empty()) return err;
  return "";
}

// Up to `count` candidates of cuBLASLt's heuristic, best first.
std::string heuristics(cublasLtHandle_t h, const Plan& p, const uint32_t align[4], int count,
                       std::vector<cublasLtMatmulHeuristicResult_t>* out) {
  cublasLtMatmulPreference_t pref;
  LT_TRY(cublasLtMatmulPreferenceCreate(&pref));
  size_t ws = kLtWorkspaceBytes;
  cublasStatus_t st =
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
  const cublasLtMatmulPreferenceAttributes_t align_attr[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4 && st == CUBLAS_STATUS_SUCCESS; ++i)
    st = cublasLtMatmulPreferenceSetAttribute(pref, align_attr[i], &align[i], sizeof(align[i]));
  out->assign(static_cast<size_t>(count), cublasLtMatmulHeuristicResult_t{});
  int found = 0;
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmulAlgoGetHeuristic(h, p.op, p.w, p.a, p.c, p.d, pref, count, out->data(), &found);
  cublasLtMatmulPreferenceDestroy(pref);
  LT_TRY(st);
  out->resize(static_cast<size_t>(found));
  if (found == 0) return "cuBLASLt has no algorithm for this GEMM";
  return "";
}

// Whether cuBLASLt runs `algo` for the plan's descriptors within the workspace.
std::string algo_fits(cublasLtHandle_t h, const Plan& p, const cublasLtMatmulAlgo_t& algo) {
  cublasLtMatmulHeuristicResult_t r{};
  cublasStatus_t st = cublasLtMatmulAlgoCheck(h, p.op, p.w, p.a, p.c, p.d, &algo, &r);
  if (st != CUBLAS_STATUS_SUCCESS) return "cuBLASLt refuses it here (status " + std::to_string(st) + ")";
  if (r.workspaceSize > kLtWorkspaceBytes) return "it needs a larger workspace";
  return "";
}

std::string make_plan(cublasLtHandle_t h, const LtGemm& g, const uint32_t align[4], Plan* p) {
  std::string err = make_descs(g, p);
  if (!err.empty()) return err;
  State& s = state();
  auto chosen = s.tuning ? s.choices.find(tune_key(g)) : s.choices.end();
  if (chosen != s.choices.end()) {
    cublasLtMatmulAlgo_t a;
    static_assert(sizeof(a) == sizeof(LtAlgo), "cublasLtMatmulAlgo_t is 64 bytes");
    std::memcpy(&a, chosen->second.algo.data, sizeof(a));
    if (algo_fits(h, *p, a).empty()) {
      p->algo = a;
      return "";
    }
    ++chosen->second.fallbacks;  // the operands' alignment rules it out: the top-1 for them
  } else if (s.tuning && s.untuned_seen.insert(tune_key(g)).second) {
    s.untuned.push_back(g);
  }
  std::vector<cublasLtMatmulHeuristicResult_t> r;
  if (!(err = heuristics(h, *p, align, 1, &r)).empty()) return err;
  p->algo = r[0].algo;
  return "";
}

cublasLtHandle_t handle_locked(int dev, std::string* err) {
  State& s = state();
  auto hit = s.handles.find(dev);
  if (hit != s.handles.end()) return hit->second;
  cublasLtHandle_t h = nullptr;
  cublasStatus_t st = cublasLtCreate(&h);
  if (st != CUBLAS_STATUS_SUCCESS) {
    *err = "cublasLtCreate: cuBLAS status " + std::to_string(st);
    return nullptr;
  }
  s.handles[dev] = h;
  return h;
}

}  // namespace

std::string lt_gemm(const LtGemm& g, const void* a, const void* w, const void* bias, const void* c, float beta,
                    void* d, void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  if (workspace_bytes < kLtWorkspaceBytes) return "lt_gemm needs a workspace of kLtWorkspaceBytes";
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return "no CUDA device";
  State& s = state();
  Plan* p = nullptr;
  cublasLtHandle_t h = nullptr;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    std::string herr;
    h = handle_locked(dev, &herr);
    if (!h) return herr;
    const uint32_t align[4] = {alignment(w), alignment(a), alignment(g.addend ? c : d), alignment(d)};
    PlanKey key{dev, g.m, g.n, g.k, g.batch, static_cast<int>(g.type), g.bias, g.gelu_tanh, g.addend,
                align[0], align[1], align[2], align[3]};
    auto it = s.plans.find(key);
    if (it == s.plans.end()) {
      auto plan = std::make_unique<Plan>();
      std::string err = make_plan(h, g, align, plan.get());
      if (!err.empty()) return err;
      it = s.plans.emplace(key, std::move(plan)).first;
    }
    p = it->second.get();
  }
  if (g.bias) LT_TRY(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
  const float alpha = 1.0f;
  const float b = g.addend ? beta : 0.0f;
  LT_TRY(cublasLtMatmul(h, p->op, &alpha, w, p->w, a, p->a, &b, g.addend ? c : d, p->c, d, p->d, &p->algo, workspace,
                        workspace_bytes, stream));
  return "";
}

}  // namespace fg

// -- GEMM algorithm choice ---------------------------------------------------

namespace fg {

std::string lt_algo_hex(const LtAlgo& a) {
  std::string s;
  char b[17];
  for (uint64_t w : a.data) {
    std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(w));
    s += b;
  }
  return s;
}

bool lt_algo_from_hex(const std::string& hex, LtAlgo* a) {
  if (hex.size() != 128) return false;
  for (char c : hex)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  for (int i = 0; i < 8; ++i) a->data[i] = std::stoull(hex.substr(static_cast<size_t>(i) * 16, 16), nullptr, 16);
  return true;
}

std::string lt_algo_text(const LtAlgo& la) {
  cublasLtMatmulAlgo_t a;
  std::memcpy(&a, la.data, sizeof(a));
  struct Attr {
    cublasLtMatmulAlgoConfigAttributes_t attr;
    const char* name;
  };
  const Attr attrs[] = {{CUBLASLT_ALGO_CONFIG_ID, "algo"},
                        {CUBLASLT_ALGO_CONFIG_TILE_ID, "tile"},
                        {CUBLASLT_ALGO_CONFIG_STAGES_ID, "stages"},
                        {CUBLASLT_ALGO_CONFIG_SPLITK_NUM, "splitk"},
                        {CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, "reduction"},
                        {CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, "swizzle"},
                        {CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, "custom"},
                        {CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, "cluster"}};
  std::string s;
  for (const Attr& at : attrs) {
    // the size must be the attribute's own: ask for it first (an integer of
    // 2, 4 or 8 bytes; read into the low bytes, little-endian)
    size_t size = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(&a, at.attr, nullptr, 0, &size) != CUBLAS_STATUS_SUCCESS || size == 0 ||
        size > 8)
      continue;
    uint64_t v = 0;
    size_t written = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(&a, at.attr, &v, size, &written) != CUBLAS_STATUS_SUCCESS) continue;
    s += (s.empty() ? "" : " ") + std::string(at.name) + " " + std::to_string(v);
  }
  return s;
}

std::string lt_shape_key(const LtGemm& g) {
  const char* t = g.type == LtType::BF16 ? "bf16" : g.type == LtType::F16 ? "f16" : "f32";
  std::string s = std::string(t) + " m" + std::to_string(g.m) + " n" + std::to_string(g.n) + " k" + std::to_string(g.k);
  if (g.batch > 1) s += " batch" + std::to_string(g.batch);
  if (g.bias) s += " bias";
  if (g.gelu_tanh) s += " gelu";
  if (g.addend) s += " addend";
  return s;
}

int lt_version() { return static_cast<int>(cublasLtGetVersion()); }

namespace {

size_t type_bytes(LtType t) { return t == LtType::F32 ? 4 : 2; }

// Device memory of `count` elements of `t`, filled with pseudo-random values
// in [-scale, scale) (a pattern of up to 1M elements, repeated).
struct DeviceFill {
  void* p = nullptr;
  ~DeviceFill() {
    if (p) cudaFree(p);
  }
  std::string make(LtType t, int64_t count, float scale, uint32_t seed) {
    const size_t es = type_bytes(t), bytes = static_cast<size_t>(std::max<int64_t>(count, 1)) * es;
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
      cudaGetLastError();
      p = nullptr;
      return "cudaMalloc of " + std::to_string(bytes) + " bytes failed";
    }
    const size_t pattern = std::min<size_t>(static_cast<size_t>(std::max<int64_t>(count, 1)), size_t{1} << 20);
    std::vector<unsigned char> host(pattern * es);
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < pattern; ++i) {
      x = x * 1664525u + 1013904223u;
      const float v = scale * (static_cast<float>(x >> 8) / 8388608.0f - 1.0f);
      if (t == LtType::F32) {
        std::memcpy(&host[i * 4], &v, 4);
      } else if (t == LtType::BF16) {
        const __nv_bfloat16 h = __float2bfloat16(v);
        std::memcpy(&host[i * 2], &h, 2);
      } else {
        const __half h = __float2half(v);
        std::memcpy(&host[i * 2], &h, 2);
      }
    }
    for (size_t off = 0; off < bytes; off += host.size()) {
      const size_t n = std::min(host.size(), bytes - off);
      if (cudaMemcpy(static_cast<char*>(p) + off, host.data(), n, cudaMemcpyHostToDevice) != cudaSuccess)
        return "cudaMemcpy failed";
    }
    return "";
  }
};

}  // namespace

std::string lt_measure(const LtGemm& g, int max_candidates, LtMeasured* out) {
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return "no CUDA device";
  cublasLtHandle_t h = nullptr;
  {
    std::lock_guard<std::mutex> lock(state().mu);
    std::string err;
    h = handle_locked(dev, &err);
    if (!h) return err;
  }
  Plan p;
  std::string err = make_descs(g, &p);
  if (!err.empty()) return err;
  const uint32_t align[4] = {256, 256, 256, 256};
  std::vector<cublasLtMatmulHeuristicResult_t> cands;
  if (!(err = heuristics(h, p, align, std::max(1, max_candidates), &cands)).empty()) return err;
  DeviceFill a, w, c, d, bias, ws;
  const float wscale = 1.0f / std::sqrt(static_cast<float>(std::max<int64_t>(g.k, 1)));
  if (!(err = a.make(g.type, g.m * g.k, 1.0f, 1)).empty() || !(err = w.make(g.type, g.batch * g.n * g.k, wscale, 2)).empty() ||
      !(err = c.make(g.type, g.m * g.n, 1.0f, 3)).empty() || !(err = d.make(g.type, g.batch * g.m * g.n, 0.0f, 4)).empty() ||
      !(err = bias.make(g.type, g.n, 1.0f, 5)).empty())
    return err;
  if (cudaMalloc(&ws.p, kLtWorkspaceBytes) != cudaSuccess) {
    cudaGetLastError();
    ws.p = nullptr;
    return "cudaMalloc of the workspace failed";
  }
  cudaStream_t stream = nullptr;
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess ||
      cudaEventCreate(&e0) != cudaSuccess || cudaEventCreate(&e1) != cudaSuccess) {
    if (stream) cudaStreamDestroy(stream);
    if (e0) cudaEventDestroy(e0);
    return "cannot make a stream and events";
  }
  if (g.bias) cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias.p, sizeof(bias.p));
  const float alpha = 1.0f, beta = g.addend ? 1.0f : 0.0f;
  auto run = [&](const cublasLtMatmulAlgo_t& algo) {
    return cublasLtMatmul(h, p.op, &alpha, w.p, p.w, a.p, p.a, &beta, g.addend ? c.p : d.p, p.c, d.p, p.d, &algo,
                          ws.p, kLtWorkspaceBytes, stream);
  };
  // Timed at the state the forward runs in: a GPU at its power cap ranks
  // candidates differently from a cool one (H100, h4096's gate/up GEMM: a
  // candidate at 0.886 of the top-1 cool, 0.958 after sustained load;
  // bench/RESULTS.md, eleventh step). Each candidate: one run that must
  // succeed; then the top-1 back to back for kWarmMs; then kRounds rounds,
  // each running every candidate ten times back to back in turn (the
  // order rotating by round, no drain between them but the event's), and
  // each candidate's median round. Before 2026-11-26 evening: the best of
  // three rounds, each candidate on its own from a drained device.
  constexpr double kWarmMs = 250;
  constexpr int kRounds = 5, kRuns = 10;
  std::vector<double> us(cands.size(), -1);
  std::vector<size_t> ok;
  for (size_t i = 0; i < cands.size(); ++i) {
    if (run(cands[i].algo) != CUBLAS_STATUS_SUCCESS || cudaStreamSynchronize(stream) != cudaSuccess) {
      cudaGetLastError();
      continue;
    }
    ok.push_back(i);
  }
  if (!ok.empty() && ok.front() == 0) {
    float one = 0;
    cudaEventRecord(e0, stream);
    for (int r = 0; r < kRuns; ++r) run(cands[0].algo);
    cudaEventRecord(e1, stream);
    cudaEventSynchronize(e1);
    cudaEventElapsedTime(&one, e0, e1);
    const int warm = static_cast<int>(std::ceil(kWarmMs / std::max(one / kRuns, 1e-4f)));
    for (int r = 0; r < warm; ++r) run(cands[0].algo);
  }
  std::vector<std::vector<double>> rounds(cands.size());
  for (int round = 0; round < kRounds; ++round)
    for (size_t j = 0; j < ok.size(); ++j) {
      const size_t i = ok[(j + static_cast<size_t>(round)) % ok.size()];
      cudaEventRecord(e0, stream);
      for (int r = 0; r < kRuns; ++r) run(cands[i].algo);
      cudaEventRecord(e1, stream);
      cudaEventSynchronize(e1);
      float ms = 0;
      cudaEventElapsedTime(&ms, e0, e1);
      rounds[i].push_back(1000.0 * ms / kRuns);
    }
  for (size_t i : ok) {
    std::sort(rounds[i].begin(), rounds[i].end());
    us[i] = rounds[i][rounds[i].size() / 2];
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaStreamDestroy(stream);
  if (us[0] < 0) return "cuBLASLt's top-1 algorithm did not run";
  size_t pick = 0;
  int timed = 0;
  for (size_t i = 0; i < us.size(); ++i) {
    if (us[i] < 0) continue;
    ++timed;
    if (us[i] < us[pick]) pick = i;
  }
  if (us[pick] > 0.99 * us[0]) pick = 0;  // within the timings' spread: the top-1 stays
  std::memcpy(out->algo.data, &cands[pick].algo, sizeof(out->algo.data));
  std::memcpy(out->top1.data, &cands[0].algo, sizeof(out->top1.data));
  out->choice = static_cast<int>(pick);
  out->candidates = timed;
  out->us = us[pick];
  out->top1_us = us[0];
  return "";
}

void lt_set_tuning(bool on) {
  std::lock_guard<std::mutex> lock(state().mu);
  state().tuning = on;
  state().plans.clear();  // remade under the new rule
}

bool lt_tuning() {
  std::lock_guard<std::mutex> lock(state().mu);
  return state().tuning;
}

namespace {

// Under state().mu: the current device's handle and g's descriptors.
std::string descs_locked(const LtGemm& g, cublasLtHandle_t* h, Plan* p) {
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return "no CUDA device";
  std::string err;
  *h = handle_locked(dev, &err);
  if (!*h) return err;
  return make_descs(g, p);
}

// Under state().mu: whether cuBLASLt runs `la` for g (256-byte aligned).
std::string fits_locked(const LtGemm& g, const LtAlgo& la) {
  cublasLtHandle_t h = nullptr;
  Plan p;
  std::string err = descs_locked(g, &h, &p);
  if (!err.empty()) return err;
  cublasLtMatmulAlgo_t a;
  std::memcpy(&a, la.data, sizeof(a));
  return algo_fits(h, p, a);
}

}  // namespace

std::string lt_choose(const LtGemm& g, const LtAlgo& la) {
  std::lock_guard<std::mutex> lock(state().mu);
  const std::string err = fits_locked(g, la);
  if (!err.empty()) return err;
  state().choices[tune_key(g)] = Choice{la, 0};
  state().plans.clear();  // every plan of this shape takes the choice when remade
  return "";
}

std::string lt_fits(const LtGemm& g, const LtAlgo& la) {
  std::lock_guard<std::mutex> lock(state().mu);
  return fits_locked(g, la);
}

bool lt_chosen(const LtGemm& g, LtAlgo* a) {
  std::lock_guard<std::mutex> lock(state().mu);
  auto it = state().choices.find(tune_key(g));
  if (it == state().choices.end()) return false;
  *a = it->second.algo;
  return true;
}

std::string lt_candidates(const LtGemm& g, int n, std::vector<LtAlgo>* out) {
  std::lock_guard<std::mutex> lock(state().mu);
  cublasLtHandle_t h = nullptr;
  Plan p;
  std::string err = descs_locked(g, &h, &p);
  if (!err.empty()) return err;
  const uint32_t align[4] = {256, 256, 256, 256};
  std::vector<cublasLtMatmulHeuristicResult_t> r;
  if (!(err = heuristics(h, p, align, std::max(1, n), &r)).empty()) return err;
  out->clear();
  for (const auto& c : r) {
    LtAlgo a;
    std::memcpy(a.data, &c.algo, sizeof(a.data));
    out->push_back(a);
  }
  return "";
}

std::vector<LtGemm> lt_untuned() {
  std::lock_guard<std::mutex> lock(state().mu);
  std::vector<LtGemm> out;
  for (const LtGemm& g : state().untuned)
    if (!state().choices.count(tune_key(g))) out.push_back(g);
  return out;
}

std::vector<std::pair<std::string, int>> lt_fallbacks() {
  std::lock_guard<std::mutex> lock(state().mu);
  std::vector<std::pair<std::string, int>> out;
  for (const auto& [k, c] : state().choices) out.emplace_back(k, c.fallbacks);
  return out;
}

void lt_forget_choices() {
  std::lock_guard<std::mutex> lock(state().mu);
  state().choices.clear();
  state().untuned.clear();
  state().untuned_seen.clear();
  state().plans.clear();
}

}  // namespace fg
