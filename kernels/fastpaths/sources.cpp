#include "kernels/fastpaths/sources.h"

#include <xxhash.h>

#include <cstdio>

#include "fusion/codegen/cpp_printer.h"
#include "fusion/codegen/cuda_printer.h"
#include "fusion/errors.h"
#include "fusion/fastpaths/catalog.h"
#include "fusion/fault.h"

namespace fg {

namespace {

std::string hex64(uint64_t h) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(h));
  return b;
}

}  // namespace

std::string fast_path_source(const std::string& name, Backend backend) {
  const FastPathSpec* spec = find_fast_path(name);
  if (!spec) internal_error("no fast path named " + name);
  const std::string file = spec->file();
  std::string src = backend == Backend::Cpu ? host_kernel_prelude() + embedded_fast_path_source(file, "host")
                                            : cuda_kernel_prelude() + embedded_fast_path_source(file, "cuda");
  // an edit of NAME's file: every fast path that runs that file sees it
  const std::string edited = fault_argument("fastpath_edit");
  const FastPathSpec* e = edited.empty() ? nullptr : find_fast_path(edited);
  if (e && e->file() == file)
    src += "\n// edited (FUSEGATE_FAULT=fastpath_edit:" + edited + ")\n";
  return src;
}

std::string fast_path_source_hash(const std::string& name, Backend backend) {
  const std::string s = fast_path_source(name, backend);
  return hex64(XXH64(s.data(), s.size(), 0));
}

}  // namespace fg
