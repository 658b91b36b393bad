// Proofs that a fast path is TP-correct: golden/proofs/<backend>/<name>.json,
// written by `fusegate prove` (harness/tools/ab.cpp) after the A/B of the fast path
// passed on every repro it matches at every world size asked for. A proof
// covers exactly the (world size, shape class) pairs it ran, on its backend;
// it is invalid when the fast path's kernel source no longer hashes to the
// proof's `source_hash`, (cuda) when the GPU model differs, or (cpu) when
// the host compiler that builds the kernels differs. Format:
// harness/RECORD.md. Proofs are found beside the goldens (--golden-dir).
#pragma once
#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace fg {

constexpr int kProofSchema = 1;

// Where proofs live: <golden_root>/proofs/cpu/NAME.json; a cuda proof holds
// for one GPU model, so each model has its own folder,
// <golden_root>/proofs/cuda/<gpu_folder(model)>/NAME.json, and proving on one
// model leaves another's proof alone. gpu_folder("NVIDIA H200") is
// "NVIDIA_H200" (every character but letters, digits, '.' and '-' as '_').
std::string gpu_folder(const std::string& gpu);
std::string proof_path(const std::string& golden_root, const std::string& backend, const std::string& name,
                       const std::string& gpu = "");
// Every proof file of `name` on `backend` under `golden_root` (cuda: one per
// GPU folder that holds one), in folder order.
std::vector<std::string> proof_paths(const std::string& golden_root, const std::string& backend,
                                     const std::string& name);

// nullopt when absent. A proof that cannot be read, is not JSON, or is not a
// proof of `name` on `backend` (missing or mistyped keys, a case outside its
// world sizes, a case that did not pass) is a UserError naming path[:line:col]
// and how to recover. Every case must hold its ranks' compared outputs.
std::optional<nlohmann::json> load_proof(const std::string& path, const std::string& backend,
                                         const std::string& name);

// What a fast path's proof allows at one world size.
struct ProofState {
  bool present = false;
  std::string invalid;                   // "" or why the proof no longer holds
  std::set<std::string> shape_classes;   // covered at this world size
};

// For every name: its proof under `root` for `backend`, checked against the
// source hash the fast path has now (`hash_of(name)`), on cuda the GPU model
// (`gpu`: the proof in its folder; proofs of other models only say "GPU
// changed"), on cpu the host compiler that builds the kernels (`compiler`).
// "" skips a check: on cuda without a device (explain) any model's proof
// whose source hash holds counts.
std::map<std::string, ProofState> read_proofs(const std::string& root, const std::string& backend, int world,
                                              const std::vector<std::string>& names,
                                              const std::function<std::string(const std::string&)>& hash_of,
                                              const std::string& gpu, const std::string& compiler = "");

// One line of `fusegate proofs`: a fast path's proof file on one backend
// (cuda: one GPU model folder under proofs/cuda; every folder that holds
// some fast path's proof is listed for every fast path, so a model that
// lacks one shows it), as this tree would take it.
struct ProofEntry {
  std::string fast_path, backend;
  std::string gpu;             // cuda: the folder's model (its proofs' env.gpu); folders with none are left out
  std::string status;          // "current", "stale: <why>" (read_proofs' reason: source or compiler changed), "none"
  std::set<int> worlds;        // what the file covers (present files)
  int cases = 0;
  std::set<std::string> shape_classes;
};
// Every fast path in `names` on `backend` ("cpu" or "cuda") under `root`,
// checked against `hash_of(name)` (the source this tree compiles) and, on
// cpu, the host `compiler` ("" skips it). A malformed file is a UserError
// naming it, as everywhere a proof is read.
std::vector<ProofEntry> proof_inventory(const std::string& root, const std::string& backend,
                                        const std::vector<std::string>& names,
                                        const std::function<std::string(const std::string&)>& hash_of,
                                        const std::string& compiler = "");

}  // namespace fg
