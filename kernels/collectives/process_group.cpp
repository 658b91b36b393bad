#include <atomic>
#include <chrono>
#include <thread>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef FUSEGATE_WITH_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#include <torch/version.h>
#ifdef FUSEGATE_WITH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include "fusion/errors.h"
#include "fusion/fault.h"
#include "fusion/ir/types.h"
#include "kernels/collectives/collectives.h"

namespace fg {

// LibTorch 1.x names the Gloo and NCCL groups ProcessGroups; 2.x makes them
// Backends of a ProcessGroup. Both have the calls used here.
#if TORCH_VERSION_MAJOR >= 2
using PgBase = c10d::Backend;
#else
using PgBase = c10d::ProcessGroup;
#endif
struct Collectives::Group {
  c10::intrusive_ptr<PgBase> pg;
};

// Gloo in LibTorch 1.13 cannot reduce bf16; those tensors are reduced in f32
// and rounded back, which is what a bf16 ring reduction with f32 accumulation
// would give. NCCL reduces bf16 itself.
bool Collectives::needs_upcast(const at::Tensor& t) const { return !nccl_ && t.scalar_type() == at::kBFloat16; }

Collectives::Collectives(const std::string& host, int port, int rank, int world, int timeout_s,
                         const std::string& backend, const std::string& prefix)
    : rank_(rank), world_(world), nccl_(backend == "nccl") {
  c10d::TCPStoreOptions o;
  o.port = static_cast<uint16_t>(port);
  o.isServer = false;
  o.waitWorkers = false;
  o.timeout = std::chrono::seconds(timeout_s);
  c10::intrusive_ptr<c10d::Store> store = c10::make_intrusive<c10d::TCPStore>(host, o);
  if (!prefix.empty()) store = c10::make_intrusive<c10d::PrefixStore>(prefix, store);
  pg_ = std::make_shared<Group>();
  if (nccl_) {
#ifdef FUSEGATE_WITH_NCCL
    auto opts = c10d::ProcessGroupNCCL::Options::create();
    opts->timeout = std::chrono::seconds(timeout_s);
    pg_->pg = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, world, opts);
#else
    user_error("this fusegate was built without NCCL (LibTorch has no CUDA): use --backend cpu");
#endif
  } else {
#ifdef FUSEGATE_WITH_GLOO
    auto opts = c10d::ProcessGroupGloo::Options::create();
    opts->timeout = std::chrono::seconds(timeout_s);
    // the loopback interface when every rank is on this machine; else the
    // interface this machine's host name resolves to (Gloo's default)
    const bool loopback = host == "127.0.0.1" || host == "localhost";
    opts->devices.push_back(loopback ? c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1")
                                     : c10d::ProcessGroupGloo::createDefaultDevice());
    pg_->pg = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, world, opts);
#else
    user_error("this fusegate was built without Gloo (its LibTorch ships no gloo headers): the cpu backend "
               "needs a LibTorch with Gloo, such as Debian's libtorch-dev");
#endif
  }
  auto* raw_store = store.release();
  store_ = std::shared_ptr<void>(raw_store, [](void* p) {
    c10::intrusive_ptr<c10d::Store>::reclaim(static_cast<c10d::Store*>(p));
  });
}

Collectives::~Collectives() {
#ifdef FUSEGATE_WITH_NCCL
  // NCCL wants its communicators torn down before exit
  if (nccl_ && pg_ && pg_->pg) static_cast<c10d::ProcessGroupNCCL*>(pg_->pg.get())->shutdown();
#endif
}

namespace {

std::atomic<int64_t> g_entered{0};
std::atomic<bool> g_inside{false};

// Marks this process as waiting in a collective for as long as it lives.
// FUSEGATE_FAULT=hang_before_collective:R stops rank R's work before its
// first all-reduce, its heartbeat still beating: a hung compute thread, for
// the launcher's blame to name.
class InCollective {
 public:
  explicit InCollective(int rank, bool data = true) {
    if (data && fault_argument("hang_before_collective") == std::to_string(rank))
      for (;;) std::this_thread::sleep_for(std::chrono::seconds(60));
    ++g_entered;
    g_inside = true;
  }
  ~InCollective() { g_inside = false; }
};

}  // namespace

CollectiveProgress collective_progress() { return {g_entered.load(), g_inside.load()}; }

void Collectives::note(const char* what, const at::Tensor& t) {
  sequence_ += std::string(what) + ":" + std::string(c10::toString(t.scalar_type())) + "[";
  for (int64_t i = 0; i < t.dim(); ++i) sequence_ += (i ? "," : "") + std::to_string(t.size(i));
  sequence_ += "];";
}

void Collectives::all_reduce_(at::Tensor& t) {
  InCollective waits(rank_);
  note("all_reduce", t);
  at::Tensor work = needs_upcast(t) ? t.to(at::kFloat) : t.contiguous();
  std::vector<at::Tensor> v{work};
  pg_->pg->allreduce(v)->wait();
  if (!work.is_same(t)) t.copy_(work);
}

at::Tensor Collectives::all_gather(const at::Tensor& t) {
  InCollective waits(rank_);
  note("all_gather", t);
  at::Tensor in = needs_upcast(t) ? t.to(at::kFloat) : t.contiguous();
  std::vector<std::vector<at::Tensor>> out(1);
  for (int i = 0; i < world_; ++i) out[0].push_back(at::empty_like(in));
  std::vector<at::Tensor> inv{in};
  pg_->pg->allgather(out, inv)->wait();
  return at::cat(out[0], 0).to(t.scalar_type());
}

at::Tensor Collectives::reduce_scatter(const at::Tensor& t) {
  InCollective waits(rank_);
  note("reduce_scatter", t);
  // Gloo has no reduce-scatter here: all-reduce, then keep this rank's slice
  at::Tensor work = t.to(needs_upcast(t) ? at::kFloat : t.scalar_type()).contiguous().clone();
  std::vector<at::Tensor> v{work};
  pg_->pg->allreduce(v)->wait();
  int64_t n = t.size(0) / world_;
  return work.narrow(0, rank_ * n, n).to(t.scalar_type()).contiguous();
}

void Collectives::barrier() {
  InCollective waits(rank_, false);
  pg_->pg->barrier()->wait();
}

std::vector<std::string> Collectives::exchange(const std::string& key, const std::string& mine) {
  InCollective waits(rank_, false);
  auto* store = static_cast<c10d::Store*>(store_.get());
  const std::string base = "fusegate/" + key + "/";
  store->set(base + std::to_string(rank_), std::vector<uint8_t>(mine.begin(), mine.end()));
  std::vector<std::string> all;
  for (int r = 0; r < world_; ++r) {
    std::vector<uint8_t> v = store->get(base + std::to_string(r));
    all.emplace_back(v.begin(), v.end());
  }
  return all;
}

}  // namespace fg
