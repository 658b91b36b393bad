// What a run is checked for before any rank starts (harness/run/run.h:
// validate_spec): the repro, the nodes, the world size, the host memory it
// is estimated to need, the proofs it reads, the files it writes.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "fusion/errors.h"
#include "fusion/fastpaths/catalog.h"
#include "harness/record/proofs.h"
#include "harness/run/run.h"
#include "kernels/cpu/runtime.h"
#include "repros/registry.h"

namespace fg {

namespace {

double g_max_memory_gib = 0;  // --max-memory; 0: the machine's MemTotal

std::string gib(int64_t bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", static_cast<double>(bytes) / (1024.0 * 1024 * 1024));
  return b;
}

// The machine's host memory (MemTotal), or 0 when it cannot be read: a
// limit that is the same from one run to the next, whatever else runs
// (MemAvailable moves with the load, and a verdict must not).
int64_t memory_total() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == "MemTotal:") return kb * 1024;
  return 0;
}

// A run whose estimate (estimate_memory) is past the limit is refused
// before a rank starts: the OOM killer would take a rank ("killed by
// signal 9", no word of memory) or the launcher itself. cpu only: on cuda
// the values live on the GPU.
void check_memory(const Repro& r, const RunSpec& spec) {
  if (spec.backend != Backend::Cpu) return;
  const int64_t limit = g_max_memory_gib > 0 ? static_cast<int64_t>(g_max_memory_gib * 1024 * 1024 * 1024)
                                             : memory_total();
  if (limit <= 0) return;
  const MemoryEstimate m = estimate_memory(r, spec.world, spec.local_world());
  if (m.total <= limit) return;
  user_error(r.name + " at world size " + std::to_string(spec.world) + " needs an estimated " + gib(m.total) +
             " GiB of host memory (" + std::to_string(spec.local_world()) + " rank(s) x (" + gib(m.input_bytes) +
             " GiB of inputs, with eager's and the fp64 reference's copies, + " + gib(m.value_bytes) +
             " GiB of values)), more than the " + gib(limit) + " GiB " +
             (g_max_memory_gib > 0 ? std::string("--max-memory allows") : "this machine has (MemTotal)") +
             ": make the repro smaller, or give --max-memory GIB where the estimate is known to be high");
}

}  // namespace

void set_max_memory_gib(double gib) {
  if (!(gib >= 0) || gib > 1e6) user_error("--max-memory " + std::to_string(gib) + ": GiB of host memory, above 0");
  g_max_memory_gib = gib;
}

void validate_spec(const RunSpec& spec) {
  auto repros = all_repros(spec.fg_dirs);
  const Repro* r = find_repro(repros, spec.repro);
  if (!r) user_error("unknown repro '" + spec.repro + "'; known repros: " + repro_names(repros) + " (see `fusegate list`)");
  if (spec.nnodes < 1) user_error("--nnodes " + std::to_string(spec.nnodes) + ": at least 1");
  if (spec.node_rank < 0 || spec.node_rank >= spec.nnodes)
    user_error("--node-rank " + std::to_string(spec.node_rank) + " is not a node of --nnodes " +
               std::to_string(spec.nnodes) + " (0.." + std::to_string(spec.nnodes - 1) + ")");
  if (spec.world % spec.nnodes != 0)
    user_error("--world-size " + std::to_string(spec.world) + " is not a multiple of --nnodes " +
               std::to_string(spec.nnodes) + " (each node starts world size / nnodes ranks)");
  if (spec.master_port < 0 || spec.master_port > 65535)
    user_error("--master-port " + std::to_string(spec.master_port) + " is not a TCP port");
  if (spec.nnodes > 1 && spec.master_port == 0)
    user_error("--nnodes " + std::to_string(spec.nnodes) + " needs --master-port P: the port node 0 serves the "
               "store on, the same on every node");
  if (spec.backend == Backend::Cuda && !cuda_backend_built())
    cannot_test("--backend cuda: this fusegate was built against a LibTorch without CUDA; build it against a CUDA "
                "LibTorch (python3 -c 'import torch;print(torch.utils.cmake_prefix_path)') on a machine with a GPU");
  check_world_size(*r, spec.world);
  check_memory(*r, spec);
  if (spec.timeout_s < 1) user_error("--timeout must be at least 1 second");
  if (spec.iters < 1) user_error("--iters must be at least 1 (the timed forwards)");
  if (spec.warmup_ms < 0 || spec.warmup_ms > 60000)
    user_error("--warmup-ms must be from 0 to 60000 (milliseconds of untimed forwards before the timed ones), not " +
               std::to_string(spec.warmup_ms));
  // a malformed proof is bad input before any rank starts, as a golden is
  // (ab and prove force their fast path and read no proof: prove rewrites one)
  if (!spec.golden_dir.empty() && spec.ab_fast_path.empty())
    for (const auto& f : fast_path_catalog())
      for (const auto& path : proof_paths(spec.golden_dir, backend_name(spec.backend), f.name))
        load_proof(path, backend_name(spec.backend), f.name);
  if (!spec.profile.empty()) {
    if (spec.backend != Backend::Cuda) user_error("--profile times device kernels: it needs --backend cuda");
    std::filesystem::path dir = std::filesystem::absolute(spec.profile).parent_path();
    if (!std::filesystem::is_directory(dir) || ::access(dir.c_str(), W_OK) != 0)
      user_error("--profile " + spec.profile + ": folder " + dir.string() + " does not exist or is not writable");
  }
  if (!spec.save_tensors.empty()) {
    std::filesystem::path dir = std::filesystem::absolute(spec.save_tensors).parent_path();
    if (!std::filesystem::is_directory(dir) || ::access(dir.c_str(), W_OK) != 0)
      user_error("--save-tensors " + spec.save_tensors + ": folder " + dir.string() +
                 " does not exist or is not writable (the tensors' folder is made inside it)");
  }
}

}  // namespace fg
