// The one-shot exchange of the all-reduce fast paths on cuda: each rank's
// region, mapped into every rank with CUDA IPC (handles through the c10d
// store), the grid every block of which is resident at once, and the
// allreduce_sum / allreduce_residual launch.
#include "kernels/fastpaths/cuda_fast_paths.h"

namespace fg::cuda_fast_paths {

namespace {

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

}  // namespace

long long CudaFastPaths::resident_blocks(CUfunction f, const std::string& fn, unsigned threads, long long want) {
  if (world_ > kMaxRanks)
    throw std::runtime_error("fast path " + fn + ": at most " + std::to_string(kMaxRanks) +
                             " ranks (GPUs of one host)");
  int per_sm = 0;
  check_cu(cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f, static_cast<int>(threads), 0), "occupancy");
  if (per_sm < 1)
    throw std::runtime_error("fast path " + fn + ": no block of " + std::to_string(threads) + " threads fits on an SM");
  return std::min<long long>({want, static_cast<long long>(per_sm) * sms_, kMaxBlocks});
}

void CudaFastPaths::allreduce_sum(CUfunction f, const std::string& fn, const std::vector<at::Tensor>& in,
                                  at::Tensor& out, cudaStream_t stream, bool residual) {
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

FgRegions CudaFastPaths::region(long long rows, long long H, long long blocks, unsigned threads, cudaStream_t stream,
                                const std::string& tag) {
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

}  // namespace fg::cuda_fast_paths
