// Which fast paths a run may take: their proofs as this tree, compiler and
// GPU read them (harness/run/run.h). No LibTorch: explain reads them too,
// in the front binary (harness/cli/entry.cpp).
#include <string>
#include <vector>

#include "fusion/fastpaths/catalog.h"
#include "harness/record/proofs.h"
#include "harness/run/run.h"
#include "kernels/cpu/jit.h"
#include "kernels/fastpaths/sources.h"

namespace fg {

FastPathProofs fast_path_proofs(const std::string& golden_dir, Backend backend, int world, const std::string& gpu) {
  FastPathProofs p;
  if (golden_dir.empty()) return p;
  std::vector<std::string> names;
  for (const auto& f : fast_path_catalog()) names.push_back(f.name);
  auto states = read_proofs(golden_dir, backend_name(backend), world, names,
                            [&](const std::string& n) { return fast_path_source_hash(n, backend); }, gpu,
                            backend == Backend::Cpu ? jit_compiler_version() : "");
  for (const auto& [name, st] : states) {
    if (!st.invalid.empty()) p.invalid[name] = st.invalid;
    else if (st.present) p.shape_classes[name] = st.shape_classes;
  }
  return p;
}

}  // namespace fg
