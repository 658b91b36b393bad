#include "harness/run/forward.h"

#include <xxhash.h>

#include <cmath>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/rand.h>
#include <ATen/ops/randint.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/zeros.h>
#include <nlohmann/json.hpp>

#include "fusion/errors.h"
#include "harness/record/files.h"
#include "kernels/cpu/aten_ops.h"

namespace fg {

namespace {

uint64_t seed_of(const std::string& repro, const std::string& input) {
  std::string k = repro + "/" + input;
  return XXH64(k.data(), k.size(), 0);
}

}  // namespace

at::Tensor make_input(const std::string& repro, const InputSpec& s, int rank, int world) {
  auto gen = at::detail::createCPUGenerator(seed_of(s.seed.empty() ? repro : s.seed, s.name));
  const auto opts = at::TensorOptions().dtype(to_aten(s.dtype));
  const bool integral = !is_floating(s.dtype);
  at::Tensor full;
  switch (s.init.kind) {
    case Init::Normal:
      if (integral)  // indices: uniform integers below max(2, std)
        full = at::randint(0, s.dtype == DType::Bool ? 2 : std::max<int64_t>(2, static_cast<int64_t>(s.init.b)),
                           s.full_shape, gen, opts);
      else
        full = (at::randn(s.full_shape, gen, at::TensorOptions().dtype(at::kFloat)).mul(s.init.b).add(s.init.a))
                   .to(to_aten(s.dtype));
      break;
    case Init::Uniform:
      if (integral)
        full = at::randint(static_cast<int64_t>(std::ceil(s.init.a)), static_cast<int64_t>(std::ceil(s.init.b)),
                           s.full_shape, gen, opts);
      else
        full = (at::rand(s.full_shape, gen, at::TensorOptions().dtype(at::kDouble)).mul(s.init.b - s.init.a).add(s.init.a))
                   .to(to_aten(s.dtype));
      break;
    case Init::Ones: full = at::ones(s.full_shape, opts); break;
    case Init::Zeros: full = at::zeros(s.full_shape, opts); break;
    case Init::Arange:
      full = (at::arange(numel(s.full_shape), at::TensorOptions().dtype(at::kDouble)).mul(s.init.b).add(s.init.a))
                 .reshape(s.full_shape)
                 .to(to_aten(s.dtype));
      break;
  }
  // a dim_order lays the (sharded) tensor out in memory in that order
  auto laid_out = [&s](const at::Tensor& t) {
    if (s.dim_order.empty()) return t.contiguous();
    std::vector<int64_t> inverse(s.dim_order.size());
    for (size_t k = 0; k < s.dim_order.size(); ++k) inverse[static_cast<size_t>(s.dim_order[k])] = static_cast<int64_t>(k);
    return t.permute(s.dim_order).contiguous().permute(inverse);
  };
  if (s.shard.replicated() || world == 1) return laid_out(full);
  const int64_t d = s.shard.dim;
  std::vector<at::Tensor> parts;
  int64_t at = 0;
  for (int64_t n : s.shard.block_sizes(full.size(d))) {
    if (n % world) user_error("input " + s.name + ": dim " + std::to_string(d) + " (" + std::to_string(n) +
                              ") does not split over " + std::to_string(world) + " ranks");
    parts.push_back(full.narrow(d, at, n).chunk(world, d)[static_cast<size_t>(rank)]);
    at += n;
  }
  return laid_out(at::cat(parts, d));
}

void save_tensors(const std::string& dir, const std::vector<std::pair<std::string, at::Tensor>>& inputs,
                  const std::vector<std::pair<std::string, at::Tensor>>& outputs) {
  nlohmann::json index = nlohmann::json::object();
  for (const auto& [role, list] : {std::pair{std::string("inputs"), &inputs}, std::pair{std::string("outputs"), &outputs}}) {
    nlohmann::json entries = nlohmann::json::array();
    for (size_t k = 0; k < list->size(); ++k) {
      const at::Tensor t = (*list)[k].second.contiguous().cpu();
      const std::string file = role.substr(0, role.size() - 1) + "_" + std::to_string(k) + ".bin";
      write_atomic(dir + "/" + file, std::string(static_cast<const char*>(t.data_ptr()), t.nbytes()));
      entries.push_back({{"name", (*list)[k].first},
                         {"dtype", dtype_name(from_aten(t.scalar_type()))},
                         {"shape", t.sizes().vec()},
                         {"file", file}});
    }
    index[role] = entries;
  }
  write_atomic(dir + "/tensors.json", index.dump(2) + "\n");
}

ForwardResult forward(const Repro& r, Mode mode, AtenExecutor& ex, const std::map<std::string, at::Tensor>& inputs,
                      bool upcast) {
  Session s(mode, &ex, r.file);
  Inputs in;
  std::map<std::string, Attrs> notes;  // shown on the captured graphs' inputs
  for (const auto& spec : r.inputs(ex.world_size())) notes[spec.name] = input_annotations(spec);
  for (const auto& [k, v] : inputs)
    in[k] = s.wrap(wrap_aten(upcast && v.is_floating_point() ? v.to(at::kDouble) : v), k, notes[k],
                   from_aten(v.scalar_type()));
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
