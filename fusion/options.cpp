#include "fusion/options.h"

#include <algorithm>
#include <sstream>

#include "fusion/errors.h"
#include "fusion/fastpaths/catalog.h"

namespace fg {

const char* backend_name(Backend b) { return b == Backend::Cuda ? "cuda" : "cpu"; }

Backend parse_backend(const std::string& s) {
  for (Backend b : {Backend::Cpu, Backend::Cuda})
    if (s == backend_name(b)) return b;
  user_error("unknown backend '" + s + "': use cpu or cuda");
}

Mode parse_mode(const std::string& s) {
  if (s == "A" || s == "eager") return Mode::Eager;
  if (s == "B" || s == "compiled-disabled") return Mode::CompiledDisabled;
  if (s == "C" || s == "compiled") return Mode::Compiled;
  user_error("unknown mode '" + s + "': use A, B or C");
}

FusionPolicy parse_fusion(const std::string& s) {
  for (FusionPolicy p : {FusionPolicy::Default, FusionPolicy::MaxAutotune, FusionPolicy::None})
    if (s == policy_name(p)) return p;
  user_error("unknown fusion policy '" + s + "': use default, max-autotune or none");
}

bool FastPathSelection::asks(const std::string& name) const {
  switch (kind) {
    case Kind::None: return false;
    case Kind::Proven: case Kind::All: return true;
    case Kind::Named: return std::find(names.begin(), names.end(), name) != names.end();
  }
  return false;
}

std::string FastPathSelection::text() const {
  switch (kind) {
    case Kind::None: return "none";
    case Kind::Proven: return "proven";
    case Kind::All: return "all";
    case Kind::Named: break;
  }
  std::string r;
  for (const auto& n : names) r += (r.empty() ? "" : ",") + n;
  return r;
}

FastPathSelection parse_fast_paths(const std::string& s) {
  FastPathSelection sel;
  if (s == "none") sel.kind = FastPathSelection::Kind::None;
  else if (s == "proven") sel.kind = FastPathSelection::Kind::Proven;
  else if (s == "all") sel.kind = FastPathSelection::Kind::All;
  else {
    sel.kind = FastPathSelection::Kind::Named;
    std::stringstream ss(s);
    std::string name;
    while (std::getline(ss, name, ',')) {
      if (name.empty()) continue;
      if (!find_fast_path(name))
        user_error("--fast-paths: unknown fast path '" + name + "'; use none, proven, all or names among: " +
                   fast_path_names());
      sel.names.push_back(name);
    }
    if (sel.names.empty()) user_error("--fast-paths '" + s + "': use none, proven, all or fast path names");
    std::sort(sel.names.begin(), sel.names.end());
    sel.names.erase(std::unique(sel.names.begin(), sel.names.end()), sel.names.end());
  }
  return sel;
}

}  // namespace fg
