// Whether a cuBLASLt candidate's time alone is its time in the forward
// (issue 17): in the replayed forward of tp_block_llama_h2048 the measured
// qkv choice had a 5.6-13.7 us gap before it that the top-1 did not. For
// each GEMM shape, up to 16 candidates, each timed two ways:
//   alone:   ten back-to-back calls, best of five rounds (lt_measure: of three);
//   context: a CUDA graph of twenty [producer kernel writing A -> GEMM]
//            pairs, replayed, minus the same graph of the producers alone;
//            the producer is a bandwidth-bound pass over A, as the RMSNorm
//            before the GEMM is in the forward.
// and one traced replay (CUPTI) per candidate: what the device runs for
// one pair (kernels and memsets) and the idle time between the producer's
// end and the GEMM's first kernel.
//   nvcc -O2 -std=c++17 -arch=sm_90a -o lt_context bench/lt_context.cu -lcublasLt -lcupti \
//     -L/usr/local/cuda/targets/x86_64-linux/lib
//   ./lt_context                 # five shapes; LT_SHAPES=0,3 picks some (indices)
//   LT_HEX=1 ./lt_context        # also each candidate's 128 hex digits, as the
//                                # GEMM tables (gemm_algos) name an algorithm
// Measured (bench/RESULTS.md, "Issue 17, sixth step"): in this small graph
// a candidate's memset costs under 1 us, while traced replays of the whole
// forward showed 8-23 us idle around it; what it costs the forward is
// measured there (max-autotune's check of each choice in its forward).
#include <cupti.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "lt_bench.cuh"

struct Shape { const char* what; long m, n, k; bool addend; };

// the producer: out = in * s, 16 bytes a thread a step
__global__ void produce(const uint4* in, uint4* out, long n16, float s) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n16; i += (long)gridDim.x * blockDim.x) {
    uint4 v = in[i];
    __nv_bfloat16* b = reinterpret_cast<__nv_bfloat16*>(&v);
#pragma unroll
    for (int j = 0; j < 8; ++j) b[j] = __float2bfloat16(__bfloat162float(b[j]) * s);
    out[i] = v;
  }
}

// -- CUPTI: kernels and memsets of one replay
struct Act { std::string name; unsigned long long start, end; };
static std::vector<Act> acts;
static void CUPTIAPI buf_req(uint8_t** b, size_t* size, size_t* maxr) {
  *b = static_cast<uint8_t*>(std::aligned_alloc(8, 1 << 22));
  *size = 1 << 22;
  *maxr = 0;
}
static void CUPTIAPI buf_done(CUcontext, uint32_t, uint8_t* b, size_t, size_t valid) {
  CUpti_Activity* r = nullptr;
  while (cuptiActivityGetNextRecord(b, valid, &r) == CUPTI_SUCCESS) {
    if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || r->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(r);
      std::string n = k->name ? k->name : "?";
      acts.push_back({n.substr(0, 60), k->start, k->end});
    } else if (r->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
      auto* m = reinterpret_cast<CUpti_ActivityMemset4*>(r);
      acts.push_back({"[memset " + std::to_string(m->bytes) + " B]", m->start, m->end});
    } else if (r->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
      auto* m = reinterpret_cast<CUpti_ActivityMemcpy6*>(r);
      acts.push_back({"[memcpy " + std::to_string(m->bytes) + " B]", m->start, m->end});
    }
  }
  std::free(b);
}

static std::string algo_text(const cublasLtMatmulAlgo_t& a) {
  const cublasLtMatmulAlgoConfigAttributes_t at[] = {CUBLASLT_ALGO_CONFIG_ID, CUBLASLT_ALGO_CONFIG_TILE_ID,
                                                      CUBLASLT_ALGO_CONFIG_STAGES_ID, CUBLASLT_ALGO_CONFIG_SPLITK_NUM,
                                                      CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID};
  const char* nm[] = {"id", "tile", "st", "sk", "cl"};
  std::string s;
  for (int i = 0; i < 5; ++i) {
    size_t size = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(&a, at[i], nullptr, 0, &size) != 0 || size == 0 || size > 8) continue;
    unsigned long long v = 0;
    size_t w = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(&a, at[i], &v, size, &w) != 0) continue;
    s += std::string(s.empty() ? "" : " ") + nm[i] + " " + std::to_string(v);
  }
  return s;
}

int main() {
  std::vector<Shape> shapes = {{"h2048 qkv", 1024, 6144, 2048, false},
                               {"h2048 o (+residual)", 1024, 2048, 2048, true},
                               {"h2048 down (+residual)", 1024, 2048, 8192, true},
                               {"seq2048 qkv", 4096, 6144, 2048, false},
                               {"h4096 qkv", 1024, 12288, 4096, false}};
  if (const char* only = std::getenv("LT_SHAPES")) {  // e.g. LT_SHAPES=0,3
    std::vector<Shape> s;
    for (const char* p = only; *p;) {
      s.push_back(shapes.at(std::strtol(p, const_cast<char**>(&p), 10)));
      if (*p == ',') ++p;
    }
    shapes = s;
  }
  CK(cuptiActivityRegisterCallbacks(buf_req, buf_done));
  cublasLtHandle_t h;
  CK(cublasLtCreate(&h));
  size_t ws_bytes = 32u << 20;
  void* ws;
  CK(cudaMalloc(&ws, ws_bytes));
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  auto elapsed_us = [&](auto&& body, int reps) {
    double best = 1e30;
    for (int round = 0; round < 5; ++round) {
      cudaEventRecord(e0, st);
      for (int r = 0; r < reps; ++r) body();
      cudaEventRecord(e1, st);
      cudaEventSynchronize(e1);
      float ms = 0;
      cudaEventElapsedTime(&ms, e0, e1);
      best = std::min(best, 1000.0 * ms / reps);
    }
    return best;
  };
  const int kPairs = 20;
  for (const Shape& s : shapes) {
    void *x, *a, *w, *d, *c;
    CK(cudaMalloc(&x, s.m * s.k * 2));
    CK(cudaMalloc(&a, s.m * s.k * 2));
    CK(cudaMalloc(&w, s.n * s.k * 2));
    CK(cudaMalloc(&d, s.m * s.n * 2));
    CK(cudaMalloc(&c, s.m * s.n * 2));
    fill<<<1024, 256, 0, st>>>(static_cast<__nv_bfloat16*>(x), s.m * s.k, 1);
    fill<<<1024, 256, 0, st>>>(static_cast<__nv_bfloat16*>(w), s.n * s.k, 2);
    fill<<<1024, 256, 0, st>>>(static_cast<__nv_bfloat16*>(c), s.m * s.n, 3);
    LtGemmPlan plan(h, s.m, s.n, s.k, ws_bytes, 16);
    const int found = plan.found;
    auto& r = plan.r;
    const float alpha = 1, beta = s.addend ? 1.0f : 0.0f;
    const long n16 = s.m * s.k * 2 / 16;
    auto producer = [&] { produce<<<528, 256, 0, st>>>((const uint4*)x, (uint4*)a, n16, 1.0f); };
    auto gemm = [&](int i) {
      return cublasLtMatmul(h, plan.op, &alpha, w, plan.lw, a, plan.la, &beta, s.addend ? c : d, plan.ld, d, plan.ld, &r[i].algo, ws, ws_bytes, st);
    };
    auto graph_of = [&](int i) {  // i < 0: the producers alone
      cudaGraph_t g;
      cudaGraphExec_t ge;
      CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
      for (int p = 0; p < kPairs; ++p) {
        producer();
        if (i >= 0) gemm(i);
      }
      CK(cudaStreamEndCapture(st, &g));
      CK(cudaGraphInstantiate(&ge, g, 0));
      cudaGraphDestroy(g);
      return ge;
    };
    cudaGraphExec_t base = graph_of(-1);
    const double base_us = elapsed_us([&] { cudaGraphLaunch(base, st); }, 5) / kPairs;
    std::printf("\n### %s: %ld x %ld x %ld, %d candidates; producer alone %.2f us a call (in a graph)\n\n", s.what,
                s.m, s.n, s.k, found, base_us);
    std::printf("| # | config | alone us | in context us | context - alone | traced pair: device work | idle before GEMM us |\n");
    std::printf("|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < found; ++i) {
      if (gemm(i) != 0 || cudaStreamSynchronize(st) != cudaSuccess) {
        cudaGetLastError();
        std::printf("| %d | %s | fails | | | | |\n", i, algo_text(r[i].algo).c_str());
        continue;
      }
      gemm(i);
      gemm(i);
      const double alone = elapsed_us([&] { for (int k = 0; k < 10; ++k) gemm(i); }, 1) / 10;
      cudaGraphExec_t ge = graph_of(i);
      cudaGraphLaunch(ge, st);
      const double ctx = elapsed_us([&] { cudaGraphLaunch(ge, st); }, 5) / kPairs - base_us;
      // one traced replay: the second pair of the graph (the first follows
      // whatever ran before the replay)
      cudaStreamSynchronize(st);
      acts.clear();
      CK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
      CK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET));
      CK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY));
      cudaGraphLaunch(ge, st);
      cudaStreamSynchronize(st);
      cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
      cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
      cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMSET);
      cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMCPY);
      std::sort(acts.begin(), acts.end(), [](const Act& p, const Act& q) { return p.start < q.start; });
      // the pair: from the second producer to the third
      std::vector<size_t> prod;
      for (size_t j = 0; j < acts.size(); ++j)
        if (acts[j].name.find("produce") != std::string::npos) prod.push_back(j);
      std::string work = "?";
      double idle = -1;
      if (prod.size() >= 3) {
        work.clear();
        for (size_t j = prod[1] + 1; j < prod[2]; ++j) work += (work.empty() ? "" : " + ") + acts[j].name;
        if (prod[1] + 1 < prod[2]) idle = (double(acts[prod[1] + 1].start) - double(acts[prod[1]].end)) / 1000.0;
      }
      std::printf("| %d | %s | %.2f | %.2f | %+.2f | %s | %.2f |\n", i, algo_text(r[i].algo).c_str(), alone, ctx,
                  ctx - alone, work.c_str(), idle);
      cudaGraphExecDestroy(ge);
      if (std::getenv("LT_HEX")) {  // the candidate as fusegate's GEMM tables name it (lt_algo_hex)
        unsigned long long wd[8];
        std::memcpy(wd, &r[i].algo, sizeof(wd));
        std::printf("hex %d ", i);
        for (unsigned long long v : wd) std::printf("%016llx", v);
        std::printf("\n");
      }
    }
    cudaGraphExecDestroy(base);
    for (void* p : {x, a, w, d, c}) cudaFree(p);
  }
  return 0;
}
