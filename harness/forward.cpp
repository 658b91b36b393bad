#include "harness/forward.h"

#include <xxhash.h>

#include "fusion/errors.h"

namespace fg {

namespace {

uint64_t seed_of(const std::string& repro, const std::string& input) {
  std::string k = repro + "/" + input;
  return XXH64(k.data(), k.size(), 0);
}

}  // namespace

at::Tensor make_input(const std::string& repro, const InputSpec& s, int rank, int world) {
  auto gen = at::detail::createCPUGenerator(seed_of(repro, s.name));
  at::Tensor full;
  if (s.dtype == DType::I64 || s.dtype == DType::Bool) {
    full = at::randint(0, s.dtype == DType::Bool ? 2 : std::max<int64_t>(2, static_cast<int64_t>(s.std)), s.full_shape,
                       gen, at::TensorOptions().dtype(to_aten(s.dtype)));
  } else {
    full = (at::randn(s.full_shape, gen, at::TensorOptions().dtype(at::kFloat)) * s.std + s.mean).to(to_aten(s.dtype));
  }
  if (s.shard_dim < 0 || world == 1) return full.contiguous();
  std::vector<at::Tensor> parts;
  for (const auto& block : full.chunk(s.shard_blocks, s.shard_dim)) {
    int64_t n = block.size(s.shard_dim);
    if (n % world) user_error("input " + s.name + ": dim " + std::to_string(s.shard_dim) + " (" + std::to_string(n) +
                              ") does not split over " + std::to_string(world) + " ranks");
    parts.push_back(block.chunk(world, s.shard_dim)[static_cast<size_t>(rank)]);
  }
  return at::cat(parts, s.shard_dim).contiguous();
}

ForwardResult forward(const Repro& r, Mode mode, AtenExecutor& ex, const std::map<std::string, at::Tensor>& inputs,
                      bool upcast) {
  Session s(mode, &ex, r.file);
  Inputs in;
  for (const auto& [k, v] : inputs) in[k] = s.wrap(wrap_aten(upcast && v.is_floating_point() ? v.to(at::kDouble) : v), k);
  ex.begin_forward();
  std::vector<Tensor> outs = r.forward(s, in);
  ForwardResult res;
  for (const auto& c : s.finish(outs)) res.outputs.push_back(unwrap(c).contiguous().cpu());
  res.graph_count = s.graph_count();
  res.breaks = s.breaks();
  res.graph_hashes = s.graph_hashes();
  return res;
}

}  // namespace fg
