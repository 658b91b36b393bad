#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "fusion/errors.h"
#include "fusion/ir/types.h"
#include "kernels/collectives/collectives.h"

namespace fg {

namespace {
// Gloo in LibTorch 1.13 cannot reduce bf16; those tensors are reduced in f32
// and rounded back, which is what a bf16 ring reduction with f32 accumulation
// would give.
bool needs_upcast(const at::Tensor& t) { return t.scalar_type() == at::kBFloat16; }
}  // namespace

Collectives::Collectives(const std::string& host, int port, int rank, int world, int timeout_s)
    : rank_(rank), world_(world) {
  c10d::TCPStoreOptions o;
  o.port = static_cast<uint16_t>(port);
  o.isServer = false;
  o.waitWorkers = false;
  o.timeout = std::chrono::seconds(timeout_s);
  auto store = c10::make_intrusive<c10d::TCPStore>(host, o);
  auto opts = c10d::ProcessGroupGloo::Options::create();
  opts->timeout = std::chrono::seconds(timeout_s);
  opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  auto pg = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, world, opts);
  // hold intrusive pointers through shared_ptr so the header stays light
  auto* raw_store = store.release();
  store_ = std::shared_ptr<void>(raw_store, [](void* p) {
    c10::intrusive_ptr<c10d::TCPStore>::reclaim(static_cast<c10d::TCPStore*>(p));
  });
  auto* raw_pg = pg.release();
  pg_ = std::shared_ptr<c10d::ProcessGroup>(raw_pg, [](c10d::ProcessGroup* p) {
    c10::intrusive_ptr<c10d::ProcessGroupGloo>::reclaim(static_cast<c10d::ProcessGroupGloo*>(p));
  });
}

Collectives::~Collectives() = default;

void Collectives::note(const char* what, const at::Tensor& t) {
  sequence_ += std::string(what) + ":" + std::string(c10::toString(t.scalar_type())) + "[";
  for (int64_t i = 0; i < t.dim(); ++i) sequence_ += (i ? "," : "") + std::to_string(t.size(i));
  sequence_ += "];";
}

void Collectives::all_reduce_(at::Tensor& t) {
  note("all_reduce", t);
  at::Tensor work = needs_upcast(t) ? t.to(at::kFloat) : t.contiguous();
  std::vector<at::Tensor> v{work};
  pg_->allreduce(v)->wait();
  if (!work.is_same(t)) t.copy_(work);
}

at::Tensor Collectives::all_gather(const at::Tensor& t) {
  note("all_gather", t);
  at::Tensor in = needs_upcast(t) ? t.to(at::kFloat) : t.contiguous();
  std::vector<std::vector<at::Tensor>> out(1);
  for (int i = 0; i < world_; ++i) out[0].push_back(at::empty_like(in));
  std::vector<at::Tensor> inv{in};
  pg_->allgather(out, inv)->wait();
  return at::cat(out[0], 0).to(t.scalar_type());
}

at::Tensor Collectives::reduce_scatter(const at::Tensor& t) {
  note("reduce_scatter", t);
  // Gloo has no reduce-scatter here: all-reduce, then keep this rank's slice
  at::Tensor work = t.to(needs_upcast(t) ? at::kFloat : t.scalar_type()).contiguous().clone();
  std::vector<at::Tensor> v{work};
  pg_->allreduce(v)->wait();
  int64_t n = t.size(0) / world_;
  return work.narrow(0, rank_ * n, n).to(t.scalar_type()).contiguous();
}

void Collectives::barrier() { pg_->barrier()->wait(); }

}  // namespace fg
