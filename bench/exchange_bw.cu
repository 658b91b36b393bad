// The one-shot exchange of the allreduce_sum fast path, timed alone on two
// GPUs of one host, against what NVLink moves: how far the block's last
// all-reduce (32-34 us for 8 MiB a rank in the h4096 forward at world size
// 2) is from the link, with no rank skew and no GEMM around it.
//
// Two GPUs in one process, peer access both ways (the forward maps the same
// memory with CUDA IPC; the stores are the same posted NVLink stores). Per
// size n (bf16 elements a rank), each timed as a CUDA graph of 20 calls on
// each GPU, the two graphs launched together; 30 samples, each one launch of
// both between events on GPU 0 (the exchange makes GPU 0 wait for GPU 1;
// the other rows time GPU 0's side), after EXBW_WARMUP_MS (default 1000) of
// replays; the median sample / 20:
// - exchange: kernels/fastpaths/cuda/allreduce_sum.cu itself, included below
//   (the fast path's runtime compiles the same file through NVRTC), with the
//   runtime's grid (blocks of 512 threads, one a 512 chunks of 8, every
//   block resident), and the result checked against the f32 sum rounded
//   once, -0.0 taken as +0.0 (every 97th element is -0.0, the sentinel's
//   bits, on one rank, the other, both or neither, so the writers' escape
//   of it is exercised: a writer that sent it as it is would leave its
//   reader waiting, a sum of two that kept the sign would differ);
// - push: each GPU stores its n bf16 into the other's memory, 16 bytes a
//   thread a store, the exchange's grid (the link's write rate both ways at
//   once);
// - pull: each GPU loads the other's n bf16 and stores them locally;
// - copy engine: cudaMemcpyPeerAsync of n bf16 each way at once (enqueued
//   call by call: a peer copy does not capture into a graph).
// Build and run (two GPUs):
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o exchange_bw bench/exchange_bw.cu
//   ./exchange_bw                     # 1, 4 and 8 MiB a rank
//   EXBW_SIZES="4194304" EXBW_BLOCKS_PER_SM=1 EXBW_THREADS=1024 ./exchange_bw
// Exit status: 0 every check passed, 1 a check failed, 2 a CUDA call failed or
// fewer than two GPUs with peer access.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CK(x)                                                                              \
  do {                                                                                     \
    cudaError_t e_ = (x);                                                                  \
    if (e_ != cudaSuccess) {                                                               \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(2);                                                                        \
    }                                                                                      \
  } while (0)

// The part of the compiler's CUDA prelude (fusion/codegen/cuda_printer.cpp)
// that allreduce_sum.cu uses, written for this bench.
template <typename S> struct FgChunk;
template <> struct FgChunk<uint16_t> {
  uint4 w;
  __device__ __forceinline__ uint16_t operator[](int v) const {
    const unsigned u = (&w.x)[v >> 1];
    return static_cast<uint16_t>((v & 1) ? (u >> 16) : (u & 0xffffu));
  }
};
__device__ __forceinline__ bool fg_aligned16(const void* p) {
  return (reinterpret_cast<unsigned long long>(p) & 15ull) == 0;
}
__device__ __forceinline__ FgChunk<uint16_t> fg_load_chunk(const uint16_t* p) {
  FgChunk<uint16_t> c;
  c.w = *reinterpret_cast<const uint4*>(p);  // the bench's buffers are aligned
  return c;
}
__device__ __forceinline__ float fg_bf16_to_float(uint16_t b) { return __uint_as_float(static_cast<unsigned>(b) << 16); }
struct FgOutChunk { float s[8]; };
__device__ __forceinline__ unsigned fg_pack_bf16x2(float lo, float hi) {
  unsigned r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
__device__ __forceinline__ void fg_store_chunk_bf16(uint16_t* p, const FgOutChunk& c) {
  *reinterpret_cast<uint4*>(p) = make_uint4(fg_pack_bf16x2(c.s[0], c.s[1]), fg_pack_bf16x2(c.s[2], c.s[3]),
                                            fg_pack_bf16x2(c.s[4], c.s[5]), fg_pack_bf16x2(c.s[6], c.s[7]));
}

#include "../kernels/fastpaths/cuda/allreduce_sum.cu"

__global__ void push(const uint4* __restrict__ src, uint4* __restrict__ peer, int64_t chunks) {
  for (int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; c < chunks;
       c += static_cast<int64_t>(gridDim.x) * blockDim.x)
    peer[c] = src[c];
}
__global__ void pull(const uint4* __restrict__ peer, uint4* __restrict__ dst, int64_t chunks) {
  for (int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; c < chunks;
       c += static_cast<int64_t>(gridDim.x) * blockDim.x)
    dst[c] = peer[c];
}
__global__ void fill(uint16_t* p, int64_t n, uint16_t v) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    p[i] = v;
}
__global__ void fill_pattern(uint16_t* p, int64_t n, int rank) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float v = static_cast<float>(static_cast<int>((i * 7 + rank * 13) % 61) - 30) / 16.f;
    // every 97th element in turn: -0.0 on both ranks, on rank 0 only, on
    // rank 1 only, on neither (a sum of -0.0 and -0.0 is +0.0 here)
    const int64_t turn = (i / 97) % 4;
    const bool negative_zero = i % 97 == 0 && (turn == 0 || turn == 1 + rank);
    p[i] = negative_zero ? uint16_t{0x8000} : static_cast<uint16_t>(__float_as_uint(v) >> 16);  // exact in bf16
  }
}

static int env_int(const char* name, int dflt, int lo, int hi) {
  const char* v = std::getenv(name);
  if (!v) return dflt;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (*v == '\0' || *end != '\0' || x < lo || x > hi) {
    std::fprintf(stderr, "%s=%s: an integer %d..%d\n", name, v, lo, hi);
    std::exit(2);
  }
  return static_cast<int>(x);
}

struct Side {
  cudaStream_t s = nullptr;
  cudaGraphExec_t g = nullptr;
};

// Each GPU's graph of `calls` launches of what enqueue() puts on its stream,
// the two launched together for warmup_ms, then 30 timed replays: us a call.
// graphs == false: the calls enqueued each time instead (a peer copy does
// not capture).
template <typename Enqueue>
static double time_pair(Side (&side)[2], int calls, int warmup_ms, Enqueue enqueue, bool graphs = true) {
  for (int r = 0; graphs && r < 2; ++r) {
    CK(cudaSetDevice(r));
    cudaGraph_t graph;
    CK(cudaStreamBeginCapture(side[r].s, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < calls; ++i) enqueue(r, side[r].s);
    CK(cudaStreamEndCapture(side[r].s, &graph));
    CK(cudaGraphInstantiate(&side[r].g, graph, 0));
    CK(cudaGraphDestroy(graph));
  }
  auto replay = [&] {
    for (int r = 0; r < 2; ++r) {
      if (graphs) {
        CK(cudaGraphLaunch(side[r].g, side[r].s));
      } else {
        CK(cudaSetDevice(r));
        for (int i = 0; i < calls; ++i) enqueue(r, side[r].s);
      }
    }
    CK(cudaSetDevice(0));
  };
  CK(cudaSetDevice(0));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  // warm-up paced by the replays themselves, after one that uploads the
  // graphs (and loads the kernels): paced by that one, the warm-up fell short
  replay();
  for (int r = 0; r < 2; ++r) CK(cudaStreamSynchronize(side[r].s));
  CK(cudaEventRecord(a, side[0].s));
  replay();
  CK(cudaEventRecord(b, side[0].s));
  CK(cudaEventSynchronize(b));
  float one = 0;
  CK(cudaEventElapsedTime(&one, a, b));
  const int reps = std::max(1, static_cast<int>(warmup_ms / std::max(one, 0.01f)));
  for (int i = 0; i < reps; ++i) replay();
  for (int r = 0; r < 2; ++r) CK(cudaStreamSynchronize(side[r].s));
  std::vector<float> t;
  for (int i = 0; i < 30; ++i) {
    CK(cudaEventRecord(a, side[0].s));
    replay();
    CK(cudaEventRecord(b, side[0].s));
    CK(cudaEventSynchronize(b));
    for (int r = 0; r < 2; ++r) CK(cudaStreamSynchronize(side[r].s));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms);
  }
  std::sort(t.begin(), t.end());
  for (int r = 0; graphs && r < 2; ++r) {
    CK(cudaSetDevice(r));
    CK(cudaGraphExecDestroy(side[r].g));
  }
  CK(cudaSetDevice(0));
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  return 1000.0 * t[t.size() / 2] / calls;
}

int main() {
  int count = 0;
  CK(cudaGetDeviceCount(&count));
  int can01 = 0, can10 = 0;
  if (count >= 2) {
    CK(cudaDeviceCanAccessPeer(&can01, 0, 1));
    CK(cudaDeviceCanAccessPeer(&can10, 1, 0));
  }
  if (count < 2 || !can01 || !can10) {
    std::fprintf(stderr, "exchange_bw: needs two GPUs with peer access (found %d)\n", count);
    return 2;
  }
  const int threads = env_int("EXBW_THREADS", 512, 32, 1024);
  const int warmup_ms = env_int("EXBW_WARMUP_MS", 1000, 0, 60000);
  std::vector<long long> sizes = {524288, 2097152, 4194304};  // 1, 4, 8 MiB of bf16
  if (const char* s = std::getenv("EXBW_SIZES")) {
    sizes.clear();
    for (const char* p = s; *p;) {
      char* end = nullptr;
      const long long v = std::strtoll(p, &end, 10);
      if (end == p || v <= 0 || v % 8 != 0) {
        std::fprintf(stderr, "EXBW_SIZES=%s: element counts, multiples of 8, separated by ','\n", s);
        return 2;
      }
      sizes.push_back(v);
      p = *end == ',' ? end + 1 : end;
    }
  }
  Side side[2];
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  int per_sm = 0;
  for (int r = 0; r < 2; ++r) {
    CK(cudaSetDevice(r));
    CK(cudaDeviceEnablePeerAccess(1 - r, 0));
    CK(cudaStreamCreateWithFlags(&side[r].s, cudaStreamNonBlocking));
  }
  CK(cudaSetDevice(0));
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fastpath_allreduce_sum, threads, 0));
  per_sm = std::min(per_sm, env_int("EXBW_BLOCKS_PER_SM", per_sm, 1, 64));
  std::printf("%s x2, %d SMs; exchange blocks of %d threads, at most %d a SM\n", prop.name, prop.multiProcessorCount,
              threads, per_sm);
  std::printf("| MiB a rank | grid | exchange us | its GB/s a direction | push us (GB/s) | pull us (GB/s) | copy engine us (GB/s) |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  int failed = 0;
  for (long long n : sizes) {
    const size_t bytes = static_cast<size_t>(n) * 2;
    // the runtime's grid (CudaFastPaths::allreduce_sum): a block a 512
    // chunks of 8 elements, no more than are resident at once, at most the
    // region's 1024 counters
    const long long chunks8 = n / 8;
    const int blocks = static_cast<int>(std::min<long long>(
        {(chunks8 + threads - 1) / threads, static_cast<long long>(per_sm) * prop.multiProcessorCount, 1024}));
    const size_t region_bytes = 4096 + 2 * 2 * bytes;  // counters, 2 epochs x 2 sending ranks
    uint16_t *partial[2], *out[2], *scratch[2];
    char* region[2];
    for (int r = 0; r < 2; ++r) {
      CK(cudaSetDevice(r));
      CK(cudaMalloc(&partial[r], bytes));
      CK(cudaMalloc(&out[r], bytes));
      CK(cudaMalloc(&scratch[r], bytes));
      CK(cudaMalloc(&region[r], region_bytes));
      CK(cudaMemset(region[r], 0, 4096));
      fill<<<1024, 256>>>(reinterpret_cast<uint16_t*>(region[r] + 4096), static_cast<int64_t>(4 * n), 0x8000);
      fill_pattern<<<1024, 256>>>(partial[r], n, r);
      CK(cudaGetLastError());
      CK(cudaDeviceSynchronize());
    }
    FgRegions regs{};
    regs.p[0] = region[0];
    regs.p[1] = region[1];
    const double ex = time_pair(side, 20, warmup_ms, [&](int r, cudaStream_t s) {
      fastpath_allreduce_sum<<<blocks, threads, 0, s>>>(partial[r], out[r], regs, static_cast<int64_t>(n), 2, r);
    });
    // the sum, as the fast path defines it: f32 sum of both partials (-0.0
    // as +0.0), rounded once
    std::vector<uint16_t> p0(n), p1(n), o0(n), o1(n);
    CK(cudaMemcpy(p0.data(), partial[0], bytes, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(p1.data(), partial[1], bytes, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(o0.data(), out[0], bytes, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(o1.data(), out[1], bytes, cudaMemcpyDeviceToHost));
    long long bad = 0;
    for (long long i = 0; i < n; ++i) {
      float a, b;
      uint32_t ua = p0[i] == 0x8000 ? 0u : static_cast<uint32_t>(p0[i]) << 16;
      uint32_t ub = p1[i] == 0x8000 ? 0u : static_cast<uint32_t>(p1[i]) << 16;
      std::memcpy(&a, &ua, 4);
      std::memcpy(&b, &ub, 4);
      const float s = a + b;  // exact: both are multiples of 1/16 under 2
      uint32_t us;
      std::memcpy(&us, &s, 4);
      const uint16_t want = static_cast<uint16_t>(us >> 16);
      if (o0[i] != want || o1[i] != want) ++bad;
    }
    if (bad) {
      std::fprintf(stderr, "exchange at %lld elements: %lld outputs differ from the sum\n", n, bad);
      failed = 1;
    }
    const int64_t chunks = n / 8;
    const double pu = time_pair(side, 20, warmup_ms, [&](int r, cudaStream_t s) {
      push<<<blocks, threads, 0, s>>>(reinterpret_cast<const uint4*>(partial[r]), reinterpret_cast<uint4*>(scratch[1 - r]),
                                     chunks);
    });
    const double pl = time_pair(side, 20, warmup_ms, [&](int r, cudaStream_t s) {
      pull<<<blocks, threads, 0, s>>>(reinterpret_cast<const uint4*>(partial[1 - r]), reinterpret_cast<uint4*>(scratch[r]),
                                     chunks);
    });
    const double ce = time_pair(side, 20, warmup_ms, [&](int r, cudaStream_t s) {
      CK(cudaMemcpyPeerAsync(scratch[1 - r], 1 - r, partial[r], r, bytes, s));
    }, false);
    auto gbps = [&](double us) { return bytes / (us * 1e-6) / 1e9; };
    std::printf("| %.0f | %d x %d | %.1f | %.0f | %.1f (%.0f) | %.1f (%.0f) | %.1f (%.0f) |\n", bytes / 1048576.0, blocks,
                threads, ex, gbps(ex), pu, gbps(pu), pl, gbps(pl), ce, gbps(ce));
    for (int r = 0; r < 2; ++r) {
      CK(cudaSetDevice(r));
      CK(cudaFree(partial[r]));
      CK(cudaFree(out[r]));
      CK(cudaFree(scratch[r]));
      CK(cudaFree(region[r]));
    }
  }
  std::printf(failed ? "FAIL\n" : "PASS\n");
  return failed;
}
