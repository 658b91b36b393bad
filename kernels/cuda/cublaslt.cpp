#include "kernels/cuda/cublaslt.h"

#include <cublasLt.h>

#include <map>
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

struct State {
  std::mutex mu;
  std::map<int, cublasLtHandle_t> handles;  // per device
  std::map<PlanKey, std::unique_ptr<Plan>> plans;
};

State& state() {
  static State* s = new State();  // lives as long as the process: its handles may be used at exit
  return *s;
}

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

std::string make_plan(cublasLtHandle_t h, const LtGemm& g, const uint32_t align[4], Plan* p) {
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
  cublasLtMatmulPreference_t pref;
  LT_TRY(cublasLtMatmulPreferenceCreate(&pref));
  size_t ws = kLtWorkspaceBytes;
  cublasStatus_t st =
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
  cublasLtMatmulHeuristicResult_t r{};
  int found = 0;
  const cublasLtMatmulPreferenceAttributes_t align_attr[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4 && st == CUBLAS_STATUS_SUCCESS; ++i)
    st = cublasLtMatmulPreferenceSetAttribute(pref, align_attr[i], &align[i], sizeof(align[i]));
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmulAlgoGetHeuristic(h, p->op, p->w, p->a, p->c, p->d, pref, 1, &r, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  LT_TRY(st);
  if (found == 0) return "cuBLASLt has no algorithm for this GEMM";
  p->algo = r.algo;
  return "";
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
    auto hit = s.handles.find(dev);
    if (hit == s.handles.end()) {
      LT_TRY(cublasLtCreate(&h));
      s.handles[dev] = h;
    } else {
      h = hit->second;
    }
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
