#include "kernels/fastpaths/runtime.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>

#include "fusion/errors.h"
#include "fusion/fault.h"
#include "kernels/collectives/collectives.h"
#include "kernels/cpu/jit.h"
#include "fusion/fastpaths/catalog.h"
#include "kernels/fastpaths/sources.h"

namespace fg {

// Every rank's region for one buffer size, mapped here: the epoch word at
// byte 0, then two buffers (the kernel's layout: host/allreduce_residual_rmsnorm.cpp).
struct FastPathRunner::Shared {
  std::vector<void*> regions;  // rank order
  size_t size = 0;
  int64_t epoch = 0;
  ~Shared() {
    for (void* r : regions)
      if (r && r != MAP_FAILED) munmap(r, size);
  }
};

FastPathRunner::FastPathRunner(Backend backend, Collectives* coll, int rank, int world)
    : backend_(backend), coll_(coll), rank_(rank), world_(world) {}

FastPathRunner::~FastPathRunner() = default;

void* FastPathRunner::host_function(const std::string& name, const std::string& fn) {
  auto it = host_.find(name);
  if (it == host_.end()) it = host_.emplace(name, jit_compile(fast_path_source(name, Backend::Cpu))).first;
  return it->second->symbol(fn);
}

FastPathRunner::Shared& FastPathRunner::shared(int64_t bytes) {
  auto it = shared_.find(bytes);
  if (it != shared_.end()) return *it->second;
  // every rank reaches this call at the same point of the same graph, so the
  // exchange below pairs up
  auto s = std::make_unique<Shared>();
  s->size = static_cast<size_t>(64 + 2 * bytes);
  // a fresh name: a process id is reused, and a rank killed between
  // creating its segment and unlinking it leaves the name behind
  static int created = 0;
  std::random_device rd;
  std::string mine;
  int fd = -1;
  for (int attempt = 0; attempt < 8 && fd < 0; ++attempt) {
    char tag[17];
    std::snprintf(tag, sizeof tag, "%08x%08x", rd(), rd());
    mine = "/fusegate-" + std::to_string(::getpid()) + "-" + std::to_string(created++) + "-" + tag;
    fd = shm_open(mine.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) throw std::runtime_error("fast path: shm_open " + mine + ": " + std::strerror(errno));
  if (ftruncate(fd, static_cast<off_t>(s->size)) != 0) {
    ::close(fd);
    shm_unlink(mine.c_str());
    throw std::runtime_error("fast path: cannot size shared memory " + mine + ": " + std::strerror(errno));
  }
  ::close(fd);
  // FUSEGATE_FAULT=crash_in_fast_path:R: rank R dies holding a named segment
  // while its peers wait in the exchange below (the launcher must clean up)
  if (fault_argument("crash_in_fast_path") == std::to_string(rank_)) std::abort();
  // the n-th region this process makes is every rank's n-th: the key is unique
  static int regions = 0;
  const std::string key = "fastpath-shm/" + std::to_string(regions++) + "/" + std::to_string(bytes);
  std::vector<std::string> names = coll_->exchange(key, mine);
  for (int r = 0; r < world_; ++r) {
    int f = shm_open(names[static_cast<size_t>(r)].c_str(), O_RDWR, 0600);
    if (f < 0)
      throw std::runtime_error("fast path: rank " + std::to_string(r) + "'s shared memory " +
                               names[static_cast<size_t>(r)] +
                               " cannot be opened here (the one-shot all-reduce needs every rank on one host): " +
                               std::strerror(errno));
    void* p = mmap(nullptr, s->size, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
    ::close(f);
    if (p == MAP_FAILED) throw std::runtime_error(std::string("fast path: mmap: ") + std::strerror(errno));
    s->regions.push_back(p);
  }
  // once every rank has mapped every region, the names can go: the memory
  // lives while mapped, and nothing is left behind in /dev/shm
  coll_->exchange(key + "/mapped", "1");
  shm_unlink(mine.c_str());
  return *shared_.emplace(bytes, std::move(s)).first->second;
}

int64_t FastPathRunner::exchange(const at::Tensor& partial, std::vector<void*>* p) {
  // one set of regions per size, whichever one-shot fast path calls: the
  // calls run one at a time, each with the next epoch
  Shared& s = shared(partial.numel() * 2);
  for (void* r : s.regions) p->push_back(r);
  coll_->record("one_shot_all_reduce", partial);
  return ++s.epoch;
}

void FastPathRunner::run(const Node& n, const std::vector<at::Tensor>& in, at::Tensor& out) {
  run_kernel(n, in, out);
  // FUSEGATE_FAULT=broken_fast_path:NAME: NAME's output 1.5x its value, its
  // source (and so its proof) unchanged (a miscompile `bisect` must name at
  // the fast path stage)
  static const std::string broken = fault_argument("broken_fast_path");  // read once: this runs every launch
  if (!broken.empty() && broken == attr_str_or(n.attrs, "name", "")) out.mul_(1.5);
}

void FastPathRunner::run_kernel(const Node& n, const std::vector<at::Tensor>& in, at::Tensor& out) {
  const std::string name = attr_str_or(n.attrs, "name", "");
  const std::string stage = attr_str_or(n.attrs, "stage", "");
  const std::string fn = "fastpath_" + name + (stage.empty() ? "" : "_" + stage);
  if (backend_ == Backend::Cuda) {
    if (!cuda_) cuda_ = make_cuda_fast_paths(coll_, rank_, world_);
    cuda_->run(n, in, out);
    return;
  }
  // causal_attention gets q, k and v as views of the qkv projection: its
  // reference reads contiguous copies
  std::vector<at::Tensor> copies;
  if (name == "causal_attention") {
    FG_CHECK(in.size() == 3 && in[0].dim() == 4 && in[1].dim() == 4 && in[1].sizes() == in[2].sizes() &&
                 in[1].size(1) > 0 && in[0].size(1) % in[1].size(1) == 0 && in[0].size(2) == in[1].size(2) &&
                 out.numel() == in[0].numel(),
             "fast path " + fn + ": needs q [B, H, S, D] and k, v [B, Hk, S, D] with H a multiple of Hk");
    for (const at::Tensor* t : std::initializer_list<const at::Tensor*>{&in[0], &in[1], &in[2], &out})
      FG_CHECK(t->scalar_type() == at::kBFloat16, "fast path " + fn + ": q, k, v and its output must be bf16");
    for (const auto& t : in) copies.push_back(t.contiguous());
  }
  const std::vector<at::Tensor>& args = copies.empty() ? in : copies;
  for (size_t i = 0; i < args.size(); ++i)
    FG_CHECK(args[i].is_contiguous(), "fast path " + fn + ": input " + std::to_string(i) + " is not contiguous");
  FG_CHECK(out.is_contiguous(), "fast path " + fn + ": its output is not contiguous");
  using Fn = void (*)(void**, const int64_t*, const double*);
  auto f = reinterpret_cast<Fn>(host_function(name, fn));
  std::vector<void*> p;
  for (const auto& t : args) p.push_back(const_cast<void*>(t.data_ptr()));
  p.push_back(out.data_ptr());
  if (name == "causal_attention") {
    const int64_t iv[5] = {in[0].size(0), in[0].size(1), in[1].size(1), in[0].size(2), in[0].size(3)};
    f(p.data(), iv, nullptr);
    return;
  }
  if (name == "allreduce_residual_rmsnorm") {
    const int64_t H = attr_int(n.attrs, "hidden", n.op);
    const int64_t rows = in[0].numel() / H;
    std::vector<int64_t> iv = {rows, H, world_, rank_, 0};
    if (world_ > 1) iv[4] = exchange(in[0], &p);
    const double dv[1] = {attr_float(n.attrs, "eps", n.op)};
    f(p.data(), iv.data(), dv);
    return;
  }
  if (name == "allreduce_sum" || name == "allreduce_residual") {
    // the partial, and for allreduce_residual the residual, of the output's size
    const size_t inputs = name == "allreduce_residual" ? 2 : 1;
    bool fits = in.size() == inputs && out.scalar_type() == at::kBFloat16;
    for (size_t i = 0; fits && i < in.size(); ++i)
      fits = in[i].numel() == out.numel() && in[i].scalar_type() == at::kBFloat16;
    FG_CHECK(fits, "fast path " + fn + ": takes " + (inputs == 2 ? "a bf16 partial and a bf16 residual" : "one bf16 input") +
                       " of its output's size");
    std::vector<int64_t> iv = {in[0].numel(), world_, rank_, 0};
    if (world_ > 1) iv[3] = exchange(in[0], &p);
    f(p.data(), iv.data(), nullptr);
    return;
  }
  if (name == "gate_up_swiglu" || name == "rmsnorm_gate_up_swiglu") {
    const bool norm = name == "rmsnorm_gate_up_swiglu";
    const size_t w = norm ? 2 : 1;  // the gate weight's position
    FG_CHECK(in.size() == w + 2, "fast path " + fn + ": takes " + std::to_string(w + 2) + " inputs");
    const int64_t K = in[0].size(-1), N = in[w].size(0);
    FG_CHECK(in[w].sizes() == in[w + 1].sizes() && in[w].size(1) == K && out.size(-1) == N &&
                 out.numel() / N == in[0].numel() / K && (!norm || (in[1].dim() == 1 && in[1].size(0) == K)),
             "fast path " + fn + ": its inputs and output do not have the shapes it was matched with");
    const int64_t iv[3] = {in[0].numel() / K, N, K};
    // the folded norm's eps and divisor, as the compiler emitted them (a
    // node without them is an internal error, as on cuda)
    const double dv[2] = {norm ? attr_float(n.attrs, "eps", n.op) : 0.0, norm ? attr_float(n.attrs, "divisor", n.op) : 1.0};
    f(p.data(), iv, dv);
    return;
  }
  // the q/k norms: rows of the QKV projection
  const int64_t C = in[0].size(-1);
  const int64_t iv[5] = {in[0].numel() / C, C, attr_int(n.attrs, "q_start", n.op), attr_int(n.attrs, "k_start", n.op),
                         attr_int(n.attrs, "width", n.op)};
  const double dv[2] = {attr_float_or(n.attrs, "eps", 0), attr_float_or(n.attrs, "divisor", 1)};
  f(p.data(), iv, dv);
}

}  // namespace fg
