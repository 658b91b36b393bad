#include "harness/run/environment.h"

#include <ATen/Version.h>
#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <torch/version.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

#include "harness/record/golden_env.h"
#include "kernels/cpu/jit.h"
#include "kernels/cpu/runtime.h"

namespace fg {

namespace {

// LibTorch's own account of its build (at::show_config): the line that says
// which CPU kernels ATen dispatches to is cut out and returned apart, as it
// is chosen at run time (ATEN_CPU_CAPABILITY, or ATen's pick for this CPU);
// the rest is fixed when LibTorch is built (compiler, flags, BLAS, oneDNN,
// on a CUDA build its CUDA, cuDNN and such), and is hashed.
struct TorchConfig {
  std::string build_hash;
  std::string capability = "unknown";
};

TorchConfig torch_config() {
  TorchConfig c;
  std::istringstream in(at::show_config());
  std::string kept;
  static const std::string kCapability = "CPU capability usage: ";
  for (std::string line; std::getline(in, line);) {
    const size_t at = line.find(kCapability);
    if (at != std::string::npos) {
      c.capability = line.substr(at + kCapability.size());
      continue;
    }
    kept += line + "\n";
  }
  c.build_hash = hash_text(nlohmann::json(kept).dump());  // the text as a JSON string, as it always was
  return c;
}

// oneDNN as LibTorch loaded it: its version and the instruction set it
// generates code for here (dnnl_get_effective_cpu_isa: DNNL_MAX_CPU_ISA or
// the CPU's best; the number is oneDNN's dnnl_cpu_isa_t). Asked through the
// library's exported C functions, as the process has no oneDNN headers.
std::string onednn() {
  struct Version {
    int major, minor, patch;
    const char* hash;
  };
  using VersionFn = const Version* (*)();
  using IsaFn = int (*)();
  auto version = reinterpret_cast<VersionFn>(dlsym(RTLD_DEFAULT, "dnnl_version"));
  auto isa = reinterpret_cast<IsaFn>(dlsym(RTLD_DEFAULT, "dnnl_get_effective_cpu_isa"));
  if (!version || !isa) return "not visible (none loaded, or linked into LibTorch without its symbols)";
  const Version* v = version();
  char buf[96];
  std::snprintf(buf, sizeof buf, "%d.%d.%d isa 0x%x", v->major, v->minor, v->patch, isa());
  return buf;
}

// The BLAS that answers sgemm_ in this process (Debian's alternatives pick
// the reference BLAS, OpenBLAS, BLIS, ...), by its file; OpenBLAS with the
// kernels it chose for this CPU (OPENBLAS_CORETYPE or its own pick: its
// build configuration names the core).
std::string blas() {
  void* f = dlsym(RTLD_DEFAULT, "sgemm_");
  Dl_info where{};
  if (!f || !dladdr(f, &where) || !where.dli_fname) return "sgemm_ not visible";
  std::string file = where.dli_fname;
  if (char* real = realpath(where.dli_fname, nullptr)) {
    file = real;
    std::free(real);
  }
  std::string out = file.substr(file.rfind('/') + 1);
  using TextFn = char* (*)();
  // "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64"
  if (auto config = reinterpret_cast<TextFn>(dlsym(RTLD_DEFAULT, "openblas_get_config")))
    out += std::string(" (") + config() + ")";
  return out;
}

// The CPU from /proc/cpuinfo: "vendor family F model M" and its vector and
// matrix extensions that a library dispatches on, in a fixed order.
void cpu_identity(std::string* cpu, std::string* isa) {
#if defined(__aarch64__)
  *isa = "aarch64";
#else
  *isa = "x86_64";
#endif
  std::ifstream in("/proc/cpuinfo");
  std::string vendor, family, model, flags;
  for (std::string line; std::getline(in, line);) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) {
      if (!flags.empty()) break;  // the first processor's block is enough
      continue;
    }
    std::string key = line.substr(0, colon);
    while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.pop_back();
    const std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (key == "vendor_id") vendor = value;
    else if (key == "cpu family") family = value;
    else if (key == "model") model = value;
    else if (key == "flags" || key == "Features") flags = " " + value + " ";
  }
  *cpu = (vendor.empty() ? std::string("unknown") : vendor) + " family " + family + " model " + model;
  for (const char* f : {"avx", "avx2", "fma", "f16c", "avx512f", "avx512dq", "avx512bw", "avx512vl", "avx512_vnni",
                        "avx512_bf16", "avx512_fp16", "avx_vnni", "amx_tile", "amx_bf16", "amx_int8", "asimd", "sve"})
    if (flags.find(std::string(" ") + f + " ") != std::string::npos) *isa += "+" + std::string(f);
}

}  // namespace

std::string aten_capability_problem() {
  const char* v = std::getenv("ATEN_CPU_CAPABILITY");
  if (!v || !*v) return "";
  const std::string want = v;
  // the CPU features each level's kernels are built for (ATen's
  // cpu/vec: avx2 with FMA; avx512 with its F, BW, VL and DQ subsets)
  std::vector<const char*> needs;
  if (want == "avx2") needs = {"avx2", "fma"};
  else if (want == "avx512") needs = {"avx512f", "avx512bw", "avx512vl", "avx512dq"};
  else return "";
  std::string cpu, isa;
  cpu_identity(&cpu, &isa);
  std::string missing;
  for (const char* f : needs)
    if ((isa + "+").find(std::string("+") + f + "+") == std::string::npos) missing += (missing.empty() ? "" : ", ") + std::string(f);
  if (missing.empty()) return "";
  return "ATEN_CPU_CAPABILITY=" + want + " asks LibTorch for kernels this CPU cannot run (" + cpu + ", " + isa +
         ": no " + missing + "); every rank would die of an illegal instruction. Unset it, or set one this CPU has "
         "(default" + std::string(isa.find("+avx2") != std::string::npos ? ", avx2" : "") + ")";
}

record::Environment environment(Backend backend) {
  const TorchConfig torch = torch_config();
  record::Environment e = {{"backend", backend_name(backend)},
                           {"libtorch", std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) +
                                            "." + std::to_string(TORCH_VERSION_PATCH)},
                           {"libtorch_build", torch.build_hash},
                           // the host compiler: the cuda backend builds host-side fast paths with it too
                           {"compiler", jit_compiler_version()}};
  // every input is drawn on the cpu, by ATen's kernels (a vectorized
  // normal_ rounds otherwise than the default one), on either backend
  e["aten_capability"] = torch.capability;
  if (backend == Backend::Cuda) {
    e["gpu"] = cuda_device_name();
    for (const auto& [name, version] : cuda_versions()) e[name] = version;
  } else {
    std::string cpu, isa;
    cpu_identity(&cpu, &isa);
    e["onednn"] = onednn();
    e["blas"] = blas();
    e["compiler_flags"] = jit_compiler_flags();
    e["libc"] = std::string("glibc ") + gnu_get_libc_version();
    e["cpu"] = cpu;
    e["isa"] = isa;
  }
  e["fingerprint"] = environment_fingerprint(e);
  return e;
}

}  // namespace fg
