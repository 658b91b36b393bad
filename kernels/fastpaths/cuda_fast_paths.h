// The cuda fast paths' runtime, shared by cuda_runtime.cpp (the dispatch,
// the row kernels and NVRTC modules), cuda_hopper.cpp (gate_up_swiglu and
// causal_attention: TMA tensor maps, clusters, interleaved weights) and
// cuda_exchange.cpp (the one-shot exchange: regions mapped with CUDA IPC).
// Included by those files alone; kernels/fastpaths/runtime.h is the
// interface.
#pragma once
#include <ATen/cuda/CUDAContext.h>
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdio>
#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "fusion/codegen/cuda_printer.h"
#include "fusion/errors.h"
#include "kernels/collectives/collectives.h"
#include "fusion/fastpaths/catalog.h"
#include "kernels/fastpaths/sources.h"
#include "kernels/fastpaths/runtime.h"

namespace fg::cuda_fast_paths {

constexpr int kMaxRanks = 8;        // FgRegions in allreduce_residual_rmsnorm.cu
constexpr int kMaxBlocks = 1024;    // counters: 4096 bytes
constexpr size_t kDataOffset = 4096;  // FG_DATA_AT
constexpr unsigned short kEmpty = 0x8000;  // bf16 -0.0: no value has arrived (the kernel's FG_EMPTY)
// gate_up_swiglu.cu's tiles: 128 rows of h, 2 x tile_n rows of the
// interleaved weights (tile_n = 128 or 112 output columns, the node's
// attr), 384 threads; shared memory for 128 columns (112 need less): 4
// stages of 48 KiB + 32 KiB of output staging + 128 bytes of barriers + 1 KiB
// of row scales (the rmsnorm variant's) + 1 KiB of alignment slack
constexpr int kSwigluTileM = 128;
constexpr unsigned kSwigluThreads = 384;
constexpr int kSwigluSmem = 1024 + 4 * (16384 + 32768) + 2 * 16384 + 128 + 1024;
// causal_attention.cu: 128-row q tiles and key tiles of head dim 128, 384
// threads, Q 32 KiB + two stages of K and V (32 KiB each) + 72 bytes of
// barriers (nine) + 1 KiB of alignment slack
constexpr int kAttnRows = 128;
constexpr int kAttnHeadDim = 128;
constexpr unsigned kAttnThreads = 384;
constexpr int kAttnSmem = 1024 + 5 * 32768 + 72;

inline void check_cu(CUresult r, const std::string& what) {
  if (r == CUDA_SUCCESS) return;
  const char* msg = nullptr;
  cuGetErrorString(r, &msg);
  throw std::runtime_error("fast path: CUDA driver: " + what + ": " + (msg ? msg : "unknown error"));
}

inline void check_rt(cudaError_t e, const std::string& what) {
  if (e != cudaSuccess) throw std::runtime_error("fast path: CUDA: " + what + ": " + cudaGetErrorString(e));
}

struct FgRegions {
  void* p[kMaxRanks];
};

class CudaFastPaths : public DeviceFastPaths {
 public:
  CudaFastPaths(Collectives* coll, int rank, int world) : coll_(coll), rank_(rank), world_(world) {
    int dev = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms_, cudaDevAttrMultiProcessorCount, dev);
    cudaDeviceGetAttribute(&cc_major_, cudaDevAttrComputeCapabilityMajor, dev);
    cudaDeviceGetAttribute(&cc_minor_, cudaDevAttrComputeCapabilityMinor, dev);
  }
  ~CudaFastPaths() override {
    // no kernel may still read a region that goes away here (the worker's
    // barrier after the last forward keeps the peers' reads done too)
    if (!regions_.empty()) cudaDeviceSynchronize();
    for (auto& [shape, r] : regions_) {
      for (int i = 0; i < world_; ++i)
        if (i != rank_ && r.p[i]) cudaIpcCloseMemHandle(r.p[i]);
      if (r.p[rank_]) cudaFree(r.p[rank_]);
    }
    for (auto& [name, m] : modules_) cuModuleUnload(m);
  }

  void run(const Node& n, const std::vector<at::Tensor>& in, at::Tensor& out) override;

 private:
  // gate_up_swiglu and rmsnorm_gate_up_swiglu
  // (kernels/fastpaths/cuda/gate_up_swiglu.cu): the weights interleaved into
  // one buffer per weight pair and tile width (with the norm's gamma folded
  // in: per weight pair and gamma), filled again when one of them changes,
  // three TMA tensor maps, a persistent grid of single CTAs or of CTA pairs
  // (M a multiple of 256 and a pair fits), launched with its cluster shape
  // and 226 KiB of dynamic shared memory. The tile width is the node's
  // tile_n (the compiler's choice, swiglu_tile_n; the shape class the proof
  // covers names it). `norm`: the inputs are x, gamma, Wg, Wu and the
  // kernel sums x's rows (attrs eps, divisor).
  void gate_up_swiglu(const Node& n, const std::vector<at::Tensor>& in, at::Tensor& out, cudaStream_t stream,
                      bool norm);

  struct SwigluLaunch {
    CUfunction f = nullptr;
    CUtensorMap maps[3];
    unsigned grid = 0;
    int cm = 1;  // CTAs a cluster
  };
  static CUlaunchConfig swiglu_config(unsigned grid, cudaStream_t stream, CUlaunchAttribute* cluster);
  SwigluLaunch swiglu_launch(const std::string& name, const at::Tensor& h, const at::Tensor& w2, at::Tensor& out,
                             int64_t M, int64_t N, int64_t K, int tile_n, bool pair, const std::string& what);

  // The sm_90a kernels run on sm_90 only (`uses`: what they need of it).
  void require_hopper(const std::string& what, const char* uses) const;
  void allow_smem(CUfunction f, int bytes);

  // causal_attention (kernels/fastpaths/cuda/causal_attention.cu): q [B, H,
  // S, 128], k and v [B, Hk, S, 128] bf16 in any strides whose last is 1 and
  // whose others are multiples of 8 elements (the views of one qkv
  // projection; else a contiguous copy), out [B, S, H, 128] contiguous. Three
  // 4-D tensor maps per set of addresses and strides, a grid of (B * H, q
  // tiles).
  void causal_attention(const std::vector<at::Tensor>& in, at::Tensor& out, cudaStream_t stream);

  struct AttnLaunch {
    CUfunction f = nullptr;
    CUtensorMap maps[3];
  };

  // A 4-D map of a bf16 [B, H, S, D] view, dims (d, s, head, batch), boxes of
  // 64 d x 128 s, 128-byte swizzle; rows past S read as zeros.
  static CUtensorMap head_map(const at::Tensor& x);

  // A 2-D bf16 row-major [rows, cols] tensor map, boxes of box_rows x
  // box_cols, 128-byte swizzle (or `swizzle`); out-of-bounds reads fill zeros.
  static CUtensorMap tensor_map(void* ptr, uint64_t rows, uint64_t cols, unsigned box_rows, unsigned box_cols,
                                CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_128B);

  // W2 [2N, K]: block b of 2 tile_n rows is Wg rows tile_n b .. tile_n (b +
  // 1) - 1, then Wu's same rows; with a norm weight gamma [K], each row
  // times gamma, rounded to bf16 once (rmsnorm_gate_up_swiglu). One buffer per pair of weight
  // tensors and gamma (their storage, sizes and strides), made on first use
  // outside CUDA graph capture (the forward before capture makes it) and
  // kept, at the same address, while the process lives: a model holds a
  // bounded set of MLP weights. When a weight's version moves (an in-place
  // update) the buffer is filled again in place, in stream order, on the
  // next eager run; a CUDA graph captured earlier replays with the contents
  // it last saw, as the stacked weights of batched GEMMs do: under CUDA
  // graphs weights are taken as frozen.
  const at::Tensor& interleaved(const at::Tensor& wg, const at::Tensor& wu, const at::Tensor* gamma, int tile_n,
                                cudaStream_t stream);
  CUfunction function(const std::string& name, const std::string& fn);

  // The grid of a one-shot exchange with other ranks: at most `want`
  // blocks, and no more than the device holds at once (each block waits on
  // the same block of the other ranks) nor than the region has launch
  // counters for; at most kMaxRanks ranks.
  long long resident_blocks(CUfunction f, const std::string& fn, unsigned threads, long long want);

  // allreduce_sum.cu and allreduce_residual.cu (`residual`: the second
  // input is added to the sum): a block of 512 threads owns a contiguous
  // range of chunks of 8 elements; every block resident at once (each waits
  // on the same block of the other ranks), at most kMaxBlocks
  void allreduce_sum(CUfunction f, const std::string& fn, const std::vector<at::Tensor>& in, at::Tensor& out,
                     cudaStream_t stream, bool residual);

  // Every rank's region for one call shape, mapped here (made on first use:
  // every rank reaches it at the same launch of the same graph). Keyed by
  // rows, width and grid: block b must own the same rows at every epoch of a
  // region (the double buffering rests on it), and every rank must run the
  // same grid (a block waits on the same block of the others), which the
  // exchange checks. `tag` keeps two fast paths' regions of one shape apart.
  FgRegions region(long long rows, long long H, long long blocks, unsigned threads, cudaStream_t stream,
                   const std::string& tag = "");

  struct Interleaved {
    std::vector<at::Tensor> weights;
    at::Tensor w2;
    std::vector<int64_t> versions;
  };

  Collectives* coll_;
  int rank_, world_, sms_ = 1, cc_major_ = 0, cc_minor_ = 0;
  std::map<std::string, CUmodule> modules_;
  std::map<std::string, FgRegions> regions_;
  std::map<std::vector<int64_t>, Interleaved> interleaved_;
  std::map<std::vector<int64_t>, SwigluLaunch> swiglu_launches_;
  std::map<std::vector<int64_t>, AttnLaunch> attn_launches_;
  std::set<CUfunction> smem_set_;
};

}  // namespace fg::cuda_fast_paths
