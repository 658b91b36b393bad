#include "harness/run/ab_rank.h"

#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "fusion/fastpaths/catalog.h"
#include "harness/record/files.h"
#include "harness/run/forward.h"
#include "harness/run/liveness.h"
#include "harness/tools/ab_stats.h"
#include "kernels/cpu/runtime.h"
#include "kernels/fastpaths/sources.h"

namespace fg {

// `fusegate ab`, one rank: the generic path, the fast path (forced) and the
// fp64 reference on the same inputs; the comparison goes into the record.
int ab_rank(const RunSpec& spec, const Repro& r, Collectives& coll, int rank,
            const std::map<std::string, at::Tensor>& inputs, const std::set<std::string>& replicated,
            const std::string& out_path) {
  const std::string& name = spec.ab_fast_path;
  progress(out_path, "A/B: generic path");
  AtenExecutor gen(&coll, rank, spec.world, spec.fusion, false, spec.backend);
  gen.set_replicated_inputs(replicated);
  gen.set_fast_paths(parse_fast_paths("none"), {});
  // each run gets its own copy: a repro that writes its inputs (copy_) must
  // not hand the next run other values
  auto fresh = [&] {
    std::map<std::string, at::Tensor> c;
    for (const auto& [k, v] : inputs) c[k] = v.clone();
    return c;
  };
  ForwardResult g = forward(r, spec.mode, gen, fresh(), false);
  const size_t generic_launches = gen.launches().size();
  progress(out_path, "A/B: fast path");
  AtenExecutor fast(&coll, rank, spec.world, spec.fusion, false, spec.backend);
  fast.set_replicated_inputs(replicated);
  FastPathProofs forced;
  forced.forced = {name};
  FastPathSelection sel = parse_fast_paths(name);
  fast.set_fast_paths(sel, forced);
  ForwardResult f = forward(r, spec.mode, fast, fresh(), false);
  progress(out_path, "A/B: fp64 reference");
  AtenExecutor ref(&coll, rank, spec.world, spec.fusion, /*upcast_fp64=*/true, spec.backend);
  ForwardResult x = forward(r, Mode::Eager, ref, fresh(), true);

  record::AbRankRecord rec;
  rec.rank = rank;
  rec.fast_paths = record::part_from_json<std::vector<record::FastPathStatus>>(
      fast_path_statuses(fast.graphs_run(), sel, forced.forced));
  rec.kernel_count_generic = static_cast<long long>(generic_launches);
  rec.kernel_count_fast = static_cast<long long>(fast.launches().size());
  rec.source_hash = fast_path_source_hash(name, spec.backend);
  rec.ab.emplace();
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    std::string out = i < r.outputs.size() ? r.outputs[i] : "out" + std::to_string(i);
    rec.ab->push_back(ab_compare(out, r.replicated_outputs, g.outputs[i], f.outputs[i], x.outputs[i]));
  }
  write_atomic(out_path, record::part_to_json(rec).dump(2) + "\n");
  progress(out_path, "done");
  coll.barrier();
  return 0;
}

}  // namespace fg
