// The fast paths on cuda: each fast path's source (the CUDA prelude and
// kernels/fastpaths/cuda/NAME.cu) compiled by NVRTC once per process and
// launched through the driver API on LibTorch's current stream (so CUDA
// graph capture and the order with NCCL and cuBLAS hold). The one-shot
// all-reduce maps every rank's region into each rank with CUDA IPC: each
// rank allocates and zeroes its region, the handles go through the c10d
// store, each rank opens the others' (peer access enabled lazily).
#include "kernels/fastpaths/cuda_fast_paths.h"

namespace fg {
namespace cuda_fast_paths {

void CudaFastPaths::run(const Node& n, const std::vector<at::Tensor>& in, at::Tensor& out) {
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

CUfunction CudaFastPaths::function(const std::string& name, const std::string& fn) {
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

}  // namespace cuda_fast_paths

std::unique_ptr<DeviceFastPaths> make_cuda_fast_paths(Collectives* coll, int rank, int world) {
  return std::make_unique<cuda_fast_paths::CudaFastPaths>(coll, rank, world);
}

}  // namespace fg

