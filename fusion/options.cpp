#include "fusion/options.h"

#include "fusion/errors.h"

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

}  // namespace fg
