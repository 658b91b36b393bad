#include "harness/record/proofs.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "fusion/errors.h"
#include "harness/record/files.h"

namespace fg {

using nlohmann::json;

std::string gpu_folder(const std::string& gpu) {
  std::string f = gpu;
  for (char& c : f)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-') c = '_';
  return f;
}

std::string proof_path(const std::string& golden_root, const std::string& backend, const std::string& name,
                       const std::string& gpu) {
  std::filesystem::path dir = std::filesystem::path(golden_root) / "proofs" / backend;
  if (backend == "cuda") {
    FG_CHECK(!gpu.empty(), "a cuda proof's path needs its GPU model");
    dir /= gpu_folder(gpu);
  }
  return (dir / (name + ".json")).string();
}

std::vector<std::string> proof_paths(const std::string& golden_root, const std::string& backend,
                                     const std::string& name) {
  const std::filesystem::path dir = std::filesystem::path(golden_root) / "proofs" / backend;
  std::vector<std::string> out;
  if (backend != "cuda") {
    out.push_back((dir / (name + ".json")).string());
    return out;
  }
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return out;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.is_directory() && std::filesystem::exists(e.path() / (name + ".json")))
      out.push_back((e.path() / (name + ".json")).string());
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

std::string hint_for(const std::string& backend, const std::string& name) {
  return "restore it from git or re-prove with: fusegate prove --fast-path " + name + " --world-size N..." +
         (backend == "cpu" ? "" : " --backend " + backend);
}

// Why a proof that reads well no longer holds here, or "": its kernel source
// changed (hash: what this tree compiles), on cuda the GPU model differs
// (gpu "" skips it), on cpu the host compiler differs (compiler "" skips it).
// The one judgment of a run (read_proofs) and of `fusegate proofs`.
std::string why_invalid(const json& p, const std::string& hash, const std::string& backend, const std::string& gpu,
                        const std::string& compiler) {
  if (p["source_hash"] != hash) return "source changed";
  if (backend == "cuda" && !gpu.empty() && p["env"]["gpu"] != gpu)
    return "GPU changed: proved on " + p["env"]["gpu"].get<std::string>() + ", this is " + gpu;
  if (backend == "cpu" && !compiler.empty() && p["env"].contains("compiler") && p["env"]["compiler"] != compiler)
    return "compiler changed: proved with " + p["env"]["compiler"].get<std::string>() + ", this is " + compiler;
  return "";
}

}  // namespace

std::optional<json> load_proof(const std::string& path, const std::string& backend, const std::string& name) {
  const std::string hint = hint_for(backend, name);
  std::optional<json> j = read_json_file(path, "proof", hint);
  if (!j) return j;
  auto bad = [&](const std::string& what) { user_error(path + ": error: malformed proof: " + what + "; " + hint); };
  if (!j->is_object()) bad("not a JSON object");
  auto need = [&](const char* key, bool ok, const char* want) {
    if (!j->contains(key)) bad(std::string("missing key '") + key + "'");
    if (!ok) bad(std::string("'") + key + "' must be " + want);
  };
  need("schema", j->contains("schema") && (*j)["schema"].is_number_integer(), "an integer");
  if ((*j)["schema"].get<int>() != kProofSchema)
    bad("schema " + (*j)["schema"].dump() + " (this fusegate reads schema " + std::to_string(kProofSchema) + ")");
  need("fast_path", j->contains("fast_path") && (*j)["fast_path"].is_string(), "a string");
  if ((*j)["fast_path"] != name) bad("it proves '" + (*j)["fast_path"].get<std::string>() + "', its file name says '" + name + "'");
  need("backend", j->contains("backend") && (*j)["backend"].is_string(), "a string");
  if ((*j)["backend"] != backend) bad("its backend is '" + (*j)["backend"].get<std::string>() + "', its folder says '" + backend + "'");
  need("source_hash", j->contains("source_hash") && (*j)["source_hash"].is_string(), "a string");
  need("env", j->contains("env") && (*j)["env"].is_object(), "an object");
  if (backend == "cuda" && !((*j)["env"].contains("gpu") && (*j)["env"]["gpu"].is_string()))
    bad("'env' names no 'gpu' (a cuda proof holds for one GPU model)");
  if (backend == "cuda") {
    const std::string gpu = (*j)["env"]["gpu"].get<std::string>();
    const std::string folder = std::filesystem::path(path).parent_path().filename().string();
    if (folder != gpu_folder(gpu))
      bad("it was proved on " + gpu + ", whose proofs belong in the folder " + gpu_folder(gpu) + ", not " + folder);
  }
  need("world_sizes", j->contains("world_sizes") && (*j)["world_sizes"].is_array() && !(*j)["world_sizes"].empty(),
       "a non-empty array");
  std::set<int> worlds;
  for (const auto& w : (*j)["world_sizes"]) {
    if (!w.is_number_integer() || w.get<int>() < 1) bad("'world_sizes' holds " + w.dump() + ", not a world size");
    worlds.insert(w.get<int>());
  }
  need("cases", j->contains("cases") && (*j)["cases"].is_array() && !(*j)["cases"].empty(), "a non-empty array");
  std::set<int> seen;
  size_t i = 0;
  for (const auto& c : (*j)["cases"]) {
    const std::string at = "cases[" + std::to_string(i++) + "]";
    if (!c.is_object()) bad(at + " is not an object");
    for (const char* k : {"repro", "shape_class", "verdict", "rule"})
      if (!c.contains(k) || !c[k].is_string()) bad(at + " lacks the string '" + k + "'");
    if (!c.contains("world_size") || !c["world_size"].is_number_integer()) bad(at + " lacks the integer 'world_size'");
    if (!worlds.count(c["world_size"].get<int>()))
      bad(at + " ran at world size " + c["world_size"].dump() + ", which 'world_sizes' does not list");
    if (c["verdict"] != "pass") bad(at + " did not pass (" + c["verdict"].get<std::string>() + "): a proof holds only passes");
    // a case vouches for what it compared: every rank's outputs
    const int w = c["world_size"].get<int>();
    if (!c.contains("outputs") || !c["outputs"].is_array() || c["outputs"].empty())
      bad(at + " compared no outputs");
    std::set<int> ranks;
    for (const auto& o : c["outputs"]) {
      if (!o.is_object() || !o.contains("rank") || !o["rank"].is_number_integer() || !o.contains("rel_l2_fast") ||
          !o["rel_l2_fast"].is_number() || !o.contains("identical") || !o["identical"].is_boolean())
        bad(at + " holds an output without its rank, rel_l2_fast and identical");
      ranks.insert(o["rank"].get<int>());
      if (c["rule"].get<std::string>().rfind("identical digests", 0) == 0 && !o["identical"].get<bool>())
        bad(at + " passed by identical digests with an output that is not identical");
    }
    if (static_cast<int>(ranks.size()) != w || *ranks.begin() != 0 || *ranks.rbegin() != w - 1)
      bad(at + " ran at world size " + std::to_string(w) + " but holds outputs of " + std::to_string(ranks.size()) +
          " ranks");
    seen.insert(w);
  }
  for (int w : worlds)
    if (!seen.count(w)) bad("world size " + std::to_string(w) + " is listed but no case ran at it");
  return j;
}

std::map<std::string, ProofState> read_proofs(const std::string& root, const std::string& backend, int world,
                                              const std::vector<std::string>& names,
                                              const std::function<std::string(const std::string&)>& hash_of,
                                              const std::string& gpu, const std::string& compiler) {
  std::map<std::string, ProofState> out;
  for (const auto& name : names) {
    ProofState& st = out[name];
    if (backend == "cuda") {
      const std::vector<std::string> all = proof_paths(root, backend, name);
      if (!gpu.empty() && !std::filesystem::exists(proof_path(root, backend, name, gpu))) {
        // proved on other models only
        std::string on;
        for (const auto& path : all) {
          std::optional<json> p = load_proof(path, backend, name);
          on += (on.empty() ? "" : ", ") + (*p)["env"]["gpu"].get<std::string>();
        }
        if (!on.empty()) {
          st.present = true;
          st.invalid = "GPU changed: proved on " + on + ", this is " + gpu;
        }
        continue;
      }
      if (gpu.empty()) {
        // no device (explain): any model's proof whose source still holds.
        // Stale only when none holds: a current proof on one model that
        // lacks this world size leaves the fast path unproven here, and
        // another model's stale file must not say otherwise.
        bool stale = false, current = false;
        for (const auto& path : all) {
          std::optional<json> p = load_proof(path, backend, name);
          st.present = true;
          if (!why_invalid(*p, hash_of(name), backend, "", "").empty()) {
            stale = true;
            continue;
          }
          current = true;
          for (const auto& c : (*p)["cases"])
            if (c["world_size"].get<int>() == world) st.shape_classes.insert(c["shape_class"].get<std::string>());
        }
        if (stale && !current) st.invalid = "source changed";
        continue;
      }
    }
    std::optional<json> p = load_proof(proof_path(root, backend, name, gpu), backend, name);
    if (!p) continue;
    st.present = true;
    st.invalid = why_invalid(*p, hash_of(name), backend, gpu, compiler);
    for (const auto& c : (*p)["cases"])
      if (c["world_size"].get<int>() == world) st.shape_classes.insert(c["shape_class"].get<std::string>());
  }
  return out;
}

std::vector<ProofEntry> proof_inventory(const std::string& root, const std::string& backend,
                                        const std::vector<std::string>& names,
                                        const std::function<std::string(const std::string&)>& hash_of,
                                        const std::string& compiler) {
  std::vector<ProofEntry> out;
  const std::filesystem::path dir = std::filesystem::path(root) / "proofs" / backend;
  // cuda: the model folders; cpu: the one folder
  std::vector<std::filesystem::path> folders;
  std::error_code ec;
  if (backend == "cuda") {
    if (std::filesystem::is_directory(dir, ec))
      for (const auto& e : std::filesystem::directory_iterator(dir, ec))
        if (e.is_directory()) folders.push_back(e.path());
    std::sort(folders.begin(), folders.end());
  } else {
    folders.push_back(dir);
  }
  for (const auto& folder : folders) {
    std::vector<ProofEntry> rows;
    std::string model;  // what the folder's proofs say they ran on
    for (const auto& name : names) {
      ProofEntry e;
      e.fast_path = name;
      e.backend = backend;
      e.status = "none";
      const std::string path = (folder / (name + ".json")).string();
      if (std::optional<json> p = load_proof(path, backend, name)) {
        if (backend == "cuda") model = (*p)["env"]["gpu"].get<std::string>();
        // the folder is its model's (load_proof checks): no GPU to compare
        const std::string why = why_invalid(*p, hash_of(name), backend, "", compiler);
        e.status = why.empty() ? "current" : "stale: " + why;
        for (const auto& w : (*p)["world_sizes"]) e.worlds.insert(w.get<int>());
        e.cases = static_cast<int>((*p)["cases"].size());
        for (const auto& k : (*p)["cases"]) e.shape_classes.insert(k["shape_class"].get<std::string>());
      }
      rows.push_back(std::move(e));
    }
    if (backend == "cuda") {
      if (model.empty()) continue;  // a folder with no proof of any fast path
      for (auto& e : rows) e.gpu = model;
    }
    for (auto& e : rows) out.push_back(std::move(e));
  }
  return out;
}

}  // namespace fg
