// The fast paths on cuda: each fast path's source (the CUDA prelude and
// kernels/fastpaths/cuda/NAME.cu) compiled by NVRTC once per process and
// launched through the driver API on LibTorch's current stream (so CUDA
// graph capture and the order with NCCL and cuBLAS hold). The one-shot
// all-reduce maps every rank's region into each rank with CUDA IPC: each
// rank allocates and zeroes its region, the handles go through the c10d
// store, each rank opens the others' (peer access enabled lazily).
#include <ATen/cuda/CUDAContext.h>
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdio>
#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include "fusion/codegen/cuda_printer.h"
#include "fusion/errors.h"
#include "kernels/collectives/collectives.h"
#include "fusion/fastpaths/catalog.h"
#include "kernels/fastpaths/sources.h"
#include "kernels/fastpaths/runtime.h"

namespace fg {

namespace {

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

void check_cu(CUresult r, const std::string& what) {
  if (r == CUDA_SUCCESS) return;
  const char* msg = nullptr;
  cuGetErrorString(r, &msg);
  throw std::runtime_error("fast path: CUDA driver: " + what + ": " + (msg ? msg : "unknown error"));
}

void check_rt(cudaError_t e, const std::string& what) {
  if (e != cudaSuccess) throw std::runtime_error("fast path: CUDA: " + what + ": " + cudaGetErrorString(e));
}

std::string to_hex(const void* p, size_t n) {
  std::string s;
  char b[3];
  for (size_t i = 0; i < n; ++i) {
    std::snprintf(b, sizeof b, "%02x", static_cast<const unsigned char*>(p)[i]);
    s += b;
  }
  return s;
}

void from_hex(const std::string& s, void* p, size_t n) {
  FG_CHECK(s.size() == 2 * n, "an IPC handle of the wrong size came through the store");
  for (size_t i = 0; i < n; ++i)
    static_cast<unsigned char*>(p)[i] = static_cast<unsigned char>(std::stoi(s.substr(2 * i, 2), nullptr, 16));
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

  void run(const Node& n, const std::vector<at::Tensor>& in, at::Tensor& out) override {
    const std::string name = attr_str_or(n.attrs, "name", "");
    const std::string stage = attr_str_or(n.attrs, "stage", "");
    const std::string fn = "fastpath_" + name + (stage.empty() ? "" : "_" + stage);
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    FG_CHECK(out.is_contiguous() && out.is_cuda(), "fast path " + fn + ": its output is not a contiguous device tensor");
    if (name == "gate_up_swiglu" || name == "rmsnorm_gate_up_swiglu") {
      // its inputs in any layout: the weights are copied into the
      // interleaved buffer, h is made contiguous (a graph input may come in
      // another memory order; the matcher does not see layouts)
      gate_up_swiglu(n, in, out, stream, name == "rmsnorm_gate_up_swiglu");
      return;
    }
    if (name == "causal_attention") {
      causal_attention(in, out, stream);
      return;
    }
    for (size_t i = 0; i < in.size(); ++i)
      FG_CHECK(in[i].is_contiguous() && in[i].is_cuda(), "fast path " + fn + ": input " + std::to_string(i) +
                                                             " is not a contiguous device tensor");
    CUfunction f = function(name, fn);
    if (name == "allreduce_sum" || name == "allreduce_residual") {
      allreduce_sum(f, fn, in, out, stream, name == "allreduce_residual");
      return;
    }
    if (name == "allreduce_residual_rmsnorm") {
      long long H = attr_int(n.attrs, "hidden", n.op);
      FG_CHECK(in.size() == 3 && H > 0 && in[0].numel() % H == 0 && in[1].numel() == in[0].numel() &&
                   in[2].numel() == H && out.numel() == 2 * in[0].numel(),
               "fast path " + fn + ": its inputs and output do not have the shapes it was matched with");
      for (const at::Tensor* t : std::initializer_list<const at::Tensor*>{&in[0], &in[1], &in[2], &out})
        FG_CHECK(t->scalar_type() == at::kBFloat16, "fast path " + fn + ": a tensor that is not bf16");
      long long rows = in[0].numel() / H;
      if (rows == 0) return;
      // a thread a chunk of 8 elements: as many threads as a generated row
      // kernel of this width (cuda_row_threads: at most two chunks a thread
      // up to 1024 threads, the same occupancy and work per thread), for
      // the kernel's entry for up to 2 chunks; past 16384 wide, 1024 threads
      // and the entry for up to 4 (`_wide`). The max() keeps the count
      // right whatever cuda_row_threads gives.
      const long long chunks = H / 8;
      if (H % 8 != 0 || chunks > 4 * 1024)
        throw std::runtime_error("fast path " + name + ": hidden size " + std::to_string(H) +
                                 " is not a multiple of 8 up to 32768");
      const bool wide = (chunks + 1) / 2 > 1024;
      const long long per_thread = wide ? 4 : 2;  // the entry's most chunks a thread
      const unsigned threads =
          static_cast<unsigned>(std::max<long long>(cuda_row_threads(H), (chunks + per_thread - 1) / per_thread));
      if (wide) f = function(name, fn + "_wide");
      int max_threads = 0;
      check_cu(cuFuncGetAttribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f), "kernel limits");
      if (static_cast<int>(threads) > max_threads)
        throw std::runtime_error("fast path " + fn + ": hidden size " + std::to_string(H) + " needs " +
                                 std::to_string(threads) + " threads a block; the compiled kernel allows " +
                                 std::to_string(max_threads));
      // with other ranks, every block must be resident at once (each waits
      // on the same block of the others): no more than the device holds
      long long blocks = rows;
      FgRegions regs{};
      if (world_ > 1) {
        blocks = resident_blocks(f, fn, threads, rows);
        regs = region(rows, H, blocks, threads, stream);
        coll_->record("one_shot_all_reduce", in[0]);
      }
      const void* partial = in[0].data_ptr();
      const void* res = in[1].data_ptr();
      const void* w = in[2].data_ptr();
      void* o = out.data_ptr();
      float eps = static_cast<float>(attr_float(n.attrs, "eps", n.op));
      int world = world_, rank = rank_;
      void* params[] = {&partial, &res, &w, &o, &regs, &rows, &H, &world, &rank, &eps};
      check_cu(cuLaunchKernel(f, static_cast<unsigned>(blocks), 1, 1, threads, 1, 1, 0, stream, params, nullptr),
               "launch " + fn);
      return;
    }
    long long C = in[0].size(-1), rows = in[0].numel() / C;
    long long qs = attr_int(n.attrs, "q_start", n.op), ks = attr_int(n.attrs, "k_start", n.op),
              L = attr_int(n.attrs, "width", n.op);
    float eps = static_cast<float>(attr_float_or(n.attrs, "eps", 0)),
          div = static_cast<float>(attr_float_or(n.attrs, "divisor", 1));
    // half the threads for q, half for k; a thread a chunk of 8, up to 4
    const long long chunks = L / 8;
    if (L % 8 != 0 || chunks > 4 * 512)
      throw std::runtime_error("fast path " + name + ": width " + std::to_string(L) + " is not a multiple of 8 up to 16384");
    const unsigned threads =
        2 * static_cast<unsigned>(std::min<long long>(512, std::max<long long>(cuda_row_threads(L), (chunks + 3) / 4)));
    const void* qkv = in[0].data_ptr();
    void* o = out.data_ptr();
    if (fn == "fastpath_qkv_rmsnorm_tp_sumsq") {
      void* params[] = {&qkv, &o, &C, &qs, &ks, &L};
      check_cu(cuLaunchKernel(f, static_cast<unsigned>(rows), 1, 1, threads, 1, 1, 0, stream, params, nullptr),
               "launch " + fn);
    } else if (fn == "fastpath_qkv_rmsnorm_tp_apply") {
      const void* total = in[1].data_ptr();
      const void* qw = in[2].data_ptr();
      const void* kw = in[3].data_ptr();
      void* params[] = {&qkv, &total, &qw, &kw, &o, &C, &qs, &ks, &L, &eps, &div};
      check_cu(cuLaunchKernel(f, static_cast<unsigned>(rows), 1, 1, threads, 1, 1, 0, stream, params, nullptr),
               "launch " + fn);
    } else {
      const void* qw = in[1].data_ptr();
      const void* kw = in[2].data_ptr();
      void* params[] = {&qkv, &qw, &kw, &o, &C, &qs, &ks, &L, &eps, &div};
      check_cu(cuLaunchKernel(f, static_cast<unsigned>(rows), 1, 1, threads, 1, 1, 0, stream, params, nullptr),
               "launch " + fn);
    }
  }

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
                      bool norm) {
    const std::string name = norm ? "rmsnorm_gate_up_swiglu" : "gate_up_swiglu";
    const std::string what = "fast path " + name;
    FG_CHECK(in.size() == (norm ? 4u : 3u),
             what + (norm ? ": takes x, the norm's weight, the gate weight and the up weight"
                          : ": takes h, the gate weight and the up weight"));
    for (const at::Tensor& t : in) FG_CHECK(t.is_cuda(), what + ": an input that is not a device tensor");
    const at::Tensor h = in[0].contiguous();
    const size_t w0 = norm ? 2 : 1;
    const at::Tensor &wg = in[w0], &wu = in[w0 + 1];
    const at::Tensor* gamma = norm ? &in[1] : nullptr;
    for (const at::Tensor* t : std::initializer_list<const at::Tensor*>{&h, &wg, &wu, &out})
      FG_CHECK(t->scalar_type() == at::kBFloat16, what + ": a tensor that is not bf16");
    const int64_t K = h.size(-1), N = wg.size(0), M = h.numel() / std::max<int64_t>(K, 1);
    FG_CHECK(wg.dim() == 2 && wg.sizes() == wu.sizes() && wg.size(1) == K && out.size(-1) == N && out.numel() == M * N,
             what + ": its inputs and output do not have the shapes it was matched with");
    float eps = 0, inv_div = 0;
    if (norm) {
      FG_CHECK(gamma->scalar_type() == at::kBFloat16 && gamma->dim() == 1 && gamma->size(0) == K,
               what + ": the norm's weight is not bf16 [K]");
      eps = static_cast<float>(attr_float(n.attrs, "eps", n.op));
      const double div = attr_float(n.attrs, "divisor", n.op);
      FG_CHECK(div > 0, what + ": a norm divisor that is not positive");
      inv_div = static_cast<float>(1.0 / div);
    }
    const long long tile_n = attr_int(n.attrs, "tile_n", n.op);
    FG_CHECK(tile_n == 128 || tile_n == 112,
             what + ": tile_n " + std::to_string(tile_n) + " is not a tile width of its kernel (128 or 112)");
    if (N % 128 != 0 || N % tile_n != 0 || K % 8 != 0)
      throw std::runtime_error(what + ": N " + std::to_string(N) + " must be a multiple of 128 and of its tile_n " +
                               std::to_string(tile_n) + ", and K " + std::to_string(K) + " of 8");
    if (M == 0) return;
    if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX)
      throw std::runtime_error(what + ": a dimension past 2^31");
    require_hopper(what, "wgmma, TMA multicast");
    for (const at::Tensor* t : std::initializer_list<const at::Tensor*>{&h, &out})
      FG_CHECK((reinterpret_cast<uintptr_t>(t->data_ptr()) & 15) == 0, what + ": a tensor not 16-byte aligned (TMA)");
    const int tn = static_cast<int>(tile_n);
    const at::Tensor& w2 = interleaved(wg, wu, gamma, tn, stream);
    const bool pair = M % (2 * kSwigluTileM) == 0;
    // the launch (tensor maps, grid) is made once per set of addresses and
    // shape: encoding three maps and asking the occupancy of a cluster cost
    // more host time than the rest of a launch
    const std::vector<int64_t> key = {reinterpret_cast<int64_t>(h.data_ptr()), reinterpret_cast<int64_t>(w2.data_ptr()),
                                      reinterpret_cast<int64_t>(out.data_ptr()), M, N, K, norm ? 1 : 0, tile_n};
    auto it = swiglu_launches_.find(key);
    if (it == swiglu_launches_.end()) {
      if (swiglu_launches_.size() >= 4096) swiglu_launches_.clear();
      it = swiglu_launches_.emplace(key, swiglu_launch(name, h, w2, out, M, N, K, tn, pair, what)).first;
    }
    SwigluLaunch& l = it->second;
    CUlaunchAttribute attr{};
    attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = static_cast<unsigned>(l.cm);
    attr.value.clusterDim.y = 1;
    attr.value.clusterDim.z = 1;
    CUlaunchConfig cfg = swiglu_config(l.grid, stream, &attr);
    int Mi = static_cast<int>(M), Ni = static_cast<int>(N), Ki = static_cast<int>(K);
    void* params[] = {&l.maps[0], &l.maps[1], &l.maps[2], &Mi, &Ni, &Ki, &eps, &inv_div};
    check_cu(cuLaunchKernelEx(&cfg, l.f, params, nullptr), "launch " + name);
  }

  struct SwigluLaunch {
    CUfunction f = nullptr;
    CUtensorMap maps[3];
    unsigned grid = 0;
    int cm = 1;  // CTAs a cluster
  };

  static CUlaunchConfig swiglu_config(unsigned grid, cudaStream_t stream, CUlaunchAttribute* cluster) {
    CUlaunchConfig cfg{};
    cfg.gridDimX = grid;
    cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = kSwigluThreads;
    cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.sharedMemBytes = kSwigluSmem;
    cfg.hStream = stream;
    cfg.attrs = cluster;
    cfg.numAttrs = 1;
    return cfg;
  }

  SwigluLaunch swiglu_launch(const std::string& name, const at::Tensor& h, const at::Tensor& w2, at::Tensor& out,
                             int64_t M, int64_t N, int64_t K, int tile_n, bool pair, const std::string& what) {
    // CTA pairs where M allows them and a pair fits on this GPU (another
    // process's SM limits can leave none): else single CTAs
    const std::string fn = "fastpath_" + name + (tile_n == 112 ? "_n112" : "");
    if (pair) {
      CUfunction fp = function(name, fn + "_pair");
      allow_smem(fp, kSwigluSmem);
      CUlaunchAttribute attr{};
      attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
      attr.value.clusterDim.x = 2;
      attr.value.clusterDim.y = 1;
      attr.value.clusterDim.z = 1;
      CUlaunchConfig cfg = swiglu_config(static_cast<unsigned>(sms_ / 2 * 2), nullptr, &attr);
      int fit = 0;
      check_cu(cuOccupancyMaxActiveClusters(&fit, fp, &cfg), "gate_up_swiglu: clusters that fit");
      // the site's shape class says cta_pair=yes, and its proof ran pairs.
      // Single CTAs of 128 columns are proven too (every proof has
      // cta_pair=no cases of 128); single CTAs of 112 columns are not, so
      // falling back to them would run a path no proof case ran: stop
      if (fit < 1 && tile_n == 112)
        throw std::runtime_error(what + ": no CTA pair fits on this GPU now (another process's SM limits?), and its "
                                        "tiles of 112 columns run proven only as pairs: run with --fast-paths none");
      if (fit < 1) pair = false;
    }
    SwigluLaunch l;
    l.cm = pair ? 2 : 1;
    l.f = function(name, pair ? fn + "_pair" : fn);
    allow_smem(l.f, kSwigluSmem);
    l.maps[0] = tensor_map(h.data_ptr(), static_cast<uint64_t>(M), static_cast<uint64_t>(K), kSwigluTileM, 64);
    // each CTA of a pair loads one half of a tile's 2 x tile_n weight rows
    l.maps[1] = tensor_map(w2.data_ptr(), static_cast<uint64_t>(2 * N), static_cast<uint64_t>(K),
                           static_cast<unsigned>(pair ? tile_n : 2 * tile_n), 64);
    // out: boxes of 64 x 64 in the 128-byte swizzle, or one box of 64 x 112
    // rows without it
    l.maps[2] = tile_n == 128
                    ? tensor_map(out.data_ptr(), static_cast<uint64_t>(M), static_cast<uint64_t>(N), 64, 64)
                    : tensor_map(out.data_ptr(), static_cast<uint64_t>(M), static_cast<uint64_t>(N), 64,
                                 static_cast<unsigned>(tile_n), CU_TENSOR_MAP_SWIZZLE_NONE);
    const int cm = pair ? 2 : 1;
    const int64_t groups = ((M + kSwigluTileM * cm - 1) / (kSwigluTileM * cm)) * (N / tile_n);
    // persistent: one CTA an SM, or as many clusters as can be resident
    int64_t clusters = sms_ / cm;
    if (pair) {
      CUlaunchAttribute attr{};
      attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
      attr.value.clusterDim.x = 2;
      attr.value.clusterDim.y = 1;
      attr.value.clusterDim.z = 1;
      CUlaunchConfig cfg = swiglu_config(static_cast<unsigned>(clusters * cm), nullptr, &attr);
      int fit = 0;
      check_cu(cuOccupancyMaxActiveClusters(&fit, l.f, &cfg), "gate_up_swiglu: clusters that fit");
      clusters = std::min<int64_t>(clusters, std::max(fit, 1));
    }
    if (clusters < 1) throw std::runtime_error(what + ": no SM to run on");
    l.grid = static_cast<unsigned>(std::min(clusters, groups) * cm);
    return l;
  }

  // The sm_90a kernels run on sm_90 only (`uses`: what they need of it).
  void require_hopper(const std::string& what, const char* uses) const {
    if (cc_major_ != 9 || cc_minor_ != 0)
      throw std::runtime_error(what + ": its kernel is for Hopper (sm_90a: " + uses + "); this GPU is sm_" +
                               std::to_string(cc_major_) + std::to_string(cc_minor_) +
                               " (run without it: --fast-paths none)");
  }

  void allow_smem(CUfunction f, int bytes) {
    if (smem_set_.count(f)) return;
    check_cu(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes),
             "allow " + std::to_string(bytes) + " bytes of shared memory");
    smem_set_.insert(f);
  }

  // causal_attention (kernels/fastpaths/cuda/causal_attention.cu): q [B, H,
  // S, 128], k and v [B, Hk, S, 128] bf16 in any strides whose last is 1 and
  // whose others are multiples of 8 elements (the views of one qkv
  // projection; else a contiguous copy), out [B, S, H, 128] contiguous. Three
  // 4-D tensor maps per set of addresses and strides, a grid of (B * H, q
  // tiles).
  void causal_attention(const std::vector<at::Tensor>& in, at::Tensor& out, cudaStream_t stream) {
    const std::string what = "fast path causal_attention";
    FG_CHECK(in.size() == 3, what + ": takes q, k and v");
    std::vector<at::Tensor> t(in.begin(), in.end());
    for (at::Tensor& x : t) {
      FG_CHECK(x.is_cuda() && x.scalar_type() == at::kBFloat16 && x.dim() == 4,
               what + ": q, k and v must be bf16 [B, H, S, D] device tensors");
      // a dim of size 1 is never stepped along: its stride does not matter
      // (head_map gives it one TMA accepts); the others positive multiples
      // of 16 bytes (an expanded k/v, stride 0, is copied)
      bool tma = (x.size(3) == 1 || x.stride(3) == 1) && (reinterpret_cast<uintptr_t>(x.data_ptr()) & 15) == 0;
      for (int d = 0; d < 3; ++d) tma = tma && (x.size(d) == 1 || (x.stride(d) > 0 && x.stride(d) % 8 == 0));
      if (!tma) x = x.clone(at::MemoryFormat::Contiguous);
    }
    const at::Tensor &q = t[0], &k = t[1], &v = t[2];
    const int64_t B = q.size(0), H = q.size(1), S = q.size(2), Hk = k.size(1);
    FG_CHECK(q.size(3) == kAttnHeadDim && k.sizes() == v.sizes() && k.size(0) == B && k.size(2) == S &&
                 k.size(3) == kAttnHeadDim && Hk > 0 && H % Hk == 0,
             what + ": needs q [B, H, S, 128] and k, v [B, Hk, S, 128] with H a multiple of Hk");
    FG_CHECK(out.is_contiguous() && out.scalar_type() == at::kBFloat16 && out.numel() == B * S * H * kAttnHeadDim,
             what + ": its output is not bf16 [B, S, H, 128]");
    FG_CHECK((reinterpret_cast<uintptr_t>(out.data_ptr()) & 15) == 0, what + ": its output is not 16-byte aligned");
    if (B * H * S == 0) return;
    // q tiles on the grid's y (at most 65535), batch x heads on its x
    if ((S + kAttnRows - 1) / kAttnRows > 65535 || B * H > INT32_MAX)
      throw std::runtime_error(what + ": sequence length " + std::to_string(S) + " (at most " +
                               std::to_string(65535 * kAttnRows) + ") or batch x heads " + std::to_string(B * H) +
                               " (below 2^31) too large for its grid");
    require_hopper(what, "wgmma, TMA");
    std::vector<int64_t> key = {reinterpret_cast<int64_t>(out.data_ptr())};
    for (const at::Tensor& x : t) {
      key.push_back(reinterpret_cast<int64_t>(x.data_ptr()));
      key.insert(key.end(), x.sizes().begin(), x.sizes().end());
      key.insert(key.end(), x.strides().begin(), x.strides().end());
    }
    auto it = attn_launches_.find(key);
    if (it == attn_launches_.end()) {
      if (attn_launches_.size() >= 4096) attn_launches_.clear();
      AttnLaunch l;
      l.f = function("causal_attention", "fastpath_causal_attention");
      allow_smem(l.f, kAttnSmem);
      for (int i = 0; i < 3; ++i) l.maps[i] = head_map(t[static_cast<size_t>(i)]);
      it = attn_launches_.emplace(key, l).first;
    }
    AttnLaunch& l = it->second;
    void* o = out.data_ptr();
    long long out_tok = H * kAttnHeadDim, out_head = kAttnHeadDim, out_batch = S * H * kAttnHeadDim;
    int Si = static_cast<int>(S), Hi = static_cast<int>(H), group = static_cast<int>(H / Hk);
    float scale_log2 = static_cast<float>(1.4426950408889634 / std::sqrt(static_cast<double>(kAttnHeadDim)));
    void* params[] = {&l.maps[0], &l.maps[1], &l.maps[2], &o, &out_tok, &out_head, &out_batch, &Si, &Hi, &group,
                      &scale_log2};
    const unsigned tiles = static_cast<unsigned>((S + kAttnRows - 1) / kAttnRows);
    check_cu(cuLaunchKernel(l.f, static_cast<unsigned>(B * H), tiles, 1, kAttnThreads, 1, 1, kAttnSmem, stream, params,
                            nullptr),
             "launch fastpath_causal_attention");
  }

  struct AttnLaunch {
    CUfunction f = nullptr;
    CUtensorMap maps[3];
  };

  // A 4-D map of a bf16 [B, H, S, D] view, dims (d, s, head, batch), boxes of
  // 64 d x 128 s, 128-byte swizzle; rows past S read as zeros.
  static CUtensorMap head_map(const at::Tensor& x) {
    CUtensorMap m;
    const cuuint64_t dims[4] = {static_cast<cuuint64_t>(x.size(3)), static_cast<cuuint64_t>(x.size(2)),
                                static_cast<cuuint64_t>(x.size(1)), static_cast<cuuint64_t>(x.size(0))};
    // a dim of size 1 takes the stride it would have in a contiguous tensor
    // (its own is never stepped along and may be anything)
    int64_t st[4] = {x.stride(0), x.stride(1), x.stride(2), 1};
    for (int d = 2; d >= 0; --d)
      if (x.size(d) == 1) st[d] = st[d + 1] * x.size(d + 1);
    const cuuint64_t strides[3] = {static_cast<cuuint64_t>(st[2]) * 2, static_cast<cuuint64_t>(st[1]) * 2,
                                   static_cast<cuuint64_t>(st[0]) * 2};
    const cuuint32_t box[4] = {64, kAttnRows, 1, 1};
    const cuuint32_t elem[4] = {1, 1, 1, 1};
    check_cu(cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, x.data_ptr(), dims, strides, box, elem,
                                    CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                    CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
             "causal_attention: tensor map of a [" + std::to_string(x.size(0)) + ", " + std::to_string(x.size(1)) +
                 ", " + std::to_string(x.size(2)) + ", " + std::to_string(x.size(3)) + "] view");
    return m;
  }

  // A 2-D bf16 row-major [rows, cols] tensor map, boxes of box_rows x
  // box_cols, 128-byte swizzle (or `swizzle`); out-of-bounds reads fill zeros.
  static CUtensorMap tensor_map(void* ptr, uint64_t rows, uint64_t cols, unsigned box_rows, unsigned box_cols,
                                CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_128B) {
    CUtensorMap m;
    const cuuint64_t dims[2] = {cols, rows};
    const cuuint64_t strides[1] = {cols * 2};
    const cuuint32_t box[2] = {box_cols, box_rows};
    const cuuint32_t elem[2] = {1, 1};
    check_cu(cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, ptr, dims, strides, box, elem,
                                    CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                                    CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
             "gate_up_swiglu: tensor map of [" + std::to_string(rows) + ", " + std::to_string(cols) + "]");
    return m;
  }

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
                                cudaStream_t stream) {
    std::vector<int64_t> key = {reinterpret_cast<int64_t>(wg.data_ptr()), reinterpret_cast<int64_t>(wu.data_ptr()),
                                gamma ? reinterpret_cast<int64_t>(gamma->data_ptr()) : 0, wg.get_device(), tile_n};
    std::vector<const at::Tensor*> parts = {&wg, &wu};
    if (gamma) parts.push_back(gamma);
    std::vector<int64_t> versions;
    for (const at::Tensor* t : parts) {
      key.insert(key.end(), t->sizes().begin(), t->sizes().end());
      key.insert(key.end(), t->strides().begin(), t->strides().end());
      versions.push_back(static_cast<int64_t>(t->_version()));
    }
    auto it = interleaved_.find(key);
    if (it != interleaved_.end() && it->second.versions == versions) return it->second.w2;
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    check_rt(cudaStreamIsCapturing(stream, &capturing), "capture status");
    if (capturing != cudaStreamCaptureStatusNone)
      throw std::runtime_error(std::string("fast path ") + (gamma ? "rmsnorm_gate_up_swiglu" : "gate_up_swiglu") +
                               ": its interleaved weights are made outside CUDA graph capture: run one forward "
                               "before capturing (and none with updated weights during it)");
    const int64_t N = wg.size(0), K = wg.size(1);
    // bf16 * bf16 in ATen: the product of the two values rounded once
    const at::Tensor g = gamma ? wg * *gamma : wg, u = gamma ? wu * *gamma : wu;
    at::Tensor w2 = at::stack({g.reshape({N / tile_n, tile_n, K}), u.reshape({N / tile_n, tile_n, K})}, 1)
                        .reshape({2 * N, K});
    if (it == interleaved_.end()) {
      Interleaved& e = interleaved_[key];
      e.weights.assign({wg, wu});  // their memory is not reused while the entry lives
      if (gamma) e.weights.push_back(*gamma);
      e.w2 = w2.contiguous();
      e.versions = versions;
      return e.w2;
    }
    it->second.w2.copy_(w2);  // same address: launches made for it stay right
    it->second.versions = versions;
    return it->second.w2;
  }

  CUfunction function(const std::string& name, const std::string& fn) {
    auto it = modules_.find(name);
    if (it == modules_.end()) {
      const FastPathSpec* spec = find_fast_path(name);
      std::string cubin = cuda_cubin(fast_path_source(name, Backend::Cuda), spec ? spec->cuda_arch : "");
      CUmodule m = nullptr;
      check_cu(cuModuleLoadData(&m, cubin.data()), "load " + name);
      it = modules_.emplace(name, m).first;
    }
    CUfunction f = nullptr;
    check_cu(cuModuleGetFunction(&f, it->second, fn.c_str()), "find " + fn);
    return f;
  }

  // The grid of a one-shot exchange with other ranks: at most `want`
  // blocks, and no more than the device holds at once (each block waits on
  // the same block of the other ranks) nor than the region has launch
  // counters for; at most kMaxRanks ranks.
  long long resident_blocks(CUfunction f, const std::string& fn, unsigned threads, long long want) {
    if (world_ > kMaxRanks)
      throw std::runtime_error("fast path " + fn + ": at most " + std::to_string(kMaxRanks) +
                               " ranks (GPUs of one host)");
    int per_sm = 0;
    check_cu(cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f, static_cast<int>(threads), 0), "occupancy");
    if (per_sm < 1)
      throw std::runtime_error("fast path " + fn + ": no block of " + std::to_string(threads) + " threads fits on an SM");
    return std::min<long long>({want, static_cast<long long>(per_sm) * sms_, kMaxBlocks});
  }

  // allreduce_sum.cu and allreduce_residual.cu (`residual`: the second
  // input is added to the sum): a block of 512 threads owns a contiguous
  // range of chunks of 8 elements; every block resident at once (each waits
  // on the same block of the other ranks), at most kMaxBlocks
  void allreduce_sum(CUfunction f, const std::string& fn, const std::vector<at::Tensor>& in, at::Tensor& out,
                     cudaStream_t stream, bool residual) {
    const size_t inputs = residual ? 2 : 1;
    bool fits = in.size() == inputs && out.scalar_type() == at::kBFloat16;
    for (size_t i = 0; fits && i < in.size(); ++i)
      fits = in[i].numel() == out.numel() && in[i].scalar_type() == at::kBFloat16;
    FG_CHECK(fits, "fast path " + fn + ": takes " + (residual ? "a bf16 partial and a bf16 residual" : "one bf16 input") +
                       " of its output's size");
    long long n = in[0].numel();
    if (n == 0) return;
    if (n % 8 != 0) throw std::runtime_error("fast path " + fn + ": " + std::to_string(n) + " elements is not a multiple of 8");
    constexpr unsigned kThreads = 512;
    const long long chunks = n / 8;
    long long blocks = std::min<long long>((chunks + kThreads - 1) / kThreads, kMaxBlocks);
    FgRegions regs{};
    if (world_ > 1) {
      blocks = resident_blocks(f, fn, kThreads, blocks);
      // its own regions: the key names the fast path, so that the two
      // exchanges' launch counters (one per block) never mix
      regs = region(1, n, blocks, kThreads, stream, residual ? "allreduce_residual " : "allreduce_sum ");
      coll_->record("one_shot_all_reduce", in[0]);
    }
    const void* partial = in[0].data_ptr();
    const void* res = residual ? in[1].data_ptr() : nullptr;
    void* o = out.data_ptr();
    int world = world_, rank = rank_;
    void* sum_params[] = {&partial, &o, &regs, &n, &world, &rank};
    void* residual_params[] = {&partial, &res, &o, &regs, &n, &world, &rank};
    check_cu(cuLaunchKernel(f, static_cast<unsigned>(blocks), 1, 1, kThreads, 1, 1, 0, stream,
                            residual ? residual_params : sum_params, nullptr),
             "launch " + fn);
  }

  // Every rank's region for one call shape, mapped here (made on first use:
  // every rank reaches it at the same launch of the same graph). Keyed by
  // rows, width and grid: block b must own the same rows at every epoch of a
  // region (the double buffering rests on it), and every rank must run the
  // same grid (a block waits on the same block of the others), which the
  // exchange checks. `tag` keeps two fast paths' regions of one shape apart.
  FgRegions region(long long rows, long long H, long long blocks, unsigned threads, cudaStream_t stream,
                   const std::string& tag = "") {
    const std::string shape = tag + std::to_string(rows) + "x" + std::to_string(H) + " grid " + std::to_string(blocks) +
                              "x" + std::to_string(threads);
    auto it = regions_.find(shape);
    if (it != regions_.end()) return it->second;
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    check_rt(cudaStreamIsCapturing(stream, &capturing), "capture status");
    if (capturing != cudaStreamCaptureStatusNone)
      throw std::runtime_error("fast path buffers for " + shape +
                               " are made outside CUDA graph capture: run one forward before capturing");
    FgRegions r{};
    // two epochs of one buffer per sending rank (this rank's own unused)
    const size_t size = kDataOffset + 2 * static_cast<size_t>(world_) * static_cast<size_t>(rows * H) * 2;
    check_rt(cudaMalloc(&r.p[rank_], size), "allocate the one-shot buffers");
    check_rt(cudaMemset(r.p[rank_], 0, kDataOffset), "zero the launch counters");
    check_cu(cuMemsetD16(reinterpret_cast<CUdeviceptr>(static_cast<char*>(r.p[rank_]) + kDataOffset), kEmpty,
                         (size - kDataOffset) / 2),
             "empty the buffers");
    check_rt(cudaDeviceSynchronize(), "empty the buffers");
    cudaIpcMemHandle_t h;
    check_rt(cudaIpcGetMemHandle(&h, r.p[rank_]), "IPC handle");
    // the n-th region this process makes is every rank's n-th: the key is unique
    static int made = 0;
    const std::string key = "fastpath-ipc/" + std::to_string(made++);
    std::vector<std::string> all = coll_->exchange(key, shape + "|" + to_hex(&h, sizeof h));
    for (int i = 0; i < world_; ++i) {
      const std::string& got = all[static_cast<size_t>(i)];
      const size_t bar = got.find('|');
      if (bar == std::string::npos || got.substr(0, bar) != shape)
        throw std::runtime_error("fast path: rank " + std::to_string(i) + " runs the one-shot all-reduce as " +
                                 got.substr(0, bar) + ", rank " + std::to_string(rank_) + " as " + shape +
                                 ": every rank must run the same grid (the same GPU model)");
      if (i == rank_) continue;
      cudaIpcMemHandle_t peer;
      from_hex(got.substr(bar + 1), &peer, sizeof peer);
      check_rt(cudaIpcOpenMemHandle(&r.p[i], peer, cudaIpcMemLazyEnablePeerAccess),
               "open rank " + std::to_string(i) + "'s buffers (the one-shot all-reduce needs GPUs of one host)");
    }
    coll_->exchange(key + "/mapped", "1");
    return regions_.emplace(shape, r).first->second;
  }

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

}  // namespace

std::unique_ptr<DeviceFastPaths> make_cuda_fast_paths(Collectives* coll, int rank, int world) {
  return std::make_unique<CudaFastPaths>(coll, rank, world);
}

}  // namespace fg
